"""Vectorized construction of string columns for the generators (no Python string object per row).

A plain string column is built by concatenating *parts* row by row; each part gives, per row, a slice of
some source byte buffer (a constant literal, a word from a vocabulary, fixed-width digits, random
characters of a per-row length). Low-cardinality columns are dictionary columns (codes + values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hetdb import types as T
from hetdb.column import Column

ALPHANUMERIC = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                             dtype=np.uint8)


def plain_strings(values: Sequence[str]) -> Column:
    """A plain (offsets + chars) string Column holding ``values`` (for small vocabularies)."""
    encoded = [v.encode() for v in values]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    chars = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return Column(T.STRING, offsets=offsets, chars=chars)


def dict_column(codes: np.ndarray, values: Sequence[str] | Column) -> Column:
    """A dictionary-encoded string Column: ``codes`` (indexes into ``values``) plus the values."""
    dictionary = values if isinstance(values, Column) else plain_strings(values)
    return Column(T.STRING, data=np.ascontiguousarray(codes, dtype=np.int32), dictionary=dictionary)


@dataclass(frozen=True)
class Part:
    """Per row, ``lengths[r]`` bytes of ``buffer`` starting at ``starts[r]`` (scalars broadcast)."""

    buffer: np.ndarray
    starts: np.ndarray | int
    lengths: np.ndarray | int


def literal(text: str) -> Part:
    """The same text on every row."""
    buf = np.frombuffer(text.encode(), dtype=np.uint8)
    return Part(buf, 0, len(buf))


def word(codes: np.ndarray, vocabulary: Sequence[str] | Column) -> Part:
    """Per row, the vocabulary word ``codes[r]``."""
    vocab = vocabulary if isinstance(vocabulary, Column) else plain_strings(vocabulary)
    codes = np.asarray(codes, dtype=np.int64)
    starts = vocab.offsets[:-1][codes]
    return Part(vocab.chars, starts, vocab.offsets[1:][codes] - starts)


def digits(values: np.ndarray, width: int) -> Part:
    """Per row, ``values[r]`` (non-negative) as exactly ``width`` zero-padded decimal digits."""
    values = np.asarray(values, dtype=np.int64)
    n = len(values)
    out = np.empty((n, width), dtype=np.uint8)
    rest = values.copy()
    for k in range(width - 1, -1, -1):
        out[:, k] = (rest % 10 + 48).astype(np.uint8)
        rest //= 10
    return Part(out.reshape(-1), np.arange(n, dtype=np.int64) * width, width)


def random_chars(rng: np.random.Generator, n: int, min_len: int, max_len: int,
                 alphabet: np.ndarray = ALPHANUMERIC) -> Part:
    """Per row, ``min_len..max_len`` (uniform, inclusive) characters drawn uniformly from ``alphabet``."""
    lengths = rng.integers(min_len, max_len + 1, n)
    buf = alphabet[rng.integers(0, len(alphabet), n * max_len)]
    return Part(buf, np.arange(n, dtype=np.int64) * max_len, lengths)


def concat(n: int, parts: Sequence[Part]) -> Column:
    """A plain string Column of ``n`` rows: row r is the concatenation of every part's slice for row r."""
    lengths = [np.broadcast_to(np.asarray(p.lengths, dtype=np.int64), (n,)) for p in parts]
    row_len = np.zeros(n, dtype=np.int64)
    for ln in lengths:
        row_len += ln
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_len, out=offsets[1:])
    chars = np.empty(int(offsets[-1]), dtype=np.uint8)
    dst = offsets[:-1].copy()
    for part, ln in zip(parts, lengths):
        _copy_slices(chars, dst, part.buffer, np.broadcast_to(np.asarray(part.starts, np.int64), (n,)), ln)
        dst += ln
    return Column(T.STRING, offsets=offsets, chars=chars)


def _copy_slices(out: np.ndarray, dst: np.ndarray, src: np.ndarray, starts: np.ndarray,
                 lengths: np.ndarray) -> None:
    n = len(dst)
    if n == 0:
        return
    first = int(lengths[0])
    if np.all(lengths == first):
        # Fixed-width slices: one 2-D fancy index instead of repeat() bookkeeping.
        if first == 0:
            return
        step = np.arange(first, dtype=np.int64)
        out[(dst[:, None] + step).reshape(-1)] = src[(starts[:, None] + step).reshape(-1)]
        return
    total = int(lengths.sum())
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    before = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=before[1:])
    within = np.arange(total, dtype=np.int64) - before[row]
    out[dst[row] + within] = src[starts[row] + within]
