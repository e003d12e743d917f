"""CPU hash table: the parallel build (ranges, deferred rows) and large joins / group-bys that use it."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hetdb.backend.cpu import CpuBackend
from hetdb.backend.cpu import hashtable as ht
from hetdb.backend.cpu.keys import hash_rows, key_matrix, table_capacity

B = CpuBackend()
GOLDEN = 0x9E3779B97F4A7C15
M64 = (1 << 64) - 1


def hashes_for_slots(slots: np.ndarray, shift: int) -> np.ndarray:
    """Hash values whose home slot is exactly ``slots`` (inverting the Fibonacci step)."""
    inv = pow(GOLDEN, -1, 1 << 64)
    return np.array([((int(s) << shift) * inv) & M64 for s in slots], np.uint64)


def ref_inner(bk: np.ndarray, pk: np.ndarray):
    order = np.argsort(bk, kind="stable")
    sk = bk[order]
    lo = np.searchsorted(sk, pk, "left")
    hi = np.searchsorted(sk, pk, "right")
    counts = hi - lo
    pidx = np.repeat(np.arange(len(pk)), counts)
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    bidx = order[np.arange(counts.sum()) + starts]
    return pidx, bidx


@pytest.mark.parametrize("descending", [False, True])
def test_parallel_build_with_deferred_rows(descending):
    if numba.get_num_threads() < 2:
        pytest.skip("the parallel build needs at least two Numba threads")
    rng = np.random.default_rng(1)
    n = 300_007
    keys = rng.integers(0, 60_000, n).astype(np.int64)
    cap, shift = table_capacity(n)
    nparts = 1 << min(int(4 * numba.get_num_threads() - 1).bit_length(), 10, cap.bit_length() - 1 - 4)
    span = cap // nparts
    # Most keys get a home slot spread over the table; 2,000 keys pile up just before the end of the
    # first range so their probes must run past it (deferred) and one cluster wraps past the last slot.
    home = (keys * 7919) % cap
    home = np.where(keys < 2000, span - 40 + keys % 60, home)
    home = np.where((keys >= 2000) & (keys < 2100), cap - 30 + keys % 20, home)
    hashes = hashes_for_slots(home, int(shift))
    # Two key columns: the forged hashes collide across keys, and a one-column table trusts a hash
    # match (row_hash is a bijection there), so only several columns exercise the key comparison.
    km = key_matrix([keys, keys % 7])
    table = ht.build(km, hashes, descending=descending, chain=descending)
    used = np.flatnonzero(table.key_count > 0)
    assert len(used) == len(np.unique(keys)) == table.distinct  # (deferred rows counted too)
    rep_keys = keys[table.key_rep[used]]
    assert len(np.unique(rep_keys)) == len(used)  # one id per distinct key
    assert np.array_equal(keys[table.key_rep[table.row_key]], keys)
    assert table.key_count[used].sum() == n
    first_row = np.full(60_000, n, np.int64)
    np.minimum.at(first_row, keys, np.arange(n))
    assert np.array_equal(table.key_rep[used], first_row[rep_keys])  # first row (asc) or chain head
    probe = rng.integers(-10, 60_010, 5003).astype(np.int64)
    phash = hashes_for_slots(np.where(probe < 0, 0, np.where(probe < 2000, span - 40 + probe % 60,
                             np.where(probe < 2100, cap - 30 + probe % 20, (probe * 7919) % cap))), int(shift))
    found = ht.lookup(km, table.slots, table.shift, table.key_rep, key_matrix([probe, probe % 7]),
                      phash)
    present = np.isin(probe, keys)
    assert np.array_equal(found >= 0, present) and present.sum() > 0
    assert np.array_equal(keys[table.key_rep[found[present]]], probe[present])
    if descending:  # chains are ascending and complete
        k = int(keys[0])
        chain = []
        r = table.key_rep[table.row_key[0]]
        while r != -1:
            chain.append(int(r))
            r = table.next_row[r]
        assert chain == np.flatnonzero(keys == k).tolist()


def test_large_join_and_group_by_use_parallel_build():
    rng = np.random.default_rng(2)
    n = 400_003
    bk = (rng.integers(0, 150_000, n) * 1_000_003).astype(np.int64)
    pk = (rng.integers(0, 200_000, 100_001) * 1_000_003).astype(np.int64)
    table = B.join_build([bk])
    pi, bi = B.join_probe(table, [pk], "inner")
    rp, rb = ref_inner(bk, pk)
    assert len(rp) > 0 and np.array_equal(pi, rp) and np.array_equal(bi, rb)
    matched = B.join_probe(table, [pk], "build_matched")
    assert np.array_equal(matched, np.isin(bk, pk))
    gid, ng, firsts = B.group_ids([bk])
    uniq, first_idx, inverse = np.unique(bk, return_index=True, return_inverse=True)
    order = np.argsort(first_idx)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    assert ng == len(uniq) and np.array_equal(firsts, first_idx[order])
    assert np.array_equal(gid, rank[inverse.ravel()])
    assert np.array_equal(B.hash_keys([bk]), hash_rows(key_matrix([bk])))


def test_csr_of_a_parallel_build_equals_the_serial_layout():
    """Rows grouped by key id (ascending within a key), built per range of a parallel build, equal
    the serial layout: keys with one and many rows, ranges with no row, deferred rows."""
    rng = np.random.default_rng(17)
    n = 300_000
    keys = rng.integers(0, 40_000, n).astype(np.int64)
    keys[:5000] = 7  # one key on many rows
    km = key_matrix([keys])
    table = ht.build(km, hash_rows(km), descending=False, chain=False)
    assert table.ranges is not None, "the parallel build did not run"
    start, order = ht.csr(table)
    want_start, want_order = ht._csr_serial(table.row_key, table.key_count)
    assert np.array_equal(start, want_start) and np.array_equal(order, want_order)
    for k in np.flatnonzero(table.key_count)[:200]:
        rows = order[start[k]:start[k] + table.key_count[k]]
        assert np.all(np.diff(rows) > 0) and np.all(keys[rows] == keys[rows[0]])
