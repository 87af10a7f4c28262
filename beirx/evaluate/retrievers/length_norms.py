"""Lucene's one-byte document-length norms, so the embedded BM25 scores what Lucene scores.

Lucene (so Elasticsearch, OpenSearch, Anserini and Pyserini) does not keep a document's field length:
``BM25Similarity.computeNorm`` stores ``SmallFloat.intToByte4(length)``, one byte, and the scorer uses the
decoded length ``SmallFloat.byte4ToInt(norm)`` in ``k1 * (1 - b + b * dl / avgdl)``. Lengths 0-23 are
stored as themselves; above that, ``length - 24`` becomes a float with 4 significant bits, rounded down:
lengths up to 40 survive exactly, then 41 -> 40, 43 -> 42, 100 -> 96, 1000 -> 984. ``avgdl`` stays exact
(sum of lengths / documents with the field). Ported from ``org.apache.lucene.util.SmallFloat`` (Lucene 8
and 9 share it; tests/test_bm25_lucene.py compares every length up to 70,000 with Lucene 8.7's).
"""

from __future__ import annotations

import numpy as np

LENGTH_NORMS = ("lucene", "exact")
"""``lucene``: one-byte norms (Lucene, Elasticsearch, OpenSearch, Anserini, Pyserini); ``exact``: the
true length (bm25s, rank_bm25; beirx's only choice before the option existed)."""

_INT_MAX = 2**31 - 1


def _long_to_int4(i: int) -> int:
    """``SmallFloat.longToInt4``: a non-negative integer as a 4-bit-mantissa float (rounded down)."""
    bits = i.bit_length()
    if bits < 4:
        return i  # subnormal: stored as is
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)  # 3 mantissa bits (the leading 1 implied), exponent


def _int4_to_long(i: int) -> int:
    """``SmallFloat.int4ToLong``: the inverse of :func:`_long_to_int4`."""
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_NUM_FREE_VALUES = 255 - _long_to_int4(_INT_MAX)  # 24: the smallest lengths are stored as themselves


def int_to_byte4(length: int) -> int:
    """``SmallFloat.intToByte4``: a field length as Lucene's norm byte (0-255, unsigned)."""
    if length < 0:
        raise ValueError(f"a length cannot be negative: {length}")
    if length < _NUM_FREE_VALUES:
        return length
    return _NUM_FREE_VALUES + _long_to_int4(length - _NUM_FREE_VALUES)


def byte4_to_int(norm: int) -> int:
    """``SmallFloat.byte4ToInt``: the length Lucene's scorer sees for a norm byte (0-255, unsigned)."""
    if norm < _NUM_FREE_VALUES:
        return norm
    return min(_NUM_FREE_VALUES + _int4_to_long(norm - _NUM_FREE_VALUES), _INT_MAX)


DECODED = np.array([byte4_to_int(n) for n in range(256)], dtype=np.int64)
"""Lucene's ``LENGTH_TABLE``: the decoded length of every norm byte, strictly increasing."""


def lucene_lengths(lengths: np.ndarray) -> np.ndarray:
    """The lengths Lucene's BM25 scores with, for an array of true lengths: each one's norm byte decoded.

    Encoding rounds down to the largest decodable length not above the true one, so a sorted search in
    :data:`DECODED` gives each norm byte (tests compare it with :func:`int_to_byte4` over every length).
    """
    return DECODED[np.searchsorted(DECODED, lengths, side="right") - 1]
