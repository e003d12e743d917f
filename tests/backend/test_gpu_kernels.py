"""GPU kernels against NumPy/Python references (and the CPU backend where it exists)."""

from __future__ import annotations

import gc
import os
import re

import numpy as np
import pytest

from hetdb.backend.base import HASH_SEED
from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

os.environ.setdefault("HETDB_CHECK_LAUNCHES", "1")  # surface asynchronous kernel faults at their launch

SIZES = [0, 1, 1023, 1025, 5000]  # the kernels' tile is 1024 rows
M64 = (1 << 64) - 1


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    os.environ["HETDB_KERNEL_CACHE"] = str(tmp_path_factory.mktemp("kernel-cache"))
    from hetdb.backend.gpu import GpuBackend
    from hetdb.backend.gpu.compile import get_module

    get_module.cache_clear()
    return GpuBackend()


@pytest.fixture(scope="module")
def cpu():
    try:
        from hetdb.backend.cpu import CpuBackend
    except Exception:  # the CPU backend (or numba) is not there: compare with NumPy only
        return None
    return CpuBackend()


@pytest.fixture(scope="module", autouse=True)
def pool_baseline():
    import cupy

    gc.collect()
    return cupy.get_default_memory_pool().used_bytes()


def h(gpu, a):
    return gpu.to_host(a)


# ---- references --------------------------------------------------------------------------------------
def bits(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.float64:
        b = a.copy()
        b[b == 0] = 0.0
        out = b.view(np.int64).copy()
        out[np.isnan(a)] = 0x7FF8000000000000
        return out
    return a.astype(np.int64)


def ref_hash(keys):
    hv = np.full(len(keys[0]), HASH_SEED, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in keys:
            z = hv ^ bits(k).view(np.uint64)
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            hv = z ^ (z >> np.uint64(31))
    return hv


def rows_of(keys):
    return list(zip(*[bits(k).tolist() for k in keys]))


def ref_group_ids(keys):
    ids: dict = {}
    gid = np.array([ids.setdefault(r, len(ids)) for r in rows_of(keys)], dtype=np.int64)
    firsts = np.zeros(len(ids), np.int64)
    for i in range(len(gid) - 1, -1, -1):
        firsts[gid[i]] = i
    return gid, len(ids), firsts


def random_keys(rng, n, kind):
    if kind == "int32":
        return [rng.integers(-50, 50, n).astype(np.int32)]
    if kind == "skewed":
        return [np.where(rng.random(n) < 0.8, 7, rng.integers(0, 10**12, n)).astype(np.int64)]
    if kind == "dups":
        return [np.full(n, -1, dtype=np.int64)]
    if kind == "float":
        v = rng.choice([0.0, -0.0, np.nan, -np.nan, 1.5, -2.25, np.inf], n)
        return [v.astype(np.float64)]
    return [rng.integers(0, 5, n).astype(np.int64), rng.random(n) < 0.5,
            rng.choice([0.0, -0.0, np.nan, 3.0], n)]  # multi-key


KEY_KINDS = ["int32", "skewed", "dups", "float", "multi"]


# ---- hashing, grouping, joins ----------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_hash_keys(gpu, cpu, n, kind):
    keys = random_keys(np.random.default_rng(n), n, kind)
    got = h(gpu, gpu.hash_keys([gpu.asarray(k) for k in keys]))
    assert got.dtype == np.uint64 and got.shape == (n,)
    np.testing.assert_array_equal(got, ref_hash(keys))
    if cpu is not None:
        np.testing.assert_array_equal(got, cpu.hash_keys(keys))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_group_ids(gpu, cpu, n, kind):
    keys = random_keys(np.random.default_rng(n + 1), n, kind)
    gid, ng, firsts = gpu.group_ids([gpu.asarray(k) for k in keys])
    rg, rng_, rf = ref_group_ids(keys)
    assert ng == rng_
    np.testing.assert_array_equal(h(gpu, gid), rg)
    np.testing.assert_array_equal(h(gpu, firsts), rf)
    if cpu is not None:
        cg, cn, cf = cpu.group_ids(keys)
        assert cn == ng
        np.testing.assert_array_equal(h(gpu, gid), cg)
        np.testing.assert_array_equal(h(gpu, firsts), cf)


def test_group_ids_without_keys(gpu):
    gid, ng, firsts = gpu.group_ids([], num_rows=5)
    assert ng == 1 and h(gpu, gid).tolist() == [0] * 5 and h(gpu, firsts).tolist() == [0]
    assert gpu.group_ids([], num_rows=0)[1] == 0


def ref_join(bkeys, pkeys):
    index: dict = {}
    for i, r in enumerate(rows_of(bkeys)):
        index.setdefault(r, []).append(i)
    return [index.get(r, []) for r in rows_of(pkeys)]


@pytest.mark.parametrize("nb,np_", [(0, 10), (10, 0), (1, 1), (1025, 3000), (3000, 1023)])
@pytest.mark.parametrize("kind", KEY_KINDS)
def test_join_all_kinds(gpu, cpu, nb, np_, kind):
    rng = np.random.default_rng(nb * 7 + np_)
    if kind == "dups":  # every probe row matches every build row: keep the product small
        nb, np_ = min(nb, 50), min(np_, 50)
    bkeys = random_keys(rng, nb, kind)
    pkeys = random_keys(rng, np_, kind)
    matches = ref_join(bkeys, pkeys)
    table = gpu.join_build([gpu.asarray(k) for k in bkeys])
    assert table.num_rows == nb
    dp = [gpu.asarray(k) for k in pkeys]
    inner = [(j, b) for j, bs in enumerate(matches) for b in bs]
    left = [(j, b) for j, bs in enumerate(matches) for b in (bs or [-1])]
    p, b = gpu.join_probe(table, dp, "inner")
    assert list(zip(h(gpu, p).tolist(), h(gpu, b).tolist())) == inner
    p, b = gpu.join_probe(table, dp, "left")
    assert list(zip(h(gpu, p).tolist(), h(gpu, b).tolist())) == left
    mark = np.array([bool(m) for m in matches], dtype=bool)
    np.testing.assert_array_equal(h(gpu, gpu.join_probe(table, dp, "mark")), mark)
    np.testing.assert_array_equal(h(gpu, gpu.join_probe(table, dp, "semi")), np.flatnonzero(mark))
    np.testing.assert_array_equal(h(gpu, gpu.join_probe(table, dp, "anti")), np.flatnonzero(~mark))
    bm = np.zeros(nb, dtype=bool)
    bm[[b for _, b in inner]] = True
    np.testing.assert_array_equal(h(gpu, gpu.join_probe(table, dp, "build_matched")), bm)
    if cpu is not None:
        ct = cpu.join_build(bkeys)
        for k in ("inner", "left"):
            cp, cb = cpu.join_probe(ct, pkeys, k)
            gp, gb = gpu.join_probe(table, dp, k)
            np.testing.assert_array_equal(h(gpu, gp), cp)
            np.testing.assert_array_equal(h(gpu, gb), cb)
    assert len(matches) == np_


# ---- aggregation ---------------------------------------------------------------------------------
def ref_aggregate(op, values, gid, ng, valid):
    sel = np.ones(len(gid), bool) if valid is None else valid
    res, ok = [], []
    for g in range(ng):
        rows = np.flatnonzero((gid == g) & sel)
        if op == "count":
            res.append(len(rows))
            ok.append(True)
            continue
        if op == "count_star":
            res.append(int(np.sum(gid == g)))
            ok.append(True)
            continue
        ok.append(len(rows) > 0)
        v = values[rows]
        if not len(rows):
            res.append(None)
        elif op == "sum":
            with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as on the GPU
                res.append(v.sum(dtype=np.float64 if values.dtype == np.float64 else np.int64))
        elif op == "any":
            res.append(v[0])
        elif values.dtype == np.float64 and np.isnan(v).any():
            res.append(np.nan if op == "max" else (np.nanmin(v) if (~np.isnan(v)).any() else np.nan))
        else:
            res.append(v.min() if op == "min" else v.max())
    return res, np.array(ok)


def check_agg(got, ok, ref, rok, dtype, op):
    np.testing.assert_array_equal(ok, rok)
    for g, r in enumerate(ref):
        if r is None:
            continue
        if dtype == np.float64 and op == "sum":
            assert got[g] == pytest.approx(r, rel=1e-9, abs=1e-9, nan_ok=True)
        elif dtype == np.float64:
            assert (np.isnan(got[g]) and np.isnan(r)) or got[g] == r
        else:
            assert got[g] == r


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("ng_kind", ["few", "many"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.bool_])
@pytest.mark.parametrize("op", ["sum", "count", "count_star", "min", "max", "any"])
def test_aggregate(gpu, cpu, n, ng_kind, dtype, op):
    rng = np.random.default_rng(n + len(op))
    ng = 0 if n == 0 else (min(n, 7) if ng_kind == "few" else max(1, n // 2))
    gid = rng.integers(0, max(ng, 1), n).astype(np.int64) if ng else np.zeros(n, np.int64)
    if dtype == np.float64:
        values = rng.choice([1.5, -2.0, 0.0, -0.0, np.nan, np.inf, -np.inf, 1e300], n)
    elif dtype == np.bool_:
        values = rng.random(n) < 0.5
    else:
        big = 2**40 if dtype == np.int64 else 2**30
        values = rng.integers(-big, big, n).astype(dtype)
    valid = rng.random(n) < 0.7
    for vmask in (None, valid):
        got, ok = gpu.aggregate(op, gpu.asarray(values), gpu.asarray(gid), ng,
                                None if vmask is None else gpu.asarray(vmask))
        got, ok = h(gpu, got), h(gpu, ok)
        ref, rok = ref_aggregate(op, values, gid, ng, vmask)
        assert len(got) == ng
        check_agg(got, ok, ref, rok, np.dtype(dtype), op)
        if op in ("min", "max", "any"):
            assert got.dtype == np.dtype(dtype)
        if cpu is not None:
            cg, cok = cpu.aggregate(op, values, gid, ng, vmask)
            np.testing.assert_array_equal(ok, cok)
            sel = np.asarray(ok, bool)
            if np.dtype(dtype) == np.float64 and op == "sum":
                np.testing.assert_allclose(got[sel], cg[sel], rtol=1e-9)
            else:
                np.testing.assert_array_equal(got[sel], cg[sel])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
def test_count_distinct(gpu, cpu, n, dtype):
    rng = np.random.default_rng(n)
    ng = max(1, n // 100) if n else 0
    gid = rng.integers(0, max(ng, 1), n).astype(np.int64)
    if dtype == np.float64:
        values = rng.choice([0.0, -0.0, np.nan, -np.nan, 1.0, 2.0], n)
    else:
        values = rng.integers(0, 20, n).astype(dtype)
    valid = rng.random(n) < 0.8
    got = h(gpu, gpu.count_distinct(gpu.asarray(values), gpu.asarray(gid), ng, gpu.asarray(valid)))
    ref = [len({bits(values[i:i + 1])[0] for i in np.flatnonzero((gid == g) & valid)}) for g in range(ng)]
    assert got.tolist() == ref
    if cpu is not None:
        np.testing.assert_array_equal(got, cpu.count_distinct(values, gid, ng, valid))


# ---- sorting ---------------------------------------------------------------------------------------
def ref_sort(keys, desc):
    def key(i):
        parts = []
        for k, d in zip(keys, desc):
            v = k[i]
            if k.dtype == np.float64:
                v = (1, 0.0) if np.isnan(v) else (0, float(v) + 0.0)
                if d:
                    v = (-v[0], -v[1])
            else:
                v = -int(v) if d else int(v)
            parts.append(v)
        return tuple(parts)
    return sorted(range(len(keys[0])), key=key)  # Python's sort is stable


@pytest.mark.parametrize("n", SIZES)
def test_sort_and_topk(gpu, cpu, n):
    rng = np.random.default_rng(n)
    keys = [rng.integers(0, 3, n).astype(np.int32), rng.choice([np.nan, -0.0, 0.0, 1.0, -np.inf], n),
            rng.integers(-5, 5, n).astype(np.int64), rng.random(n) < 0.5]
    for desc in ([False, False, False, False], [True, False, True, False], [False, True, False, True]):
        got = h(gpu, gpu.sort_indices([gpu.asarray(k) for k in keys], desc))
        assert got.tolist() == ref_sort(keys, desc)
        top = h(gpu, gpu.topk_indices([gpu.asarray(k) for k in keys], desc, 10))
        assert top.tolist() == got[:10].tolist()
        if cpu is not None:
            np.testing.assert_array_equal(got, cpu.sort_indices(keys, desc))


# ---- selection -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", SIZES)
def test_nonzero_and_gather(gpu, n):
    rng = np.random.default_rng(n)
    mask = rng.random(n) < 0.3
    idx = h(gpu, gpu.nonzero(gpu.asarray(mask)))
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(idx, np.flatnonzero(mask))
    vals = rng.random(n)
    np.testing.assert_array_equal(h(gpu, gpu.gather(gpu.asarray(vals), gpu.asarray(idx))), vals[idx])
    assert h(gpu, gpu.gather(gpu.asarray(vals), gpu.asarray(np.full(3, -1, np.int64)))).shape == (3,)


# ---- strings ---------------------------------------------------------------------------------------
WORDS = ["", "a", "abc", "ABC", "héllo", "hello", "wörld", "日本語", "aXbXc", "%_", "abcabc", "Straße",
         "\x00", "a\x00", "zz", "ÉCOLE", "école", "a" * 40]


def make_strings(rng, n):
    strs = [WORDS[i] for i in rng.integers(0, len(WORDS), n)]
    enc = [s.encode() for s in strs]
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.cumsum([len(e) for e in enc]) if n else []
    return strs, offsets, np.frombuffer(b"".join(enc), np.uint8).copy()


def like_regex(pattern):
    body = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(body, re.DOTALL)


PATTERNS = ["%", "", "a%", "%c", "%b%", "_", "__", "h_llo", "%l_o", "a%b%c", "%%a", "日%", "%ß%", "ABC",
            "%é%", "_____", "a%a%a%a"]


@pytest.mark.parametrize("n", SIZES)
def test_like(gpu, cpu, n):
    strs, off, chars = make_strings(np.random.default_rng(n), n)
    d_off, d_chars = gpu.asarray(off), gpu.asarray(chars)
    for pattern in PATTERNS:
        for ci in (False, True):
            got = h(gpu, gpu.like(d_off, d_chars, pattern, ci))
            rx = like_regex(pattern.lower() if ci else pattern)
            ref = [bool(rx.fullmatch(s.lower() if ci else s)) for s in strs]
            assert got.tolist() == ref, (pattern, ci)
            if cpu is not None:
                np.testing.assert_array_equal(got, cpu.like(off, chars, pattern, ci))


@pytest.mark.parametrize("n", SIZES)
def test_compare_string_scalar(gpu, cpu, n):
    strs, off, chars = make_strings(np.random.default_rng(n), n)
    ops = {"=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
           "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
    for lit in ["abc", "", "héllo", "a", "zz", "日本語"]:
        for op, f in ops.items():
            got = h(gpu, gpu.compare_string_scalar(gpu.asarray(off), gpu.asarray(chars), lit, op))
            assert got.tolist() == [f(s.encode(), lit.encode()) for s in strs]
            if cpu is not None:
                np.testing.assert_array_equal(got, cpu.compare_string_scalar(off, chars, lit, op))


def decode(gpu, off, chars):
    off, chars = h(gpu, off), h(gpu, chars).tobytes()
    return [chars[off[i]:off[i + 1]].decode() for i in range(len(off) - 1)]


def ref_substring(s, start, length):
    # DuckDB's rules (checked against DuckDB 1.x): see strings.cu substring_bounds.
    n = len(s)
    b = start - 1 if start > 0 else (n + start if start < 0 else -1)
    if length is None:
        e = n
    elif length >= 0:
        e = b + length
    else:
        b, e = b + length, b
    b = min(max(b, 0), n)
    e = min(max(e, b), n)
    return s[b:e]


@pytest.mark.parametrize("n", SIZES)
def test_substring_and_gather_strings(gpu, cpu, n):
    rng = np.random.default_rng(n)
    strs, off, chars = make_strings(rng, n)
    d_off, d_chars = gpu.asarray(off), gpu.asarray(chars)
    for start, length in [(1, 2), (2, None), (0, 2), (-2, 2), (-2, None), (7, 2), (-10, 12), (2, -1),
                          (4, -2), (1, 0), (3, 100)]:
        got = decode(gpu, *gpu.substring(d_off, d_chars, start, length))
        assert got == [ref_substring(s, start, length) for s in strs], (start, length)
        if cpu is not None:
            co, cc = cpu.substring(off, chars, start, length)
            assert got == decode(gpu, gpu.asarray(co), gpu.asarray(cc))
    idx = rng.integers(0, max(n, 1), n // 2).astype(np.int64) if n else np.zeros(0, np.int64)
    got = decode(gpu, *gpu.gather_strings(d_off, d_chars, gpu.asarray(idx)))
    assert got == [strs[i] for i in idx]


@pytest.mark.parametrize("n", [*SIZES, 70_000])  # 70,000: past HOST_FACTORIZE_ROWS, numbered on the GPU
def test_factorize_strings(gpu, cpu, n):
    strs, off, chars = make_strings(np.random.default_rng(n), n)
    codes, u_off, u_chars = gpu.factorize_strings(gpu.asarray(off), gpu.asarray(chars))
    uniques = sorted(set(strs), key=lambda s: s.encode())
    assert decode(gpu, u_off, u_chars) == uniques
    assert h(gpu, codes).dtype == np.int32
    assert [uniques[c] for c in h(gpu, codes)] == strs


# ---- larger inputs: many tiles per block, shared and global aggregation paths, long probe chains ----
BIG = 3_000_000


@pytest.mark.parametrize("num_groups", [100, 1_000_000])
def test_large_aggregate(gpu, num_groups):
    rng = np.random.default_rng(num_groups)
    gid = rng.integers(0, num_groups, BIG).astype(np.int64)
    values = rng.integers(-1000, 1000, BIG).astype(np.int32)
    valid = rng.random(BIG) < 0.9
    d = [gpu.asarray(a) for a in (values, gid, valid)]
    got, ok = gpu.aggregate("sum", d[0], d[1], num_groups, d[2])
    ref = np.bincount(gid[valid], weights=values[valid], minlength=num_groups).astype(np.int64)
    np.testing.assert_array_equal(h(gpu, got), ref)
    np.testing.assert_array_equal(h(gpu, ok), np.bincount(gid[valid], minlength=num_groups) > 0)
    got, _ = gpu.aggregate("max", d[0], d[1], num_groups, d[2])
    ref = np.full(num_groups, np.iinfo(np.int32).min, np.int32)
    np.maximum.at(ref, gid[valid], values[valid])
    sel = h(gpu, ok)
    np.testing.assert_array_equal(h(gpu, got)[sel], ref[sel])
    assert sel.sum() > 0


def test_large_group_ids_join_sort(gpu):
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 400_000, BIG).astype(np.int64)
    gid, ng, firsts = gpu.group_ids([gpu.asarray(keys)])
    uniq, first_idx, inv = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first_idx)
    rank = np.empty(len(uniq), np.int64)
    rank[order] = np.arange(len(uniq))
    assert ng == len(uniq)
    np.testing.assert_array_equal(h(gpu, gid), rank[inv])
    np.testing.assert_array_equal(h(gpu, firsts), first_idx[order])

    build = rng.integers(0, 1_000_000, 500_000).astype(np.int64)
    probe = keys
    table = gpu.join_build([gpu.asarray(build)])
    p, b = (h(gpu, a) for a in gpu.join_probe(table, [gpu.asarray(probe)], "inner"))
    bu, bc = np.unique(build, return_counts=True)
    pos = np.clip(np.searchsorted(bu, probe), 0, len(bu) - 1)
    per_probe = np.where(bu[pos] == probe, bc[pos], 0)
    assert len(p) == per_probe.sum() > 0
    np.testing.assert_array_equal(build[b], probe[p])
    assert np.all(np.diff(p) >= 0) and np.all((np.diff(p) > 0) | (np.diff(b) > 0))
    np.testing.assert_array_equal(h(gpu, gpu.join_probe(table, [gpu.asarray(probe)], "semi")),
                                  np.flatnonzero(per_probe > 0))

    k2 = rng.integers(0, 50, BIG).astype(np.int32)
    got = h(gpu, gpu.sort_indices([gpu.asarray(k2), gpu.asarray(keys)], [False, True]))
    np.testing.assert_array_equal(got, np.lexsort((-keys, k2)))


def test_cpu_backend_compared(cpu):
    if cpu is None:
        pytest.skip("hetdb.backend.cpu.CpuBackend is not importable here: kernels were compared "
                    "with NumPy references only")
    assert cpu.name == "cpu"


# ---- infrastructure --------------------------------------------------------------------------------
def test_kernel_disk_cache(gpu):
    from hetdb.backend.gpu.compile import cache_dir, get_module

    mod = get_module("strings.cu")
    assert mod.cache_path is not None and mod.cache_path.is_file()
    assert any(cache_dir().glob("*.cubin"))
    get_module.cache_clear()
    again = get_module("strings.cu")  # loaded from disk this time
    assert again.cache_path == mod.cache_path


def test_memory_helpers(gpu):
    import cupy

    from hetdb.backend.gpu.memory import (
        DeviceMemoryBudget,
        new_stream,
        pinned_empty,
        pool_usage,
        to_device_async,
    )
    from hetdb.errors import OutOfMemoryError

    host = pinned_empty(1000, np.int64)
    host[:] = np.arange(1000)
    stream = new_stream()
    dev = to_device_async(host, stream)
    stream.synchronize()
    assert int(dev.sum()) == 999 * 1000 // 2
    del dev
    budget = DeviceMemoryBudget(1 << 20)
    budget.reserve(1 << 19)
    with pytest.raises(OutOfMemoryError):
        budget.reserve(1 << 20)
    budget.release(1 << 19)
    assert budget.used_bytes == 0
    assert pool_usage()["device_used_bytes"] >= 0
    cupy.cuda.Device().synchronize()


def test_device_info_and_bandwidth(gpu):
    from hetdb.backend.gpu import device_info, measure_bandwidth

    info = device_info()
    assert info["total_memory_bytes"] > 0 and "." in info["compute_capability"]
    bw = measure_bandwidth(8 << 20, repeats=2)
    assert set(bw) == {"h2d_pinned_gbps", "h2d_pageable_gbps", "d2h_pinned_gbps", "d2d_gbps"}
    assert all(v > 0 for v in bw.values())
    print(info, bw)


def test_zz_no_leaked_device_memory(gpu, pool_baseline):
    import cupy

    gc.collect()
    assert cupy.get_default_memory_pool().used_bytes() <= pool_baseline
