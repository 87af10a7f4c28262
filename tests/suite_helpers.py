"""A deterministic stand-in translator for suite and cost tests (registered by name in the tests that use it).

It reverses each segment's words, so every output is known. ``BEIRX_TEST_HANG_AFTER=N`` makes it write
``$BEIRX_TEST_HANG_MARK`` after N batches and then block, so a test can kill a build mid-translation at a known
point; without the variable it never blocks (and describes itself the same, so a resumed build finds the
segments the killed one committed to the translation memory).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from beirx.translate.backends.base import Translator


class WordReverser(Translator):
    name = "word-reverser"
    max_batch_size = 4
    keeps_placeholders = True

    def __init__(self, src="en", tgt="xx", model=None, **options):
        super().__init__(src, tgt, model, **options)
        self.batches = 0

    def describe(self):
        return {"backend": self.name, "model": "words-reversed", "revision": "1", "src": self.src, "tgt": self.tgt}

    def translate_batch(self, segments):
        hang_after = os.environ.get("BEIRX_TEST_HANG_AFTER")
        if hang_after is not None and self.batches >= int(hang_after):
            Path(os.environ["BEIRX_TEST_HANG_MARK"]).write_text(str(self.batches), encoding="utf-8")
            while True:  # killed here by the test
                time.sleep(1)
        self.batches += 1
        return [" ".join(reversed(s.split())) for s in segments]


class PaidWordReverser(WordReverser):
    """The same, billed like a paid API (1 USD per 1,000 characters), for the suite's cost cap."""

    name = "paid-word-reverser"
    cost_per_million_chars = 1000.0
    price_source = "a test price"

    @classmethod
    def estimate_cost(cls, characters):
        from beirx.translate.backends.http_api import estimate

        return estimate(cls, characters)
