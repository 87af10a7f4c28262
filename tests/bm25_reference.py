"""Reference pieces for BM25 tests: a hand-checkable language pack and Lucene's BM25 formula."""

from __future__ import annotations

import math


class WhitespacePack:
    """A stand-in language pack: lowercase whitespace tokens, so scores can be computed by hand."""

    code = "xx"

    def analyze(self, text):
        return text.lower().split()

    def analyzer(self):
        return self.analyze

    def describe(self):
        return {"code": self.code, "tokenizer": "whitespace"}


def lucene_bm25(tf, dl, avgdl, df, n, k1=1.2, b=0.75):
    """Lucene >= 8 BM25 (what Elasticsearch computes): idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)),
    with idf = ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
