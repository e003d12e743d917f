"""Dense group numbering (first-appearance order) and COUNT(DISTINCT) on the CPU (Numba).

Two strategies:
  * small key range: integer/bool keys whose combined range is small are packed into one dense code
    (mixed radix), and groups are found by direct indexing; chunks run in parallel and each records
    the first row of every code it sees, so first-appearance order falls out of a min over chunks.
  * otherwise: the parallel open-addressing hash table of ``hashtable.py`` over the int64 key bits
    (rows visited in ascending order per range, so a key's representative is its first row), whose
    sparse key ids are then renumbered by first row.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.hashtable import build
from hetdb.backend.cpu.keys import hash_rows, key_bits, key_matrix, num_chunks

# Direct indexing pays while the code space is about the size of the input (or cache-sized).
_DENSE_MIN_RANGE = 1 << 16
_DENSE_MAX_RANGE = 1 << 26
# Per-chunk first-row tables are (chunks x range) int64; keep them under ~256 MiB.
_DENSE_MAX_CELLS = 1 << 25


@njit(cache=True, nogil=True, parallel=True)
def _min_max(a):
    n = a.shape[0]
    nc = min(64, max(1, n // 65536))
    mins = np.empty(nc, np.int64)
    maxs = np.empty(nc, np.int64)
    for c in prange(nc):
        lo = c * n // nc
        hi = (c + 1) * n // nc
        mn = a[lo]
        mx = a[lo]
        for i in range(lo + 1, hi):
            v = a[i]
            if v < mn:
                mn = v
            if v > mx:
                mx = v
        mins[c] = mn
        maxs[c] = mx
    return mins.min(), maxs.max()


def int_ranges(keys: list[np.ndarray]) -> list[tuple[int, int]] | None:
    """(min, max) of each integer/bool key, or None when a key is float (or the input is empty)."""
    out = []
    for k in keys:
        a = np.asarray(k)
        if a.dtype.kind not in "iub" or a.shape[0] == 0:
            return None
        if a.dtype.kind == "b":
            out.append((0, 1))
        else:
            mn, mx = _min_max(a.astype(np.int64, copy=False))
            out.append((int(mn), int(mx)))
    return out


@njit(cache=True, nogil=True, parallel=True)
def _dense_codes(km, mins, strides):
    n = km.shape[1]
    out = np.empty(n, np.int64)
    for i in prange(n):
        c = 0
        for j in range(km.shape[0]):
            c += (km[j, i] - mins[j]) * strides[j]
        out[i] = c
    return out


def dense_codes(keys: list[np.ndarray], ranges: list[tuple[int, int]]) -> tuple[np.ndarray, int]:
    """Pack small-range integer keys into one code in [0, size); the first key is most significant,
    so codes also order like the keys lexicographically."""
    sizes = [hi - lo + 1 for lo, hi in ranges]
    strides = np.empty(len(keys), np.int64)
    acc = 1
    for j in range(len(keys) - 1, -1, -1):
        strides[j] = acc
        acc *= sizes[j]
    mins = np.array([lo for lo, _ in ranges], np.int64)
    if len(keys) == 1 and mins[0] == 0 and np.asarray(keys[0]).dtype == np.int64:
        return np.ascontiguousarray(keys[0]), acc
    return _dense_codes(key_matrix(keys), mins, strides), acc


@njit(cache=True, nogil=True, parallel=True)
def _dense_group_ids(codes, size, nchunks):
    n = codes.shape[0]
    first = np.full((nchunks, size), -1, np.int64)
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        for i in range(lo, hi):
            v = codes[i]
            if first[c, v] == -1:
                first[c, v] = i
    first_row = np.full(size, -1, np.int64)
    for v in prange(size):
        for c in range(nchunks):
            if first[c, v] != -1:
                first_row[v] = first[c, v]
                break
    present = np.flatnonzero(first_row != -1)
    rows = first_row[present]
    order = np.argsort(rows)
    code_to_group = np.full(size, -1, np.int64)
    firsts = np.empty(order.shape[0], np.int64)
    for g in range(order.shape[0]):
        code_to_group[present[order[g]]] = g
        firsts[g] = rows[order[g]]
    gid = np.empty(n, np.int64)
    for i in prange(n):
        gid[i] = code_to_group[codes[i]]
    return gid, firsts


@njit(cache=True, nogil=True, parallel=True)
def _dense_ids(key_rep, key_count, row_key):
    """Renumber the table's sparse key ids densely in order of each key's first row."""
    used = np.flatnonzero(key_count > 0)
    firsts = key_rep[used]
    order = np.argsort(firsts)
    remap = np.empty(key_rep.shape[0], np.int64)
    out_firsts = np.empty(used.shape[0], np.int64)
    for g in prange(used.shape[0]):
        remap[used[order[g]]] = g
        out_firsts[g] = firsts[order[g]]
    gid = np.empty(row_key.shape[0], np.int64)
    for i in prange(row_key.shape[0]):
        gid[i] = remap[row_key[i]]
    return gid, out_firsts


def group_ids(keys: list[np.ndarray], num_rows: int | None = None) -> tuple[np.ndarray, int, np.ndarray]:
    """(group id per row, number of groups, first row of each group); see ``Backend.group_ids``."""
    if not keys:
        n = int(num_rows or 0)
        if n == 0:
            return np.zeros(0, np.int64), 0, np.zeros(0, np.int64)
        return np.zeros(n, np.int64), 1, np.zeros(1, np.int64)
    n = int(np.asarray(keys[0]).shape[0])
    if n == 0:
        return np.zeros(0, np.int64), 0, np.zeros(0, np.int64)
    ranges = int_ranges(keys)
    if ranges is not None:
        size = 1
        for lo, hi in ranges:
            size *= hi - lo + 1
        if size <= max(_DENSE_MIN_RANGE, min(2 * n, _DENSE_MAX_RANGE)):
            codes, size = dense_codes(keys, ranges)
            chunks = max(1, min(num_chunks(n), _DENSE_MAX_CELLS // size))
            gid, firsts = _dense_group_ids(codes, size, chunks)
            return gid, int(firsts.shape[0]), firsts
    km = key_matrix(keys)
    table = build(km, hash_rows(km), descending=False, chain=False)
    gid, firsts = _dense_ids(table.key_rep, table.key_count, table.row_key)
    return gid, int(firsts.shape[0]), firsts


def count_distinct(values: np.ndarray, gids: np.ndarray, num_groups: int,
                   valid: np.ndarray | None = None) -> np.ndarray:
    """Distinct valid values per group (int64), float keys compared as SQL GROUP BY does."""
    values = np.asarray(values)
    gids = np.asarray(gids, dtype=np.int64)
    if valid is not None:
        sel = np.asarray(valid, dtype=bool)
        values = values[sel]
        gids = gids[sel]
    if values.shape[0] == 0:
        return np.zeros(num_groups, np.int64)
    pair_keys = [gids, key_bits(values)]
    ranges = int_ranges(pair_keys)
    if ranges is not None and (ranges[1][1] - ranges[1][0] + 1) * num_groups <= _DENSE_MAX_RANGE:
        _, _, firsts = group_ids(pair_keys)
    else:
        # Distinct (group, value) pairs need no first-appearance numbering: count the table's keys.
        km = key_matrix(pair_keys)
        table = build(km, hash_rows(km), descending=False, chain=False)
        firsts = table.key_rep[table.key_count > 0]
    return np.bincount(gids[firsts], minlength=num_groups).astype(np.int64, copy=False)
