"""LIKE middle segments searched with Horspool shifts agree with a regex reference on strings built
to trip a shift search: repeated prefixes, overlaps, multi-byte UTF-8 and '_' mixed in."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from hetdb.backend.cpu import CpuBackend

B = CpuBackend()


def _regex(pattern: str) -> re.Pattern:
    out = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.compile(out, re.DOTALL)


def _pack(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    data = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(data) + 1, np.int64)
    offsets[1:] = np.cumsum([len(d) for d in data])
    return offsets, np.frombuffer(b"".join(data), np.uint8).copy()


PATTERNS = ["%special%requests%", "%abab%", "%aab%b%", "x%ab_a%y", "%é€%ab%", "%a%a%a%", "%requests",
            "%%ab%%", "%ba%ab%ba%"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_matches_regex(pattern):
    rng = random.Random(17)
    alphabet = ["a", "b", "x", "y", "é", "€", "special", "requests", "ab", "aab"]
    strings = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    strings += ["abababx", "aab", "xaba y", "special requests", "specia requests", ""]
    offsets, chars = _pack(strings)
    got = B.like(offsets, chars, pattern).tolist()
    rx = _regex(pattern)
    want = [rx.fullmatch(s) is not None for s in strings]
    assert got == want
    assert 0 < sum(want) < len(strings)


@pytest.mark.parametrize("pattern", ["%abc%", "%abc%xy%", "%a_c%cab%", "%cab%", "%é€a%"])
def test_needle_search_across_rows_matches_regex(pattern, monkeypatch):
    """The whole-buffer needle search ('%...%' patterns): a needle cut by a row boundary, rows
    holding the needle but not the whole pattern next to rows that match, empty rows, chunks."""
    from hetdb.backend.cpu import like as like_module

    rng = random.Random(23)
    pieces = ["ab", "c", "abc", "xy", "ca", "b", "é", "€a", ""]
    strings = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(5000)]
    strings[100:104] = ["xxab", "cxx", "abc", "zzabcxy"]  # "ab|c" across a boundary, then matches
    offsets, chars = _pack(strings)
    rx = _regex(pattern)
    want = [rx.fullmatch(s) is not None for s in strings]
    assert 0 < sum(want) < len(strings)
    searched = []
    by_needle = like_module._like_by_needle

    def spy(*args):
        searched.append(pattern)
        return by_needle(*args)

    monkeypatch.setattr(like_module, "_like_by_needle", spy)
    for chunk_rows in (1 << 14, 7):  # one chunk, and many chunks cut at odd rows
        monkeypatch.setattr(like_module, "_NEEDLE_CHUNK_ROWS", chunk_rows)
        assert B.like(offsets, chars, pattern).tolist() == want
    assert searched, "the needle search was not used"
