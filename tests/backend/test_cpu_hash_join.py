"""CPU backend: hash_keys against a pure-Python splitmix64, joins against a nested-loop reference."""

from __future__ import annotations

import math
import struct
import zlib

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetdb.backend.base import HASH_SEED, Backend
from hetdb.backend.cpu import CpuBackend

B = CpuBackend()
M64 = (1 << 64) - 1


def ref_splitmix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def ref_bits(v) -> int:
    if isinstance(v, (bool, np.bool_)):
        return int(bool(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return 0x7FF8000000000000
        if f == 0.0:
            f = 0.0
        return struct.unpack("<Q", struct.pack("<d", f))[0]
    return int(v) & M64


def ref_hash(row) -> int:
    h = HASH_SEED
    for v in row:
        h = ref_splitmix64(h ^ ref_bits(v))
    return h


def norm(v):
    """A Python value that is equal exactly when SQL keys are equal."""
    return ref_bits(v)


def rows_of(keys: list[np.ndarray]) -> list[tuple]:
    return [tuple(norm(k[i]) for k in keys) for i in range(len(keys[0]))]


def ref_join(build: list[np.ndarray], probe: list[np.ndarray], kind: str):
    brows, prows = rows_of(build), rows_of(probe)
    index: dict[tuple, list[int]] = {}
    for j, r in enumerate(brows):
        index.setdefault(r, []).append(j)
    if kind in ("inner", "left"):
        pi, bi = [], []
        for i, r in enumerate(prows):
            matches = index.get(r, [])
            for j in matches:
                pi.append(i)
                bi.append(j)
            if kind == "left" and not matches:
                pi.append(i)
                bi.append(-1)
        return np.array(pi, np.int64), np.array(bi, np.int64)
    has = np.array([r in index for r in prows], bool)
    if kind == "mark":
        return has
    if kind == "semi":
        return np.flatnonzero(has)
    if kind == "anti":
        return np.flatnonzero(~has)
    pset = set(prows)
    return np.array([r in pset for r in brows], bool)


def random_keys(rng: np.random.Generator, n: int, dtypes: list[str], card: int) -> list[np.ndarray]:
    out = []
    for dt in dtypes:
        if dt == "float64":
            pool = np.array([0.0, -0.0, np.nan, -np.nan, 1.5, -2.25, np.inf, -np.inf, 1e300, 3.0])
            out.append(pool[rng.integers(0, min(card // 6, len(pool)), n)])
        elif dt == "bool":
            # A small build cardinality holds only True, so probes also have misses.
            out.append(rng.random(n) < (0.5 if card >= 50 else 1.0))
        elif dt == "int32":
            out.append(rng.integers(-card, card, n).astype(np.int32))
        else:
            out.append((rng.integers(-card, card, n) * 1_000_003_000_007).astype(np.int64))
    return out


def test_protocol_and_names():
    assert isinstance(B, Backend)
    assert B.name == "cpu" and B.xp is np


def test_hash_known_values():
    keys = [np.array([0, 1, -1, 2**62, -(2**63)], np.int64)]
    got = B.hash_keys(keys)
    assert got.dtype == np.uint64
    assert [int(x) for x in got] == [ref_hash((v,)) for v in keys[0].tolist()]
    # splitmix64(seed ^ 0) for the single key 0, written out:
    assert int(got[0]) == ref_splitmix64(HASH_SEED)


def test_hash_mixed_dtypes_and_float_canonicalization():
    rng = np.random.default_rng(1)
    n = 1001
    keys = [rng.integers(-50, 50, n).astype(np.int32), rng.integers(0, 2, n).astype(bool),
            rng.standard_normal(n), rng.integers(-(2**62), 2**62, n)]
    keys[2][:4] = [0.0, -0.0, np.nan, -np.nan]
    got = B.hash_keys(keys)
    want = [ref_hash(tuple(k[i] for k in keys)) for i in range(n)]
    assert [int(x) for x in got] == want
    fh = B.hash_keys([keys[2]])
    assert fh[0] == fh[1] and fh[2] == fh[3]
    # Widening must not change the hash: int32 and int64 of the same value agree.
    assert np.array_equal(B.hash_keys([keys[0]]), B.hash_keys([keys[0].astype(np.int64)]))


def test_hash_empty():
    assert B.hash_keys([np.zeros(0, np.int64)]).shape == (0,)


KINDS = ["inner", "semi", "anti", "mark", "left", "build_matched"]


def check_join(build, probe, kind) -> int:
    table = B.join_build(build)
    assert table.num_rows == len(build[0])
    got = B.join_probe(table, probe, kind)
    want = ref_join(build, probe, kind)
    if isinstance(want, tuple):
        assert got[0].dtype == np.int64 and got[1].dtype == np.int64
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        return len(want[0])
    if want.dtype == bool:
        assert got.dtype == np.bool_
    else:
        assert got.dtype == np.int64
    assert np.array_equal(got, want)
    return len(want)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtypes", [["int64"], ["int32"], ["float64"], ["bool"],
                                    ["int32", "int64"], ["float64", "bool", "int32"]])
def test_join_random(kind, dtypes):
    rng = np.random.default_rng(zlib.crc32(repr((kind, dtypes)).encode()))
    build = random_keys(rng, 1237, dtypes, 40)
    probe = random_keys(rng, 2011, dtypes, 60)
    compared = check_join(build, probe, kind)
    assert compared > 0


@pytest.mark.parametrize("kind", KINDS)
def test_join_skewed_duplicates(kind):
    rng = np.random.default_rng(7)
    # One hot key holds most build rows; probe hits it many times.
    build = [np.where(rng.random(3001) < 0.8, 42, rng.integers(0, 1000, 3001)).astype(np.int64)]
    probe = [np.where(rng.random(517) < 0.3, 42, rng.integers(500, 1500, 517)).astype(np.int64)]
    assert check_join(build, probe, kind) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_join_empty_sides(kind):
    e = np.zeros(0, np.int64)
    x = np.array([1, 2, 2], np.int64)
    check_join([e], [x], kind)
    check_join([x], [e], kind)
    check_join([e], [e], kind)


def test_join_hash_collisions_are_verified():
    # Keys -0.0/0.0 and NaNs are equal; distinct values are never matched even when many keys share
    # table neighbourhoods (a dense run of consecutive ints).
    build = [np.arange(-500, 500, dtype=np.int64)]
    probe = [np.arange(-1000, 1000, 3, dtype=np.int64)]
    pi, bi = B.join_probe(B.join_build(build), probe, "inner")
    assert len(pi) > 0
    assert np.array_equal(build[0][bi], probe[0][pi])
    fb = [np.array([0.0, np.nan, 1.0])]
    fp = [np.array([-0.0, -np.nan, 2.0])]
    pi, bi = B.join_probe(B.join_build(fb), fp, "inner")
    assert pi.tolist() == [0, 1] and bi.tolist() == [0, 1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.booleans()), max_size=40),
       st.lists(st.tuples(st.integers(-3, 3), st.booleans()), max_size=40),
       st.sampled_from(KINDS))
def test_join_property(build_rows, probe_rows, kind):
    def cols(rows):
        return [np.array([r[0] for r in rows], np.int32), np.array([r[1] for r in rows], bool)]

    check_join(cols(build_rows), cols(probe_rows), kind)


def test_gather_and_nonzero():
    rng = np.random.default_rng(3)
    mask = rng.random(5003) < 0.3
    idx = B.nonzero(mask)
    assert idx.dtype == np.int64 and np.array_equal(idx, np.flatnonzero(mask))
    vals = rng.standard_normal(5003)
    assert np.array_equal(B.gather(vals, idx), vals[idx])
    big = rng.integers(0, 5003, (1 << 20) + 7)
    assert np.array_equal(B.gather(vals, big), vals[big])
    assert B.gather(vals, np.array([-1, 0])).shape == (2,)
    assert B.gather(np.zeros(0, np.int32), np.array([-1, -1])).shape == (2,)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread")
def test_gather_on_several_kernel_threads_from_fewer_rows(monkeypatch):
    """With several kernel threads a gather of 256k+ rows runs the parallel kernel (bools, ints,
    floats; -1 reads the last value, as NumPy's take)."""
    from hetdb.backend.cpu import backend as cpu_backend
    from hetdb.backend.cpu.keys import kernel_threads, set_kernel_threads

    calls = []
    kernel = cpu_backend._gather
    monkeypatch.setattr(cpu_backend, "_gather", lambda *a: calls.append(1) or kernel(*a))
    rng = np.random.default_rng(5)
    idx = rng.integers(-1, 7001, (1 << 18) + 3)
    before = kernel_threads()
    set_kernel_threads(2)
    try:
        for vals in (rng.standard_normal(7001), rng.integers(-9, 9, 7001).astype(np.int32), rng.random(7001) < 0.5):
            assert np.array_equal(B.gather(vals, idx), np.take(vals, idx))
    finally:
        set_kernel_threads(before)
    assert len(calls) == 3


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread: the one-pass build")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n, span", [(5003, 20011), (4099, 300), (3001, 3001)])
def test_direct_build_by_slot_ranges(kind, n, span, monkeypatch):
    """A direct table of repeated keys built by slot ranges on several kernel threads (join_direct.py)
    gives the one-pass build's answers; the table really was direct and built that way."""
    from hetdb.backend.cpu import join as cpu_join
    from hetdb.backend.cpu import join_direct, tuning
    from hetdb.backend.cpu.keys import kernel_threads, set_kernel_threads

    built = []
    real = join_direct.direct_build_parallel
    monkeypatch.setitem(tuning.values, "direct_parallel_rows", 16)
    monkeypatch.setattr(cpu_join, "direct_build_parallel", lambda *a: built.append(1) or real(*a))
    monkeypatch.setattr(join_direct, "_RANGE_SLOTS", 64)  # many ranges on small inputs
    rng = np.random.default_rng(n + span)
    build = [(rng.integers(0, span, n) - 77).astype(np.int64)]
    probe = [(rng.integers(-5, span + 5, 2 * n) - 77).astype(np.int64)]
    before = kernel_threads()
    set_kernel_threads(max(2, before))
    try:
        table = B.join_build(build)
        assert table.direct is not None and built
        assert table.table.distinct == np.count_nonzero(table.table.key_count) == len(np.unique(build[0]))
        assert table.unique == (len(np.unique(build[0])) == n)
        assert check_join(build, probe, kind) > 0
    finally:
        set_kernel_threads(before)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread: NumPy's fill")
def test_key_matrix_filled_on_kernel_threads_equals_numpy(monkeypatch):
    """key_matrix's parallel fill (large inputs, several kernel threads) gives NumPy's key bits:
    int32 widened, uint64 wrapped, bool as 0/1, floats canonical."""
    from hetdb.backend.cpu import keys, tuning
    from hetdb.backend.cpu.keys import kernel_threads, set_kernel_threads

    rng = np.random.default_rng(5)
    n = 5003
    cols = [rng.integers(-2**31, 2**31 - 1, n).astype(np.int32),
            np.array([2**64 - 1, 2**63, 7] * (n // 3) + [1] * (n % 3), np.uint64),
            rng.random(n) < 0.5, rng.integers(-9, 9, n), np.where(rng.random(n) < 0.1, -0.0, rng.normal(size=n))]
    before = kernel_threads()
    set_kernel_threads(max(2, before))
    try:
        for combo in ([0], [2], [0, 3], [1, 2, 4], [3, 0, 1]):
            ks = [cols[i] for i in combo]
            monkeypatch.setitem(tuning.values, "parallel_matrix_rows", tuning.OFF)
            want = keys.key_matrix(ks)
            monkeypatch.setitem(tuning.values, "parallel_matrix_rows", 16)
            got = keys.key_matrix(ks)
            assert got.dtype == np.int64 and got.flags.c_contiguous and np.array_equal(got, want), combo
    finally:
        set_kernel_threads(before)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("repeats", [True, False])
def test_parallel_build_without_row_keys(kind, repeats, monkeypatch):
    """A hash build by ranges (every build here: threshold 16 rows) leaves the rows' key ids out
    (hashtable.build ``row_keys``); the CSR layout reads them in range order and the operators'
    build_matched gets them made from the layout (unique keys too)."""
    from hetdb.backend.cpu import hashtable

    monkeypatch.setattr(hashtable, "_PARALLEL_BUILD_ROWS", 16)
    rng = np.random.default_rng(31 + repeats)
    n = 20_011
    build = [rng.integers(0, 3000 if repeats else 10**12, n).astype(np.int64) * 7_919]
    probe = [np.concatenate([build[0][rng.integers(0, n, 9000)], rng.integers(0, 10**12, 3000) * 7_919])]
    table = B.join_build(build)
    assert table.direct is None and table.table.row_key.shape[0] == 0 and table.unique != repeats
    assert check_join(build, probe, kind) > 0
