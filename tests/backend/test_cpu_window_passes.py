"""The window operator's parallel per-row passes (``backend/cpu/window_passes``) against their NumPy
forms, over more rows than one thread's chunk (several chunks) and with empty frames."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import window_passes as KP


def _frames(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    fs = rng.integers(0, n, n)
    fe = np.minimum(fs + rng.integers(-3, 40, n), n)
    return fs, np.maximum(fe, fs)  # some frames empty (fe == fs)


@pytest.mark.parametrize("n", [1, 7, 300_001])
def test_ranks_and_counts_match_numpy(n) -> None:
    rng = np.random.default_rng(n)
    for part_rate in (0.00001, 0.3, 1.0):
        part_start = rng.random(n) < part_rate
        part_start[0] = True
        peer_start = part_start | (rng.random(n) < 0.4)
        rows = np.arange(n)
        ps = np.maximum.accumulate(np.where(part_start, rows, 0))
        gs = np.maximum.accumulate(np.where(peer_start, rows, 0))
        assert np.array_equal(KP.ranks(part_start, None), rows - ps + 1)
        assert np.array_equal(KP.ranks(part_start, peer_start), gs - ps + 1)
    assert KP.ranks(np.zeros(0, bool), None).shape == (0,)
    fs, fe = _frames(n, rng)
    cnt, has = KP.frame_counts(None, fs, fe)
    assert np.array_equal(cnt, fe - fs) and np.array_equal(has, fe > fs)
    valid = rng.random(n) < 0.6
    pre = np.concatenate([[0], np.cumsum(valid)])
    cnt, has = KP.frame_counts(valid, fs, fe)
    assert np.array_equal(cnt, pre[fe] - pre[fs]) and np.array_equal(has, cnt > 0)
    assert has.any() and not has.all() if n > 7 else True


@pytest.mark.parametrize("n", [1, 5, 300_001])
def test_value_span_and_averages_match_numpy(n) -> None:
    rng = np.random.default_rng(n + 1)
    d = rng.integers(-(2**62), 2**62, n)
    fs, fe = _frames(n, rng)
    lo, hi, width = KP.value_span(d, fs, fe)
    assert (lo, hi, width) == (d.min(), d.max(), (fe - fs).max())
    total = rng.integers(-(10**12), 10**12, n)
    cnt = fe - fs
    got = KP.averages(total, cnt, 100.0)
    want = np.where(cnt > 0, total.astype(np.float64) / 100.0 / np.maximum(cnt, 1), 0.0)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("n", [0, 1, 3, 300_001])
@pytest.mark.parametrize("partitions", [1, 40, 30_000])
def test_dense_rank_matches_the_serial_pass(n, partitions) -> None:
    """Partitions that span several chunks (few partitions) and many in one chunk."""
    from hetdb.backend.cpu import window as K

    rng = np.random.default_rng(n + partitions)
    part_start = np.zeros(n, bool)
    if n:
        part_start[rng.integers(0, n, partitions)] = True
        part_start[0] = True
    peer_start = rng.random(n) < 0.3
    got = KP.dense_rank(part_start, peer_start)
    assert np.array_equal(got, K.dense_rank(part_start, peer_start))
    assert n == 0 or got.max() > 1 or n < 5
