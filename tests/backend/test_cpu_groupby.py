"""CPU backend: group_ids, aggregate and count_distinct against pure-Python references."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetdb.backend.cpu import CpuBackend

B = CpuBackend()


def norm(v):
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return ("nan",)
        return struct.pack("<d", f + 0.0)
    return int(v)


def ref_group_ids(keys: list[np.ndarray]):
    n = len(keys[0])
    seen: dict[tuple, int] = {}
    gid, firsts = [], []
    for i in range(n):
        k = tuple(norm(c[i]) for c in keys)
        if k not in seen:
            seen[k] = len(seen)
            firsts.append(i)
        gid.append(seen[k])
    return np.array(gid, np.int64), len(seen), np.array(firsts, np.int64)


def check_group_ids(keys) -> int:
    gid, ng, firsts = B.group_ids(keys)
    rg, rng_, rf = ref_group_ids(keys)
    assert gid.dtype == np.int64 and firsts.dtype == np.int64
    assert ng == rng_
    assert np.array_equal(gid, rg) and np.array_equal(firsts, rf)
    return ng


@pytest.mark.parametrize("n", [1, 7, 1000, 70_001])
def test_group_ids_single_small_range_int(n):
    rng = np.random.default_rng(n)
    assert check_group_ids([rng.integers(-20, 30, n).astype(np.int32)]) > 0


def test_group_ids_small_range_multi_key_and_bool():
    rng = np.random.default_rng(2)
    n = 140_003  # several parallel chunks
    keys = [rng.integers(0, 5, n), rng.integers(0, 2, n).astype(bool), rng.integers(-3, 4, n).astype(np.int32)]
    assert check_group_ids(keys) == 5 * 2 * 7


def test_group_ids_large_range_hash_path():
    rng = np.random.default_rng(3)
    n = 30_011
    keys = [rng.integers(-(2**62), 2**62, 500)[rng.integers(0, 500, n)]]
    assert check_group_ids(keys) > 400
    # Skewed multi-key with negative ints and big values takes the hash path with growth.
    keys = [np.where(rng.random(n) < 0.7, 5, rng.integers(0, 10**12, n)), rng.integers(-5, 5, n)]
    assert check_group_ids(keys) > 1000


def test_group_ids_floats_nan_and_signed_zero():
    rng = np.random.default_rng(4)
    pool = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, -1.5, np.inf, -np.inf, 2.5e-300])
    keys = [pool[rng.integers(0, len(pool), 5003)], rng.integers(0, 3, 5003)]
    ng = check_group_ids(keys)
    assert ng == 7 * 3
    g, n1, _ = B.group_ids([np.array([0.0, -0.0, np.nan, -np.nan])])
    assert n1 == 2 and g.tolist() == [0, 0, 1, 1]


def test_group_ids_empty_and_no_keys():
    gid, ng, firsts = B.group_ids([np.zeros(0, np.int64)])
    assert gid.shape == (0,) and ng == 0 and firsts.shape == (0,)
    gid, ng, firsts = B.group_ids([], num_rows=5)
    assert gid.tolist() == [0] * 5 and ng == 1 and firsts.tolist() == [0]
    assert B.group_ids([], num_rows=0)[1] == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**40), 2**40), st.sampled_from([0.0, -0.0, math.nan, 1.0])),
                max_size=60))
def test_group_ids_property(rows):
    keys = [np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.float64)]
    check_group_ids(keys)


def ref_aggregate(op, values, gid, ng, valid):
    out, ok = [None] * ng, [False] * ng
    for i in range(len(gid)):
        g = gid[i]
        if op == "count_star":
            out[g] = (out[g] or 0) + 1
            continue
        if valid is not None and not valid[i]:
            continue
        v = values[i].item() if values is not None else None
        ok[g] = True
        if op == "count":
            out[g] = (out[g] or 0) + 1
        elif op == "sum":
            out[g] = v if out[g] is None else out[g] + v
        elif op == "any":
            out[g] = v if out[g] is None else out[g]
        elif out[g] is None:
            out[g] = v
        else:
            a, b = float(v), float(out[g])
            # NaN above every number
            if op == "max" and (math.isnan(a) or (not math.isnan(b) and a > b)) and not math.isnan(b):
                out[g] = v
            if op == "min" and not math.isnan(a) and (math.isnan(b) or a < b):
                out[g] = v
    if op in ("count", "count_star"):
        return [x or 0 for x in out], [True] * ng
    return out, ok


def check_aggregate(op, values, gid, ng, valid) -> int:
    got, got_ok = B.aggregate(op, values, gid, ng, valid)
    want, want_ok = ref_aggregate(op, values, gid, ng, valid)
    assert got_ok.dtype == np.bool_ and got_ok.tolist() == want_ok
    assert len(got) == ng
    if op in ("count", "count_star"):
        assert got.dtype == np.int64
    elif op == "sum":
        assert got.dtype == (np.float64 if values.dtype == np.float64 else np.int64)
    else:
        assert got.dtype == values.dtype
    compared = 0
    for g in range(ng):
        if not want_ok[g]:
            continue
        compared += 1
        w, x = want[g], got[g]
        if values is not None and values.dtype == np.float64 and op != "count":
            if math.isnan(w):
                assert math.isnan(x)
            else:
                assert x == pytest.approx(w, rel=1e-9, abs=1e-6)
        else:
            assert int(x) == int(w)
    return compared


OPS = ["sum", "count", "count_star", "min", "max", "any"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "float64", "bool"])
@pytest.mark.parametrize("with_valid", [False, True])
def test_aggregate_random(op, dtype, with_valid):
    if dtype == "bool" and op == "sum":
        pytest.skip("SUM of BOOLEAN is not SQL")
    rng = np.random.default_rng(len(op) * 7 + len(dtype) + with_valid)
    n = 100_003
    ng = 37
    gid = rng.integers(0, ng - 1, n)  # the last group gets no rows
    if dtype == "float64":
        values = rng.standard_normal(n) * 1e3
        values[rng.random(n) < 0.01] = np.nan
        values[(gid == 3) & (rng.random(n) < 0.5)] = np.nan
    elif dtype == "bool":
        values = rng.random(n) < 0.5
    elif dtype == "int32":
        values = rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32)
    else:
        values = rng.integers(-(2**40), 2**40, n)
    valid = (rng.random(n) < 0.8) if with_valid else None
    if valid is not None:
        valid[gid == 5] = False
    assert check_aggregate(op, values, gid, ng, valid) > 0


def test_aggregate_int32_sum_does_not_wrap():
    values = np.full(10, 2**31 - 1, np.int32)
    got, _ = B.aggregate("sum", values, np.zeros(10, np.int64), 1)
    assert got.tolist() == [10 * (2**31 - 1)]


def test_aggregate_many_groups_and_empty():
    rng = np.random.default_rng(9)
    n = 50_001
    ng = 40_000
    gid = rng.integers(0, ng, n)
    values = rng.integers(-100, 100, n)
    assert check_aggregate("sum", values, gid, ng, None) > 0
    assert check_aggregate("min", values, gid, ng, None) > 0
    got, ok = B.aggregate("sum", np.zeros(0, np.int64), np.zeros(0, np.int64), 3)
    assert got.tolist() == [0, 0, 0] and ok.tolist() == [False] * 3


def test_aggregate_float_nan_ordering():
    values = np.array([1.0, np.nan, -5.0, np.nan, np.nan])
    gid = np.array([0, 0, 0, 1, 1])
    mx, _ = B.aggregate("max", values, gid, 2)
    mn, _ = B.aggregate("min", values, gid, 2)
    assert math.isnan(mx[0]) and mn[0] == -5.0
    assert math.isnan(mx[1]) and math.isnan(mn[1])


def ref_count_distinct(values, gid, ng, valid):
    sets: list[set] = [set() for _ in range(ng)]
    for i in range(len(gid)):
        if valid is None or valid[i]:
            sets[gid[i]].add(norm(values[i]))
    return [len(s) for s in sets]


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64", "bool"])
def test_count_distinct(dtype):
    rng = np.random.default_rng(11)
    n = 20_011
    ng = 13
    gid = rng.integers(0, ng, n)
    if dtype == "float64":
        values = np.array([0.0, -0.0, np.nan, -np.nan, 1.0, 2.0, 3.5])[rng.integers(0, 7, n)]
    elif dtype == "bool":
        values = rng.random(n) < 0.5
    elif dtype == "int32":
        values = rng.integers(-500, 500, n).astype(np.int32)
    else:
        values = rng.integers(-(2**60), 2**60, 3000)[rng.integers(0, 3000, n)]
    valid = rng.random(n) < 0.9
    valid[gid == 2] = False
    got = B.count_distinct(values, gid, ng, valid)
    want = ref_count_distinct(values, gid, ng, valid)
    assert got.dtype == np.int64 and got.tolist() == want and sum(want) > 0
    assert B.count_distinct(values, gid, ng).tolist() == ref_count_distinct(values, gid, ng, None)
    assert B.count_distinct(values[:0], gid[:0], ng).tolist() == [0] * ng


@pytest.mark.parametrize("n,size", [(100_003, 1_000), (50_000, 200_000), (3, 2), (20_000, 1)])
def test_parallel_dense_numbering_matches_the_serial_pass(n, size) -> None:
    """The final merge's dense group numbering on several threads: the same ids and first rows
    (first-appearance order) as the serial pass, for any number of row chunks."""
    from hetdb.backend.cpu import groupby as G

    rng = np.random.default_rng(n + size)
    codes = rng.integers(0, size, n).astype(np.int64)
    gid, firsts = G._dense_group_ids(codes, size)
    assert firsts.shape[0] == len(set(codes.tolist()))
    for chunks in (1, 2, 7, 64):
        pgid, pfirsts = G._dense_group_ids_parallel(codes, size, chunks)
        assert np.array_equal(pgid, gid) and np.array_equal(pfirsts, firsts), chunks
