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
