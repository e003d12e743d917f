"""CPU backend: sort_indices and topk_indices against Python's stable sort."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetdb.backend.cpu import CpuBackend

B = CpuBackend()


def cmp_values(a, b) -> int:
    """SQL order of two non-NULL values: -0.0 == 0.0, NaN after every number."""
    a, b = a.item(), b.item()
    if isinstance(a, float):
        an, bn = math.isnan(a), math.isnan(b)
        if an or bn:
            return (an > bn) - (an < bn)
    return (a > b) - (a < b)


def ref_sort(keys, descending):
    n = len(keys[0])

    def cmp(i, j):
        for k, d in zip(keys, descending):
            c = cmp_values(k[i], k[j])
            if c:
                return -c if d else c
        return 0

    # Python's sort is stable, so ties keep row order.
    return np.array(sorted(range(n), key=functools.cmp_to_key(cmp)), np.int64)


def random_key(rng, dtype, n, card):
    if dtype == "float64":
        pool = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, -1.5, np.inf, -np.inf, 7e-310, -3e300])
        return np.concatenate([pool, rng.standard_normal(card)])[rng.integers(0, card + len(pool), n)]
    if dtype == "bool":
        return rng.random(n) < 0.4
    if dtype == "int32":
        return rng.integers(-card, card, n).astype(np.int32)
    if dtype == "int64big":
        return rng.integers(-(2**63), 2**63 - 1, card, dtype=np.int64)[rng.integers(0, card, n)]
    return rng.integers(-card, card, n).astype(np.int64)


CASES = [
    (["int64"], [False]), (["int64"], [True]), (["int32", "bool"], [True, False]),
    (["float64"], [False]), (["float64"], [True]), (["bool", "float64", "int32"], [False, True, True]),
    (["int64big"], [False]), (["int64big", "int32"], [True, False]), (["int64big", "int64big"], [False, True]),
]


@pytest.mark.parametrize("dtypes,desc", CASES)
@pytest.mark.parametrize("n", [0, 1, 13, 3001])
def test_sort_indices_random(dtypes, desc, n):
    rng = np.random.default_rng(n + len(dtypes))
    keys = [random_key(rng, d, n, 20) for d in dtypes]
    got = B.sort_indices(keys, desc)
    want = ref_sort(keys, desc)
    assert got.dtype == np.int64
    assert np.array_equal(got, want)


def test_sort_extremes_and_nan_placement():
    x = np.array([np.nan, 1.0, -np.inf, np.inf, -0.0, 0.0, -1.0, np.nan])
    assert B.sort_indices([x], [False]).tolist() == [2, 6, 4, 5, 1, 3, 0, 7]
    assert B.sort_indices([x], [True]).tolist() == [0, 7, 3, 1, 4, 5, 6, 2]
    ints = np.array([2**63 - 1, -(2**63), 0, -1], np.int64)
    assert B.sort_indices([ints], [True]).tolist() == [0, 2, 3, 1]
    assert B.sort_indices([ints], [False]).tolist() == [1, 3, 2, 0]


@pytest.mark.parametrize("dtypes,desc", CASES)
@pytest.mark.parametrize("k", [0, 1, 5, 50, 2999, 5000])
def test_topk_matches_sort_prefix(dtypes, desc, k):
    rng = np.random.default_rng(k + 17)
    n = 2999
    keys = [random_key(rng, d, n, 8) for d in dtypes]  # few distinct values: many ties
    got = B.topk_indices(keys, desc, k)
    want = B.sort_indices(keys, desc)[:k]
    assert got.dtype == np.int64
    assert np.array_equal(got, want)
    assert np.array_equal(want, ref_sort(keys, desc)[:k])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.sampled_from([0.0, -0.0, math.nan, -2.0, 3.0])), max_size=50),
       st.lists(st.booleans(), min_size=2, max_size=2), st.integers(0, 60))
def test_sort_and_topk_property(rows, desc, k):
    keys = [np.array([r[0] for r in rows], np.int32), np.array([r[1] for r in rows], np.float64)]
    want = ref_sort(keys, desc)
    assert np.array_equal(B.sort_indices(keys, desc), want)
    assert np.array_equal(B.topk_indices(keys, desc, k), want[:k])


@pytest.mark.parametrize("n", [0, 1, 17, 100_003])
@pytest.mark.parametrize("parts", [2, 3, 8])
def test_partitioned_sort_equals_numpy(n, parts):
    from hetdb.backend.cpu.sort import _partitioned_sort

    rng = np.random.default_rng(n + parts)
    for a in (rng.integers(-(2**62), 2**62, n), rng.integers(0, 5, n), np.sort(rng.integers(0, 1000, n))[::-1]):
        a = np.ascontiguousarray(a, dtype=np.int64)
        out = _partitioned_sort(a, parts)
        assert out.shape[0] == n
        assert np.array_equal(out, np.sort(a))


def test_parallel_packed_sort_is_the_stable_order(monkeypatch):
    import hetdb.backend.cpu.sort as S

    monkeypatch.setattr(S, "PARALLEL_SORT_ROWS", 1 << 10)
    monkeypatch.setattr(S, "kernel_threads", lambda: 4)
    rng = np.random.default_rng(3)
    keys = [rng.integers(-50, 50, 50_000), rng.integers(0, 3, 50_000).astype(np.int32)]
    got = S.sort_indices(keys, [True, False])
    want = np.lexsort([keys[1], -keys[0]])
    assert got.shape[0] == 50_000
    assert np.array_equal(got, want)
