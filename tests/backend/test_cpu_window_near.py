"""backend/cpu/window_near: lag/lead indexes and narrow ROWS frame sums from the partition start
flags, against the general path's partition bounds (backend/cpu/window) and NumPy prefix sums:
offsets 0..MAX_REACH both ways, frames PRECEDING/CURRENT ROW/FOLLOWING, partitions of one row, one
partition, NULLs, int32 values, no rows; a sum past int64 returns None."""

from __future__ import annotations

import numpy as np

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_near as KN


def _flags(rng, n: int, rate: float) -> np.ndarray:
    flags = rng.random(n) < rate
    if n:
        flags[0] = True
    return flags


def test_shifted_matches_partition_bounds() -> None:
    rng = np.random.default_rng(21)
    checked = 0
    for n, rate in [(0, 0.5), (1, 1.0), (50, 1.0), (5_000, 0.2), (300_001, 0.01), (70_000, 0.0)]:
        part_start = _flags(rng, n, rate)
        ps, pe = K.run_bounds(part_start) if n else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        for shift in (-KN.MAX_REACH, -3, -1, 0, 1, 2, 7, KN.MAX_REACH):
            want = K.shifted(ps, pe, shift) if n else np.zeros(0, np.int64)
            assert np.array_equal(KN.shifted(part_start, shift), want), (n, rate, shift)
            checked += 1
    assert checked == 48


def _reference(x, valid, part_start, before, after):
    n = x.shape[0]
    ps, pe = K.run_bounds(part_start)
    rows = np.arange(n)
    fs = np.maximum(rows - before, ps)
    fe = np.minimum(rows + after + 1, pe)
    v = np.where(valid, x, 0).astype(np.int64)
    pre, cpre = np.r_[0, np.cumsum(v)], np.r_[0, np.cumsum(valid)]
    return pre[fe] - pre[fs], cpre[fe] - cpre[fs]


def test_frame_sums_match_prefix_sums() -> None:
    rng = np.random.default_rng(22)
    checked = 0
    for n, rate in [(1, 1.0), (40, 1.0), (9_000, 0.3), (200_003, 0.02), (100_000, 0.0)]:
        part_start = _flags(rng, n, rate)
        x = rng.integers(-(10**12), 10**12, n)
        for before, after in [(4, 0), (0, 0), (0, 3), (2, 2), (KN.MAX_REACH, 0), (30, 34)]:
            for valid in (None, rng.random(n) < 0.7):
                got = KN.frame_sums(x.astype(np.int64), valid, part_start, before, after, True)
                want = _reference(x, np.ones(n, bool) if valid is None else valid, part_start, before, after)
                assert got is not None
                assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (n, before, after)
                checked += 1
        small = KN.frame_sums(x.astype(np.int32) if n else x, None, part_start, 1, 1, False)
        assert np.array_equal(small[0], _reference(x.astype(np.int32), np.ones(n, bool), part_start, 1, 1)[0])
    assert checked == 60


def test_frame_sum_past_int64_returns_none() -> None:
    x = np.array([2**62, 2**62, 5], np.int64)
    part_start = np.array([True, False, True])
    assert KN.frame_sums(x, None, part_start, 1, 0, False) is None
    part_start[1] = True  # each row its own partition: no sum leaves int64
    got = KN.frame_sums(x, None, part_start, 1, 0, False)
    assert got is not None and got[0].tolist() == [2**62, 2**62, 5]


def test_no_rows() -> None:
    empty = np.zeros(0, np.int64)
    sums, cnt = KN.frame_sums(empty, None, np.zeros(0, bool), 2, 1, True)
    assert sums.shape == (0,) and cnt.shape == (0,)
    assert KN.shifted(np.zeros(0, bool), -1).shape == (0,)
