"""The window operator's CPU row sort (``backend/cpu/window_sort``): the most-significant-digit pass
plus per-bucket LSD sorts equal a stable argsort on inputs above its threshold (uniform codes, many
ties, codes of few bits, skew that takes the LSD fallback), on one and several kernel threads; and
the small parallel kernels beside it (packing, inverted keys, sortedness)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hetdb.backend.cpu import window_sort as KS


def _codes(kind: str, n: int, rng) -> tuple[np.ndarray, int]:
    if kind == "uniform":  # a customer key and a price packed, as in TPC-H orders
        code = rng.integers(0, 150_000, n) * 55_520_001 + rng.integers(0, 55_520_001, n)
    elif kind == "ties":  # few distinct codes: stability decides the order inside each bucket
        code = rng.integers(0, 7, n) * (1 << 30) + rng.integers(0, 3, n)
    elif kind == "few-bits":  # 12 bits: one top digit of one bit, then the bucket passes
        code = rng.integers(0, 1 << 12, n)
    elif kind == "skew":  # most rows share the top digit: the LSD sort over all rows
        code = rng.integers(0, 1 << 20, n)
        code[: n // 8] = rng.integers(0, 1 << 40, n // 8)
    else:  # tiny buckets (insertion sort) beside large ones
        code = np.where(rng.random(n) < 0.5, rng.integers(0, 1 << 30, n), rng.integers(0, 1 << 41, n))
    return code.astype(np.int64), max(1, int(code.max()).bit_length())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["uniform", "ties", "few-bits", "skew", "mixed"])
def test_sort_codes_is_a_stable_argsort(kind, threads) -> None:
    rng = np.random.default_rng(len(kind) * 7 + threads)
    n = KS._MSD_ROWS * 3 + 1_234
    code, bits = _codes(kind, n, rng)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = KS.sort_codes(code, bits)
    finally:
        numba.set_num_threads(before)
    assert got.dtype == np.int64
    assert np.array_equal(got, np.argsort(code, kind="stable")), kind


@pytest.mark.parametrize("n", [0, 1, 5, 1_000])
def test_sort_codes_below_the_threshold(n) -> None:
    code = np.random.default_rng(n).integers(0, 1 << 33, n).astype(np.int64)
    assert np.array_equal(KS.sort_codes(code, 33), np.argsort(code, kind="stable"))


def test_packing_and_inverting() -> None:
    rng = np.random.default_rng(3)
    n = 50_001
    a, b = rng.integers(-5, 20, n), rng.integers(100, 130, n)
    first = KS.pack_first(a, 0, -5, None)
    assert np.array_equal(first, a + 5)
    both = KS.pack_first(b, 31, 100, first)
    assert np.array_equal(both, (a + 5) * 31 + b - 100)
    assert np.array_equal(KS.inverted(a), ~a)


@pytest.mark.parametrize("where", [None, 1, 4_096, 50_000, 99_999])
def test_is_sorted_finds_a_single_descent_anywhere(where) -> None:
    code = np.arange(100_000, dtype=np.int64)
    if where is not None:
        code[where] = code[where - 1] - 1
    assert KS.is_sorted(code) == (where is None)
    assert KS.is_sorted(np.zeros(0, np.int64)) and KS.is_sorted(np.ones(1, np.int64))


def test_sort_within_runs_over_several_chunks() -> None:
    """Runs that cross the borders of the threads' chunks (run starts found per chunk), short runs
    (insertion sort) and long ones (merge sort)."""
    rng = np.random.default_rng(11)
    n = 400_003
    part = np.sort(np.concatenate([rng.integers(0, n // 9, n - 70_000), np.full(70_000, n)]))
    code = part * 64 + rng.integers(0, 20, n)  # ties inside a run: stability shows
    assert np.array_equal(KS.sort_within_runs(code, part), np.argsort(code, kind="stable"))
    assert np.array_equal(KS._run_starts(part, 7), np.concatenate([np.flatnonzero(np.diff(part, prepend=-1)), [n]]))
