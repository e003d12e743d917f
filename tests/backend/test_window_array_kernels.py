"""The array-module window kernels (``exec/window_array``, the algorithm the GPU runs with CuPy) run
here with NumPy and are compared with the CPU's compiled loops (``backend/cpu/window``) on random
inputs: several partitions, ties, NULLs, empty input and sizes that are not powers of two. A gpu-marked
test runs them with CuPy against the same loops."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import window as K
from hetdb.backend.gpu import gpu_available
from hetdb.exec.window_array import ArrayKernels, float_order_key

SIZES = [0, 1, 2, 997, 5_003]
# (start code, start offset, end code, end offset): 0 unbounded preceding, 1 preceding, 2 current,
# 3 following, 4 unbounded following
FRAMES = [(0, 0, 2, 0), (1, 3, 3, 2), (1, 40, 1, 1), (3, 2, 3, 5), (0, 0, 4, 0), (2, 0, 4, 0), (1, 0, 3, 0)]


def _case(n: int, seed: int, part_rate: float = 0.05):
    rng = np.random.default_rng(seed)
    part_start = np.zeros(n, dtype=bool)
    if n:
        part_start[0] = True
        part_start[rng.random(n) < part_rate] = True
    peer_start = part_start | (rng.random(n) < 0.4)
    return rng, part_start, peer_start


def _same(got, want) -> None:
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(np.asarray(g), w)


def _compare(xp, to_host) -> int:
    """Every kernel of ``ArrayKernels(xp)`` against the compiled loops; the number of arrays compared."""
    A = ArrayKernels(xp)
    compared = 0
    for n in SIZES:
        rng, part_start, peer_start = _case(n, n + 11)
        ps, pe, gs, ge = K.boundaries(part_start, peer_start)
        dev = [xp.asarray(a) for a in (part_start, peer_start)]
        bounds = [xp.asarray(a) for a in (ps, pe, gs, ge)]
        _same([to_host(a) for a in A.boundaries(*dev)], (ps, pe, gs, ge))
        _same([to_host(A.dense_rank(*dev))], [K.dense_rank(part_start, peer_start)])
        for buckets in (1, 3, 4, 1000):
            _same([to_host(A.ntile(bounds[0], bounds[1], buckets))], [K.ntile(ps, pe, buckets)])
        for shift in (-2, -1, 0, 1, 3):
            _same([to_host(A.shifted(bounds[0], bounds[1], shift))], [K.shifted(ps, pe, shift)])
        x = rng.integers(-1000, 1000, n)
        x[: n // 4] = 7  # ties, so that the first of equal extremes shows
        valid = rng.random(n) < 0.8
        xf = x.astype(np.float64) / 8.0
        dx, dvalid, dxf = xp.asarray(x), xp.asarray(valid), xp.asarray(xf)
        _same([to_host(A.prefix_counts(dvalid))], [K.prefix_counts(valid)])
        for s_code, s_off, e_code, e_off in FRAMES:
            fs, fe = K.rows_frame(ps, pe, s_code, s_off, e_code, e_off)
            dfs, dfe = A.rows_frame(bounds[0], bounds[1], s_code, s_off, e_code, e_off)
            _same([to_host(dfs), to_host(dfe)], (fs, fe))
            _same([to_host(A.frame_sum_int(dx, dvalid, dfs, dfe))], [K.frame_sum_int(x, valid, fs, fe)])
            np.testing.assert_allclose(to_host(A.frame_sum_float(dxf, dvalid, bounds[0], dfs, dfe)),
                                       K.frame_sum_float(xf, valid, ps, fs, fe), rtol=1e-12, atol=1e-9)
            for is_max in (False, True):
                _same([to_host(A.frame_extreme(dx, dvalid, bounds[0], dfs, dfe, is_max))],
                      [K.frame_extreme(x, valid, ps, fs, fe, is_max)])
            compared += 1
        # RANGE frames: a sorted key per partition with NULLs first or last and peers by value
        w = np.zeros(n, np.int64)
        wvalid = np.ones(n, dtype=bool)
        for s in np.flatnonzero(part_start):
            e = int(pe[s])
            w[s:e] = np.sort(rng.integers(0, 60, e - s))
            nulls = int(rng.integers(0, 3))
            if nulls and e - s > nulls:
                if rng.random() < 0.5:
                    wvalid[s:s + nulls] = False
                    w[s:s + nulls] = 0
                else:
                    wvalid[e - nulls:e] = False
                    w[e - nulls:e] = 0
        peer = part_start.copy()
        peer[1:] |= (w[1:] != w[:-1]) | (wvalid[1:] != wvalid[:-1])
        ps, pe, gs, ge = K.boundaries(part_start, peer)
        db = [xp.asarray(a) for a in (ps, pe, gs, ge)]
        for s_code, s_off, e_code, e_off in FRAMES:
            want = K.range_frame(ps, pe, gs, ge, w, wvalid, s_code, s_off, e_code, e_off)
            got = A.range_frame(*db, xp.asarray(w), xp.asarray(wvalid), s_code, s_off, e_code, e_off)
            _same([to_host(a) for a in got], want)
            wf = w.astype(np.float64) / 4.0
            want = K.range_frame(ps, pe, gs, ge, wf, wvalid, s_code, s_off / 4.0, e_code, e_off / 4.0)
            got = A.range_frame(*db, xp.asarray(wf), xp.asarray(wvalid), s_code, s_off / 4.0, e_code, e_off / 4.0)
            _same([to_host(a) for a in got], want)
            compared += 1
    return compared


def test_array_kernels_with_numpy_match_the_compiled_loops() -> None:
    assert _compare(np, np.asarray) == 2 * len(SIZES) * len(FRAMES)


def test_partition_float_sums_restart_at_each_partition() -> None:
    """A running float sum carries no rounding of earlier partitions: 1e20 then 1.0s."""
    A = ArrayKernels(np)
    part_start = np.array([True, False, True, False, False])
    ps, pe, _, _ = K.boundaries(part_start, part_start)
    x = np.array([1e20, -1e20, 1.0, 2.0, 3.0])
    valid = np.ones(5, dtype=bool)
    fs, fe = A.rows_frame(ps, pe, 0, 0, 2, 0)
    assert np.array_equal(A.frame_sum_float(x, valid, ps, fs, fe), [1e20, 0.0, 1.0, 3.0, 6.0])
    wide = np.concatenate([[1e20], np.ones(99)])
    p = np.zeros(100, dtype=bool)
    p[[0, 1]] = True
    ps, pe, _, _ = K.boundaries(p, p)
    fs, fe = A.rows_frame(ps, pe, 0, 0, 2, 0)
    assert np.array_equal(A.frame_sum_float(wide, np.ones(100, dtype=bool), ps, fs, fe)[1:], np.arange(1, 100.0))


def test_float_order_key_orders_as_duckdb() -> None:
    x = np.array([np.nan, np.inf, 1.5, 0.0, -0.0, -1.5, -np.inf, -np.nan])
    k = float_order_key(np, x)
    assert k[3] == k[4] and k[0] == k[7]  # -0.0 = 0.0, every NaN equal
    assert list(np.argsort(k[:7], kind="stable")) == [6, 5, 3, 4, 2, 1, 0]


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_array_kernels_with_cupy_match_the_compiled_loops() -> None:
    import cupy

    assert _compare(cupy, cupy.asnumpy) == 2 * len(SIZES) * len(FRAMES)


def _permutation_cases():
    """(keys, descending) of random sort problems: narrow keys that pack into one code, keys whose
    ranges need several codes, one spanning every int64, bool flags, constant keys, a last key
    already sorted, rows already in the keys' order (ASC and DESC: no sort needed), a 32-bit code, ties
    everywhere."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 997, 5_003):
        narrow = rng.integers(0, 40, n)
        wide = rng.integers(-(2**40), 2**40, n)
        full = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64, endpoint=True)
        full[: min(n, 3)] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0][: min(n, 3)]
        flag = rng.random(n) < 0.3
        yield [narrow, flag, rng.integers(0, 3, n)], [False, False, True]
        yield [narrow, wide, wide // 3, rng.integers(0, 5, n)], [False, True, False, True]
        yield [flag, full, narrow], [True, False, True]
        yield [np.full(n, 5), narrow, np.arange(n)], [False, True, False]
        yield [narrow, np.arange(n)[::-1].copy()], [False, True]
        bits32 = rng.integers(0, 2**32, n)
        bits32[: min(n, 2)] = [2**32 - 1, 0][: min(n, 2)]  # a code of exactly 32 bits (unsigned sort)
        yield [bits32], [False]
        inner = rng.integers(0, 9, n)
        for inner_desc in (False, True):
            rows = np.lexsort([-inner if inner_desc else inner, narrow])
            yield [narrow[rows], inner[rows]], [False, inner_desc]


def _check_permutations(xp, to_host) -> int:
    A = ArrayKernels(xp)
    checked = 0
    for keys, desc in _permutation_cases():
        n = keys[0].shape[0]
        got = A.sort_permutation([xp.asarray(k) for k in keys], desc, n)
        got = np.arange(n) if got is None else to_host(got)
        images = [~k.astype(np.int64) if d else k.astype(np.int64) for k, d in zip(keys, desc)]
        want = np.lexsort([np.arange(n), *reversed(images)])  # stable: ties in row order
        assert np.array_equal(got, want), (n, desc)
        checked += 1
    return checked


def test_sort_permutation_packs_keys_into_radix_sorts() -> None:
    assert _check_permutations(np, np.asarray) == 32


def _segment_sort_numpy(code, heads, n):
    """The reference of backend/gpu/window.sort_within_segments: each segment's rows by code, stable."""
    seg = np.zeros(n, np.int64)
    seg[heads[1:]] = 1
    return np.lexsort([code, np.cumsum(seg)])


def _grouped_cases():
    """(keys, descending, n_part) where the rows are grouped by the PARTITION BY keys: partitions of
    1..6 rows, one longer than the segment limit, ORDER BY keys ASC/DESC with ties and a NULL flag,
    a second partition key; and rows not grouped (the radix sort path)."""
    rng = np.random.default_rng(13)
    for n in (1, 3, 1_000, 4_099):
        sizes = rng.integers(1, 7, n)
        part = np.repeat(np.arange(n), sizes)[:n]
        price, flag = rng.integers(0, 50, n), rng.random(n) < 0.2
        yield [part, price], [False, True], 1
        yield [part, flag, price, rng.integers(0, 3, n)], [False, False, False, True], 1
        yield [part // 3, part, price], [False, False, True], 2
        long_part = part.copy()
        long_part[: min(n, 20)] = 0  # one partition of 20 rows: past the limit of 8
        yield [long_part, price], [False, False], 1
        yield [rng.permutation(part), price], [False, False], 1


def _check_grouped(A, xp, to_host) -> int:
    checked = 0
    for keys, desc, n_part in _grouped_cases():
        n = keys[0].shape[0]
        got = A.sort_permutation([xp.asarray(k) for k in keys], desc, n, n_part)
        got = np.arange(n) if got is None else to_host(got)
        images = [~k.astype(np.int64) if d else k.astype(np.int64) for k, d in zip(keys, desc)]
        want = np.lexsort([np.arange(n), *reversed(images)])
        assert np.array_equal(got, want), (n, desc, n_part)
        checked += 1
    return checked


def test_sort_permutation_within_grouped_partitions() -> None:
    calls = []

    def segment_sort(code, heads, n):
        calls.append(n)
        return _segment_sort_numpy(code, heads, n)

    assert _check_grouped(ArrayKernels(np, segment_sort, 8), np, np.asarray) == 20
    assert len(calls) >= 6  # the grouped cases of 1,000 and 4,099 rows took the per-partition sort


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_sort_permutation_within_grouped_partitions_on_the_gpu() -> None:
    import cupy

    from hetdb.backend.gpu import window as GW

    assert _check_grouped(ArrayKernels(cupy, GW.sort_within_segments, 8), cupy, cupy.asnumpy) == 20


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_sort_permutation_with_cupy() -> None:
    import cupy

    assert _check_permutations(cupy, cupy.asnumpy) == 32


def test_compiled_boundaries_across_chunks() -> None:
    """The compiled loops' run bounds, computed chunk by chunk in parallel, on inputs large enough for
    many chunks: runs longer than a chunk, a run per row, sparse and dense flags."""
    rng = np.random.default_rng(11)
    A = ArrayKernels(np)
    checked = 0
    for n, part_rate, peer_rate in [(100_003, 0.00002, 0.0001), (70_001, 1.0, 0.0), (65_537, 0.01, 0.5),
                                    (90_000, 0.0, 0.0)]:
        part_start = rng.random(n) < part_rate
        part_start[0] = True
        peer_start = rng.random(n) < peer_rate
        _same(K.boundaries(part_start, peer_start), A.boundaries(part_start, peer_start))
        checked += 1
    assert checked == 4


def test_compiled_integer_frame_sums_across_chunks() -> None:
    """The compiled prefix sum, in parallel chunks, on inputs of many chunks with NULLs, partitions
    and frames of every kind."""
    rng = np.random.default_rng(12)
    A = ArrayKernels(np)
    n = 300_001
    part_start = rng.random(n) < 0.001
    part_start[0] = True
    ps, pe, _, _ = K.boundaries(part_start, part_start)
    x = rng.integers(-(10**12), 10**12, n)
    valid = rng.random(n) < 0.9
    compared = 0
    for s_code, s_off, e_code, e_off in FRAMES:
        fs, fe = K.rows_frame(ps, pe, s_code, s_off, e_code, e_off)
        _same([K.frame_sum_int(x, valid, fs, fe)], [A.frame_sum_int(x, valid, fs, fe)])
        compared += 1
    assert compared == len(FRAMES)


def _check_variance(xp, to_host) -> int:
    """ArrayKernels.partition_variance against the CPU's two-pass loop: partitions of one row, all
    NULL, one partition, many; sample and population."""
    from hetdb.backend.cpu import window as K

    rng = np.random.default_rng(17)
    A = ArrayKernels(xp)
    checked = 0
    for n, rate in [(0, 0.5), (1, 1.0), (9, 1.0), (2_000, 0.05), (50_001, 0.0005), (3_000, 0.0)]:
        part_start = rng.random(n) < rate
        if n:
            part_start[0] = True
        x = rng.normal(1e3, 50.0, n)
        valid = rng.random(n) < 0.8
        ps, pe = K.run_bounds(part_start) if n else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        for ddof in (0, 1):
            want, want_ok = K.partition_variance(x, valid, ps, pe, ddof)
            got, ok = A.partition_variance(xp.asarray(x), xp.asarray(valid), xp.asarray(part_start), ddof)
            got, ok = to_host(got), to_host(ok)
            assert np.array_equal(ok, want_ok), (n, rate, ddof)
            assert np.allclose(got[ok], want[ok], rtol=1e-9, atol=0.0), (n, rate, ddof)
            checked += 1
    return checked


def test_partition_variance_matches_the_cpu_loop() -> None:
    assert _check_variance(np, np.asarray) == 12


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_partition_variance_on_the_gpu() -> None:
    import cupy

    assert _check_variance(cupy, cupy.asnumpy) == 12
