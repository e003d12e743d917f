"""Hash join build and probe on the CPU (Numba).

The table is open addressing with linear probing over *distinct* build keys. A slot holds a key id
(-1 = empty, so no key value is reserved); each key id knows its first build row, its row count and
its hash; build rows with the same key are chained through ``next_row`` in ascending row order, which
gives the promised output order without sorting. Every lookup compares the full hash and then every
key column, so hash collisions never produce false matches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import hash_rows, key_matrix, rows_equal, slot_of, table_capacity
from hetdb.errors import UnsupportedError

JOIN_KINDS = ("inner", "semi", "anti", "mark", "left", "build_matched")


@dataclass
class CpuJoinTable:
    """Opaque build-side state for ``join_probe``."""

    keys: np.ndarray        # (num_keys, num_rows) int64 key bits
    slots: np.ndarray       # int64 key id per slot, -1 = empty
    shift: np.uint64        # hash -> slot
    key_head: np.ndarray    # first (lowest) build row of each key id
    key_count: np.ndarray   # build rows per key id
    key_hash: np.ndarray    # uint64 hash per key id
    next_row: np.ndarray    # next build row with the same key, -1 at the end
    row_key: np.ndarray     # key id of each build row
    num_rows: int

    @property
    def num_keys(self) -> int:
        return int(self.keys.shape[0])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.keys, self.slots, self.key_head, self.key_count,
                                      self.key_hash, self.next_row, self.row_key))


@njit(cache=True, nogil=True)
def _build(keys, hashes, slots, shift, next_row, row_key):
    n = keys.shape[1]
    mask = slots.shape[0] - 1
    key_head = np.empty(n, np.int64)
    key_count = np.zeros(n, np.int64)
    key_hash = np.empty(n, np.uint64)
    nk = 0
    # Descending insertion + prepending keeps every chain in ascending row order.
    for i in range(n - 1, -1, -1):
        h = hashes[i]
        s = slot_of(h, shift)
        while True:
            k = slots[s]
            if k == -1:
                slots[s] = nk
                key_head[nk] = i
                key_count[nk] = 1
                key_hash[nk] = h
                next_row[i] = -1
                row_key[i] = nk
                nk += 1
                break
            if key_hash[k] == h and rows_equal(keys, key_head[k], keys, i):
                next_row[i] = key_head[k]
                key_head[k] = i
                key_count[k] += 1
                row_key[i] = k
                break
            s = (s + 1) & mask
    return key_head[:nk].copy(), key_count[:nk].copy(), key_hash[:nk].copy()


def join_build(keys: list[np.ndarray]) -> CpuJoinTable:
    """Hash table over the build keys (see module docstring)."""
    km = key_matrix(keys)
    n = km.shape[1]
    cap, shift = table_capacity(n)
    slots = np.full(cap, -1, np.int64)
    next_row = np.empty(n, np.int64)
    row_key = np.empty(n, np.int64)
    hashes = hash_rows(km)
    head, count, khash = _build(km, hashes, slots, shift, next_row, row_key)
    return CpuJoinTable(km, slots, shift, head, count, khash, next_row, row_key, n)


@njit(cache=True, nogil=True, parallel=True)
def _lookup(bkeys, slots, shift, key_head, key_hash, pkeys, phashes):
    """Key id of each probe row's match, -1 when none."""
    n = pkeys.shape[1]
    out = np.empty(n, np.int64)
    mask = slots.shape[0] - 1
    for i in prange(n):
        h = phashes[i]
        s = slot_of(h, shift)
        found = -1
        while True:
            k = slots[s]
            if k == -1:
                break
            if key_hash[k] == h and rows_equal(bkeys, key_head[k], pkeys, i):
                found = k
                break
            s = (s + 1) & mask
        out[i] = found
    return out


@njit(cache=True, nogil=True, parallel=True)
def _expand(match, key_head, key_count, next_row, left):
    """(probe_idx, build_idx) pairs for inner (left=False) or left joins, written in one allocation."""
    n = match.shape[0]
    starts = np.empty(n + 1, np.int64)
    starts[0] = 0
    total = 0
    for i in range(n):
        k = match[i]
        c = key_count[k] if k >= 0 else (1 if left else 0)
        total += c
        starts[i + 1] = total
    pidx = np.empty(total, np.int64)
    bidx = np.empty(total, np.int64)
    for i in prange(n):
        pos = starts[i]
        k = match[i]
        if k < 0:
            if left:
                pidx[pos] = i
                bidx[pos] = -1
            continue
        r = key_head[k]
        while r != -1:
            pidx[pos] = i
            bidx[pos] = r
            pos += 1
            r = next_row[r]
    return pidx, bidx


@njit(cache=True, nogil=True, parallel=True)
def _build_matched(match, row_key, num_keys):
    hit = np.zeros(num_keys, np.bool_)
    for i in prange(match.shape[0]):
        k = match[i]
        if k >= 0:
            hit[k] = True  # every writer stores the same value: the race is benign
    out = np.empty(row_key.shape[0], np.bool_)
    for r in prange(row_key.shape[0]):
        out[r] = hit[row_key[r]]
    return out


def join_probe(table: CpuJoinTable, keys: list[np.ndarray], kind: str):
    """Probe ``table``; output per kind as documented in ``Backend.join_probe``."""
    if kind not in JOIN_KINDS:
        raise UnsupportedError(f"join kind {kind!r} is not supported (one of {', '.join(JOIN_KINDS)})")
    if len(keys) != table.num_keys:
        raise ValueError(f"probe has {len(keys)} key columns, build has {table.num_keys}")
    pk = key_matrix(keys)
    match = _lookup(table.keys, table.slots, table.shift, table.key_head, table.key_hash,
                    pk, hash_rows(pk))
    if kind == "inner" or kind == "left":
        return _expand(match, table.key_head, table.key_count, table.next_row, kind == "left")
    if kind == "mark":
        return match >= 0
    if kind == "semi":
        return np.flatnonzero(match >= 0).astype(np.int64, copy=False)
    if kind == "anti":
        return np.flatnonzero(match < 0).astype(np.int64, copy=False)
    return _build_matched(match, table.row_key, table.key_head.shape[0])
