"""A language pair of an evaluation: the language of the queries and that of the corpus (and qrels).

One spelling everywhere — labels, file names, grid files, results: ``pl`` when queries and corpus share the
language, ``pl2en`` for Polish queries against the English corpus (cross-lingual retrieval, "queries to
corpus"). The spelling is safe in file names on every platform. Grid files written for earlier versions
used ``pl:en`` or ``pl>en``; those still parse, with a warning naming the new spelling.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from beirx.artifacts.results import language_pair
from beirx.errors import BeirxError

log = logging.getLogger(__name__)

_CODE = r"[a-z]{2,3}"
_PAIR = re.compile(rf"^(?P<query>{_CODE})(?:(?P<sep>2|:|>)(?P<corpus>{_CODE}))?$")


@dataclass(frozen=True)
class LanguagePair:
    query: str
    corpus: str

    @property
    def label(self) -> str:
        """``pl`` or ``pl2en`` (queries in ``pl``, corpus in ``en``): the results' one spelling."""
        return language_pair(self.query, self.corpus)

    @property
    def cross_lingual(self) -> bool:
        return self.query != self.corpus

    @classmethod
    def of(cls, corpus: str, query: str | None = None) -> "LanguagePair":
        return cls(query or corpus, corpus)

    @classmethod
    def parse(cls, text: str) -> "LanguagePair":
        """``pl`` or ``pl2en``; the old ``pl:en`` / ``pl>en`` with a warning."""
        match = _PAIR.match(str(text).strip().lower())
        if not match:
            raise BeirxError(f"a language must be a code like 'pl' or a pair 'QUERY2CORPUS' like 'pl2en', "
                             f"got {text!r}")
        query, sep, corpus = match["query"], match["sep"], match["corpus"]
        if sep in (":", ">"):
            log.warning("language pair %r: write it %r (queries 2 corpus); the %r spelling is deprecated",
                        text, f"{query}2{corpus}", sep)
        return cls(query, corpus or query)
