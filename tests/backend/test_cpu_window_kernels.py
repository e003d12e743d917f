"""The CPU window kernels against plain NumPy / Python references on random inputs (sizes that are
not powers of two, empty input, several partitions)."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_sort as KS


@pytest.mark.parametrize("n", [0, 1, 997, 20_011])
def test_radix_refine_is_a_stable_argsort(n) -> None:
    rng = np.random.default_rng(n)
    code = rng.integers(0, 2**40, n)
    code[: n // 3] = 7  # many ties: stability shows
    got = K.radix_refine(code, 40, np.arange(n, dtype=np.int64))
    assert np.array_equal(got, np.argsort(code, kind="stable"))


def _partitions(rng, n):
    part_start = np.zeros(n, dtype=bool)
    if n:
        part_start[0] = True
        part_start[rng.integers(0, n, n // 10)] = True
    return part_start


@pytest.mark.parametrize("n", [0, 1, 513])
def test_frames_and_sliding_extremes_match_a_row_by_row_reference(n) -> None:
    rng = np.random.default_rng(7 + n)
    part_start = _partitions(rng, n)
    peer_start = part_start | (rng.random(n) < 0.5)
    ps, pe, gs, ge = K.boundaries(part_start, peer_start)
    fs, fe = K.rows_frame(ps, pe, 1, 3, 3, 2)  # ROWS BETWEEN 3 PRECEDING AND 2 FOLLOWING
    x = rng.integers(-50, 50, n)
    valid = rng.random(n) < 0.8
    mx = K.frame_extreme(x, valid, ps, fs, fe, True)
    sums = K.frame_sum_int(x, valid, fs, fe)
    fsum = K.frame_sum_float(x.astype(np.float64), valid, ps, fs, fe)
    for i in range(n):
        lo, hi = max(ps[i], i - 3), min(pe[i], i + 3)
        assert (fs[i], fe[i]) == (lo, hi)
        vals = [x[j] for j in range(lo, hi) if valid[j]]
        assert sums[i] == sum(vals) and fsum[i] == pytest.approx(float(sum(vals)))
        assert (mx[i] == -1) if not vals else (x[mx[i]] == max(vals))
    assert n == 0 or len(set(ps.tolist())) == int(part_start.sum())


def test_range_frame_by_value_offsets() -> None:
    rng = np.random.default_rng(3)
    n = 300
    part_start = _partitions(rng, n)
    ps, pe, _, _ = K.boundaries(part_start, part_start)
    w = np.empty(n, np.int64)
    for s, e in {(int(a), int(b)) for a, b in zip(ps, pe)}:
        w[s:e] = np.sort(rng.integers(0, 40, e - s))
    peer = part_start | np.concatenate(([True], w[1:] != w[:-1]))
    ps, pe, gs, ge = K.boundaries(part_start, peer)
    fs, fe = K.range_frame(ps, pe, gs, ge, w, np.ones(n, dtype=bool), 1, 5, 3, 2)
    for i in range(n):
        inside = [j for j in range(ps[i], pe[i]) if w[i] - 5 <= w[j] <= w[i] + 2]
        assert (fs[i], fe[i]) == (inside[0], inside[-1] + 1)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 2_003])
def test_sort_within_runs_is_a_stable_argsort_of_partition_sorted_codes(n) -> None:
    rng = np.random.default_rng(n + 5)
    div = 1000
    part = np.sort(rng.integers(0, max(n // 20, 1), n))
    part[n // 2:] = part[n // 2] if n else 0  # one long run too (merge sort), beside short ones
    part = np.sort(part)
    code = part * div + rng.integers(0, 50, n)  # ties within a partition: stability shows
    assert K.descents(part) == 0 and (n < 20 or K.descents(code) > 0)
    assert np.array_equal(KS.sort_within_runs(code, part), np.argsort(code, kind="stable"))


def test_parallel_radix_refine_is_a_stable_argsort_over_thread_slices() -> None:
    """Past the parallel threshold each thread counts and scatters its own slice of the rows."""
    rng = np.random.default_rng(1)
    n = (1 << 16) + 4_321
    code = rng.integers(0, 2**35, n)
    code[::3] = code[5]  # ties across every slice: stability shows
    order = rng.permutation(n).astype(np.int64)
    got = K.radix_refine(code, 35, order)
    assert np.array_equal(got, order[np.argsort(code[order], kind="stable")])
    same = np.full(n, 9, np.int64)  # every digit shared: the passes are skipped
    assert np.array_equal(K.radix_refine(same, 4, order), order)
