"""CPU backend string kernels against Python references (and DuckDB for SUBSTRING's edge rules)."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetdb.backend.cpu import CpuBackend

B = CpuBackend()

WORDS = ["", "a", "ab", "abc", "héllo", "hello", "日本語", "naïve café", "x_y%z", "aaa", "ba", "é",
         "🙂🙃", "green", "forest green", "greenish", "PROMO BRUSHED", "Ünïcödé", "abcabc", "ABC"]


def encode(strings: list[str], offset_base: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """offsets + chars; ``offset_base`` > 0 puts junk bytes before the first string."""
    raw = [s.encode("utf-8") for s in strings]
    lens = np.array([len(r) for r in raw], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64) + offset_base
    chars = np.frombuffer(b"\xff" * offset_base + b"".join(raw), np.uint8).copy()
    return offsets, chars


def decode(offsets: np.ndarray, chars: np.ndarray) -> list[str]:
    assert offsets.dtype == np.int64 and chars.dtype == np.uint8
    b = chars.tobytes()
    return [b[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]


def random_strings(rng, n: int) -> list[str]:
    alphabet = list("ab_%xé日🙂 ")
    out = []
    for _ in range(n):
        if rng.random() < 0.5:
            out.append(WORDS[rng.integers(0, len(WORDS))])
        else:
            out.append("".join(alphabet[j] for j in rng.integers(0, len(alphabet), rng.integers(0, 9))))
    return out


def ref_like(s: str, pattern: str) -> bool:
    rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, s, flags=re.DOTALL) is not None


PATTERNS = ["", "%", "_", "__", "a%", "%a", "%a%", "a", "abc", "%b%c", "a_c", "_b%", "%_", "_%",
            "%é%", "h_llo", "h%o", "%%", "a%%c", "%日_語", "🙂_", "%green%", "%green", "green%",
            "forest%green", "_%_%_", "%c_f%", "%x_y%", "a%b%c", "%ab%ab%", "%%a%%", "%🙃", "é"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_like_patterns(pattern):
    rng = np.random.default_rng(len(pattern))
    strings = WORDS + random_strings(rng, 1003)
    offsets, chars = encode(strings, offset_base=3)
    got = B.like(offsets, chars, pattern)
    want = [ref_like(s, pattern) for s in strings]
    assert got.dtype == np.bool_ and got.tolist() == want
    assert len(want) > 0


def test_like_case_insensitive_and_empty():
    strings = ["Hello", "HELLO", "hello", "HÉLLO", "héllo", "", "xHELLOx"]
    offsets, chars = encode(strings)
    assert B.like(offsets, chars, "h_llo", case_insensitive=True).tolist() == [
        True, True, True, True, True, False, False]
    assert B.like(offsets, chars, "%ELL%", case_insensitive=True).tolist() == [
        True, True, True, False, False, False, True]
    ascii_only = encode(["Green", "GREEN", "red"])
    assert B.like(*ascii_only, "green", case_insensitive=True).tolist() == [True, True, False]
    e_off, e_chars = encode([])
    assert B.like(e_off, e_chars, "%a%").shape == (0,)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet="ab_%é🙂", max_size=8), max_size=12), st.text(alphabet="ab_%é🙂", max_size=6))
def test_like_property(strings, pattern):
    offsets, chars = encode(strings)
    assert B.like(offsets, chars, pattern).tolist() == [ref_like(s, pattern) for s in strings]


@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
@pytest.mark.parametrize("literal", ["", "abc", "héllo", "ab", "zzz", "日本語", "abcabc"])
def test_compare_string_scalar(op, literal):
    strings = WORDS + random_strings(np.random.default_rng(5), 301)
    offsets, chars = encode(strings, offset_base=1)
    got = B.compare_string_scalar(offsets, chars, literal, op)
    lit = literal.encode()
    fns = {"=": lambda a: a == lit, "<>": lambda a: a != lit, "<": lambda a: a < lit,
           "<=": lambda a: a <= lit, ">": lambda a: a > lit, ">=": lambda a: a >= lit}
    want = [fns[op](s.encode()) for s in strings]
    assert got.dtype == np.bool_ and got.tolist() == want and len(want) > 0


def test_factorize_strings():
    strings = WORDS + random_strings(np.random.default_rng(6), 2001)
    offsets, chars = encode(strings, offset_base=2)
    codes, u_off, u_chars = B.factorize_strings(offsets, chars)
    uniques = decode(u_off, u_chars)
    want = sorted(set(strings), key=lambda s: s.encode())
    assert uniques == want
    assert codes.dtype == np.int32
    assert [uniques[c] for c in codes] == strings
    e_codes, e_off, e_chars = B.factorize_strings(*encode([]))
    assert e_codes.shape == (0,) and e_off.tolist() == [0] and e_chars.shape == (0,)


def duckdb_substring(con, strings: list[str], start: int, length: int | None) -> list[str]:
    arg = "" if length is None else f", {length}"
    rows = con.execute(f"SELECT substring(s, {start}{arg}) FROM (SELECT unnest($1) AS s, "
                       "generate_subscripts($1, 1) AS i) ORDER BY i", [strings]).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("start", [1, 2, 5, 0, -1, -3, -20, 100])
@pytest.mark.parametrize("length", [None, 0, 1, 3, -1, -2, 50])
def test_substring_matches_duckdb(start, length):
    strings = WORDS + ["0123456789", "añb日c🙂d"]
    offsets, chars = encode(strings, offset_base=4)
    got = decode(*B.substring(offsets, chars, start, length))
    with duckdb.connect() as con:
        want = duckdb_substring(con, strings, start, length)
    assert got == want and len(want) == len(strings)


def test_substring_positive_reference_and_empty():
    rng = np.random.default_rng(8)
    strings = random_strings(rng, 777)
    offsets, chars = encode(strings)
    for start, length in [(1, 2), (2, 3), (3, None), (4, 100)]:
        got = decode(*B.substring(offsets, chars, start, length))
        want = [s[start - 1:] if length is None else s[start - 1:start - 1 + length] for s in strings]
        assert got == want
    e = B.substring(*encode([]), 1, 2)
    assert e[0].tolist() == [0] and e[1].shape == (0,)


def test_gather_strings():
    rng = np.random.default_rng(9)
    strings = WORDS + random_strings(rng, 500)
    offsets, chars = encode(strings, offset_base=5)
    idx = rng.integers(0, len(strings), 1201)
    out_off, out_chars = B.gather_strings(offsets, chars, idx)
    assert out_off[0] == 0
    assert decode(out_off, out_chars) == [strings[i] for i in idx]
    e_off, e_chars = B.gather_strings(offsets, chars, np.zeros(0, np.int64))
    assert e_off.tolist() == [0] and e_chars.shape == (0,)


def test_gather_strings_parallel_matches_serial(monkeypatch):
    """A gather past the parallel threshold on several kernel threads copies every string to its place."""
    from hetdb.backend.cpu import strings as S
    from hetdb.backend.cpu.keys import kernel_threads, set_kernel_threads

    rng = np.random.default_rng(11)
    strings = WORDS + random_strings(rng, 300)
    offsets, chars = encode(strings, offset_base=3)
    idx = rng.integers(0, len(strings), 5000)
    monkeypatch.setattr(S, "_PARALLEL_GATHER", 100)
    before = kernel_threads()
    set_kernel_threads(2)
    calls = []
    parallel = S._gather_ranges_parallel
    monkeypatch.setattr(S, "_gather_ranges_parallel", lambda *a: calls.append(1) or parallel(*a))
    try:
        out_off, out_chars = B.gather_strings(offsets, chars, idx)
    finally:
        set_kernel_threads(before)
    assert calls, "the parallel gather did not run"
    assert decode(out_off, out_chars) == [strings[i] for i in idx]


@pytest.mark.parametrize("prefix", [None, 1, 2, 5])
def test_string_in_matches_python_membership(prefix) -> None:
    rng = np.random.default_rng(11 + (prefix or 0))
    strings = random_strings(rng, 1003) + WORDS
    literals = ("", "a", "ab", "é", "日🙂", "héllo", "ba", "🙂🙃", "ab_%x")
    offsets, chars = encode(strings, offset_base=3)
    got = B.string_in(offsets, chars, literals, prefix)
    want = [(s if prefix is None else s[:prefix]) in literals for s in strings]
    assert got.dtype == np.bool_ and got.tolist() == want
    assert 0 < sum(want) < len(want)  # both outcomes were compared
    assert B.string_in(np.zeros(1, np.int64), np.zeros(0, np.uint8), literals, prefix).shape == (0,)
    # the first 0 code points of every string are ''
    assert B.string_in(offsets, chars, literals, 0).all()
    assert not B.string_in(offsets, chars, literals[1:], 0).any()
