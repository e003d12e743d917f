"""backend/cpu/window_running: running (ROWS UNBOUNDED PRECEDING .. CURRENT ROW) integer sums and
counts by a chunked parallel segmented scan, against per-partition NumPy cumulative sums: partitions
across chunk borders, one partition over every chunk, a partition per row, NULLs, int32 input, no
rows; a sum past int64 returns None (the window then takes the exact path)."""

from __future__ import annotations

import numpy as np

from hetdb.backend.cpu import window_running as KR


def _reference(x, valid, part_start):
    seg = np.cumsum(part_start) - 1
    v = np.where(valid, x, 0).astype(np.int64)
    c = valid.astype(np.int64)
    sums, cnts = np.cumsum(v), np.cumsum(c)
    heads = np.flatnonzero(part_start)
    before = np.r_[0, sums][heads][seg]
    before_c = np.r_[0, cnts][heads][seg]
    return sums - before, cnts - before_c


def test_running_sums_match_partition_cumsums() -> None:
    rng = np.random.default_rng(3)
    checked = 0
    for n, rate in [(0, 0.1), (1, 1.0), (700_001, 0.00001), (600_000, 0.0), (300_007, 1.0), (400_000, 0.3),
                    (65_536 * 9 + 5, 0.000003)]:
        part_start = rng.random(n) < rate
        if n:
            part_start[0] = True
        x = rng.integers(-(10**9), 10**9, n)
        for valid in (None, rng.random(n) < 0.8):
            for dtype in (np.int64, np.int32):
                got = KR.running_sums(x.astype(dtype), valid, part_start, True)
                assert got is not None
                want = _reference(x, np.ones(n, bool) if valid is None else valid, part_start)
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (n, rate)
                sums_only = KR.running_sums(x.astype(dtype), valid, part_start, False)
                assert np.array_equal(sums_only[0], want[0]) and sums_only[1].shape == (0,)
                checked += 1
    assert checked == 28


def test_running_sum_past_int64_returns_none() -> None:
    n = 700_000  # several chunks: the overflow may lie in a chunk or in the carry between chunks
    part_start = np.zeros(n, bool)
    part_start[0] = True
    big = np.full(n, 2**62 // (n // 3), np.int64)  # all rows: 1.5 x 2**63; half of them: 0.75 x 2**63
    assert KR.running_sums(big, None, part_start, False) is None
    part_start[n // 2] = True  # two partitions, each sum within int64
    got = KR.running_sums(big, None, part_start, False)
    assert got is not None
    assert np.array_equal(got[0], _reference(big, np.ones(n, bool), part_start)[0])
    one = np.array([2**62, 2**62], np.int64)
    assert KR.running_sums(one, None, np.array([True, False]), False) is None


def test_spread_last_gives_each_segment_its_last_value() -> None:
    rng = np.random.default_rng(9)
    checked = 0
    for n, rate in [(0, 0.1), (1, 1.0), (2, 0.0), (700_001, 0.00001), (600_000, 0.0), (300_007, 1.0),
                    (400_000, 0.3), (65_536 * 9 + 5, 0.000003)]:
        seg_start = rng.random(n) < rate
        if n:
            seg_start[0] = True
        values = rng.integers(-(10**12), 10**12, n)
        seg = np.cumsum(seg_start) - 1
        last = np.r_[np.flatnonzero(seg_start)[1:] - 1, n - 1] if n else np.zeros(0, np.int64)
        want = values[last][seg] if n else values.copy()
        got = KR.spread_last(values.copy(), seg_start)
        assert np.array_equal(got, want), (n, rate)
        checked += 1
    assert checked == 8
