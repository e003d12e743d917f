"""Dense group numbering (first-appearance order) and COUNT(DISTINCT) on the CPU (Numba).

Two strategies, both one serial pass over the rows (pipeline workers already run morsels in
parallel, and a pass that numbers groups as it meets them needs no renumbering afterwards):
  * small key range: integer/bool keys whose combined range is small are packed into one dense code
    (mixed radix), and a code's group is found by direct indexing;
  * otherwise: an open-addressing table over the int64 key bits that starts small and doubles, so a
    few groups stay in cache however many rows there are.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.hashtable import build
from hetdb.backend.cpu.keys import (
    hash_rows,
    kernel_threads,
    key_bits,
    key_matrix,
    row_hash,
    rows_equal,
    slot_of,
)

# Direct indexing pays while the code space is about the size of the input (or cache-sized).
_DENSE_MIN_RANGE = 1 << 16
_DENSE_MAX_RANGE = 1 << 26
_FIB = np.uint64(0x9E3779B97F4A7C15)
_PACK_MAX_CODES = 1 << 62
# Group numbering runs the parallel hash build from this many rows (with several kernel threads).
_PARALLEL_GROUP_ROWS = 1 << 20
_PARALLEL_PROBE_ROWS = 1 << 15
# ... and at least this many threads: the partitioned build makes more passes than the serial table
# (measured on 2 cores: 0.8 s vs 0.45 s for 8M rows of 4M groups), so it pays only on more cores.
_PARALLEL_GROUP_THREADS = 4
# the dense numbering's parallel passes do ~2x the serial pass's work (10M rows of 1.5M codes on one
# core: 170 ms against 86): they pay from about this many threads
_PARALLEL_DENSE_THREADS = 8


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


# below this many values NumPy's two passes cost less than entering a parallel Numba region (measured
# on 2 cores: 35 values 2 us against 10-16 us; a GPU query's host tail sorts and groups a few rows)
SMALL_ROWS = 1 << 15


def min_max(a: np.ndarray) -> tuple[int, int]:
    """(min, max) of a non-empty integer array, as int64 values."""
    if a.shape[0] < SMALL_ROWS:
        return int(a.min()), int(a.max())
    if a.dtype.kind not in "iu" or a.dtype == np.uint64:
        a = a.astype(np.int64, copy=False)
    mn, mx = _min_max(a)  # (on narrower integers as they are: a conversion copied them on one thread)
    return int(mn), int(mx)


@njit(cache=True, nogil=True)
def key_runs(a):
    """How many runs of equal values ``a`` has when each value is at least the one before it (each
    key in one run: grouped by comparing a row with the one before it), else -1."""
    runs = np.int64(1 if a.shape[0] else 0)
    for i in range(1, a.shape[0]):
        if a[i] < a[i - 1]:
            return np.int64(-1)
        runs += np.int64(a[i] != a[i - 1])
    return runs


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
            out.append(min_max(a))
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
    # one or two keys (the common case) are packed from their own dtypes, without a key matrix copy
    if len(keys) == 1:
        return _dense1(_int_view(keys[0]), mins[0]), acc
    if len(keys) == 2:
        return _dense2(_int_view(keys[0]), _int_view(keys[1]), mins[0], mins[1], strides[0]), acc
    return _dense_codes(key_matrix(keys), mins, strides), acc


def _int_view(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype == np.bool_ else a


@njit(cache=True, nogil=True)
def _dense1(a, lo):
    out = np.empty(a.shape[0], np.int64)
    for i in range(a.shape[0]):
        out[i] = np.int64(a[i]) - lo
    return out


@njit(cache=True, nogil=True)
def _dense2(a, b, lo_a, lo_b, stride_a):
    out = np.empty(a.shape[0], np.int64)
    for i in range(a.shape[0]):
        out[i] = (np.int64(a[i]) - lo_a) * stride_a + (np.int64(b[i]) - lo_b)
    return out


@njit(cache=True, nogil=True)
def _dense_group_ids(codes, size):
    """One pass: a code's group is numbered when the code is first seen (first-appearance order)."""
    n = codes.shape[0]
    code_to_group = np.full(size, -1, np.int64)
    gid = np.empty(n, np.int64)
    firsts = np.empty(min(n, size), np.int64)
    ng = 0
    for i in range(n):
        c = codes[i]
        g = code_to_group[c]
        if g == -1:
            g = ng
            code_to_group[c] = g
            firsts[g] = i
            ng += 1
        gid[i] = g
    return gid, firsts[:ng].copy()


@njit(cache=True, nogil=True, parallel=True)
def _dense_group_ids_parallel(codes, size, nchunks):
    """``_dense_group_ids`` on every kernel thread, in the same first-appearance order: each chunk
    of rows marks its codes in a bitmap of its own; a code belongs to the first chunk that has it,
    which numbers the codes it owns in row order; groups are those numbers offset by the groups of
    the chunks before."""
    n = codes.shape[0]
    words = (size + 63) >> 6
    seen = np.zeros((nchunks, words), np.uint64)
    for ch in prange(nchunks):
        for i in range(ch * n // nchunks, (ch + 1) * n // nchunks):
            c = codes[i]
            seen[ch, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    owner = np.empty(size, np.int32)
    local = np.empty(size, np.int64)
    for c in prange(size):
        local[c] = -1
        owner[c] = -1
        bit = np.uint64(1) << np.uint64(c & 63)
        for ch in range(nchunks):
            if seen[ch, c >> 6] & bit:
                owner[c] = ch
                break
    counts = np.zeros(nchunks + 1, np.int64)
    order = np.empty(n, np.int64)  # chunk ch's new groups' first rows from its first row on
    for ch in prange(nchunks):
        lo = ch * n // nchunks
        k = 0
        for i in range(lo, (ch + 1) * n // nchunks):
            c = codes[i]
            if owner[c] == ch and local[c] < 0:
                local[c] = k
                order[lo + k] = i
                k += 1
        counts[ch + 1] = k
    for ch in range(nchunks):
        counts[ch + 1] += counts[ch]
    firsts = np.empty(counts[nchunks], np.int64)
    for ch in prange(nchunks):
        lo = ch * n // nchunks
        for k in range(counts[ch + 1] - counts[ch]):
            firsts[counts[ch] + k] = order[lo + k]
    for c in prange(size):
        if owner[c] >= 0:
            local[c] += counts[owner[c]]
    gid = np.empty(n, np.int64)
    for i in prange(n):
        gid[i] = local[codes[i]]
    return gid, firsts


@njit(cache=True, nogil=True, inline="always")
def int_slot(x, shift):
    """Fibonacci hashing of one int64 key (its high product bits mix every key bit)."""
    return np.int64((np.uint64(x) * _FIB) >> shift)


@njit(cache=True, nogil=True)
def _hash_group_ids_1(key, bits):
    """Group numbering of one int64 key, keys stored in the slots (one cache miss per row at most).
    Returns ng = -1 - i when more than half of the 2**bits slots fill at row i: retry with more bits."""
    n = key.shape[0]
    cap = 1 << bits
    shift = np.uint64(64 - bits)
    mask = cap - 1
    slots = np.empty((cap, 2), np.int64)   # key, group (-1 = empty)
    for s in range(cap):
        slots[s, 1] = -1
    gid = np.empty(n, np.int64)
    firsts = np.empty(min(n, cap // 2), np.int64)
    ng = 0
    for i in range(n):
        x = key[i]
        s = int_slot(x, shift)
        while True:
            g = slots[s, 1]
            if g == -1:
                if 2 * (ng + 1) > cap:
                    return gid, firsts, -1 - i
                g = ng
                slots[s, 0] = x
                slots[s, 1] = g
                firsts[g] = i
                ng += 1
                break
            if slots[s, 0] == x:
                break
            s = (s + 1) & mask
        gid[i] = g
    return gid, firsts[:ng].copy(), ng


@njit(cache=True, nogil=True)
def _hash_group_ids(km, bits):
    """``_hash_group_ids_1`` for several key columns: slots hold (hash, group), keys are compared
    against the group's first row."""
    n = km.shape[1]
    cap = 1 << bits
    shift = np.uint64(64 - bits)
    mask = cap - 1
    slots = np.empty((cap, 2), np.int64)   # hash bits, group (-1 = empty)
    for s in range(cap):
        slots[s, 1] = -1
    gid = np.empty(n, np.int64)
    firsts = np.empty(min(n, cap // 2), np.int64)
    ng = 0
    for i in range(n):
        h = row_hash(km, i)
        hb = np.int64(h)
        s = slot_of(h, shift)
        while True:
            g = slots[s, 1]
            if g == -1:
                if 2 * (ng + 1) > cap:
                    return gid, firsts, -1 - i
                g = ng
                slots[s, 0] = hb
                slots[s, 1] = g
                firsts[g] = i
                ng += 1
                break
            if slots[s, 0] == hb and rows_equal(km, firsts[g], km, i):
                break
            s = (s + 1) & mask
        gid[i] = g
    return gid, firsts[:ng].copy(), ng


@njit(cache=True, nogil=True, parallel=True)
def _number_parallel(row_key, key_rep):
    """Dense group ids in first-appearance order from a parallel build's (sparse) key ids: a row is
    its group's first when it is its key's representative (the lowest row, ascending build), and
    groups are numbered by the rank of their first row."""
    n = row_key.shape[0]
    nc = max(1, min(256, n // 65536))
    counts = np.zeros(nc + 1, np.int64)
    for c in prange(nc):
        k = 0
        for i in range(c * n // nc, (c + 1) * n // nc):
            if key_rep[row_key[i]] == i:
                k += 1
        counts[c + 1] = k
    for c in range(nc):
        counts[c + 1] += counts[c]
    firsts = np.empty(counts[nc], np.int64)
    rank = np.empty(n, np.int64)  # per key id (ids are < n)
    for c in prange(nc):
        g = counts[c]
        for i in range(c * n // nc, (c + 1) * n // nc):
            k = row_key[i]
            if key_rep[k] == i:
                firsts[g] = i
                rank[k] = g
                g += 1
    gid = np.empty(n, np.int64)
    for i in prange(n):
        gid[i] = rank[row_key[i]]
    return gid, firsts


def _many_groups(km: np.ndarray) -> bool:
    """Whether a prefix of the rows has many distinct keys (a parallel build then pays; with few
    groups one key's rows would all land in one thread's range, and the trial-sized serial table
    stays in cache)."""
    head = np.ascontiguousarray(km[:, :_PARALLEL_PROBE_ROWS])
    if head.shape[0] == 1:
        _, _, ng = _hash_group_ids_1(head[0], 17)
    else:
        _, _, ng = _hash_group_ids(head, 17)
    return ng < 0 or ng * 8 >= head.shape[1]


def hash_group_ids(keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(group id per row, first row per group) through a hash table sized by trial: it starts at
    4096 slots and, when half of them fill, is redone at the size the rows seen so far suggest, so
    few groups stay in cache. Many rows with many groups, when kernels may use several threads (a
    final merge; pipeline workers run single-threaded): the parallel partitioned build instead."""
    km = key_matrix(keys)
    n = int(km.shape[1])
    if n >= _PARALLEL_GROUP_ROWS and kernel_threads() >= _PARALLEL_GROUP_THREADS \
            and _many_groups(km):
        table = build(km, hash_rows(km), descending=False, chain=False)
        return _number_parallel(table.row_key, table.key_rep)
    bits = 12
    while True:
        if km.shape[0] == 1:
            gid, firsts, ng = _hash_group_ids_1(km[0], bits)
        else:
            gid, firsts, ng = _hash_group_ids(km, bits)
        if ng >= 0:
            return gid, firsts
        # groups seen so far (half the slots) extrapolated over the rows, with room to spare
        seen = -1 - ng
        estimate = (1 << (bits - 1)) * n // max(seen, 1)
        bits = max(bits + 1, min(int(4 * estimate).bit_length(), int(2 * n).bit_length()))


def _varying(keys: list[np.ndarray]) -> tuple[list[np.ndarray], list[tuple[int, int]] | None]:
    """The keys that take more than one value (a constant key, such as the all-true validity the
    aggregation adds per key, splits no group but would double the code space or force hashing),
    and their (min, max) when every one is an integer or bool key."""
    out: list[np.ndarray] = []
    ranges: list[tuple[int, int]] | None = []
    for k in keys:
        a = np.asarray(k)
        if a.dtype.kind == "b":
            if bool(a.all()) or not bool(a.any()):
                continue
            rng = (0, 1)
        elif a.dtype.kind in "iu":
            rng = min_max(a)
            if rng[0] == rng[1]:
                continue
        else:
            rng = None
        out.append(k)
        if rng is None or ranges is None:
            ranges = None
        else:
            ranges.append(rng)
    return out, ranges


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
    keys, ranges = _varying(keys)
    if not keys:
        return np.zeros(n, np.int64), 1, np.zeros(1, np.int64)
    if ranges is not None:
        size = 1
        for lo, hi in ranges:
            size *= hi - lo + 1
        if size <= max(_DENSE_MIN_RANGE, min(2 * n, _DENSE_MAX_RANGE)):
            codes, size = dense_codes(keys, ranges)
            if n >= _PARALLEL_GROUP_ROWS and kernel_threads() >= _PARALLEL_DENSE_THREADS:
                # a final merge's states (TPC-H q13 at SF 10 on 16 threads: ~10M of 1M customers,
                # ~116 ms in the serial pass)
                gid, firsts = _dense_group_ids_parallel(codes, size, 2 * kernel_threads())
            else:
                gid, firsts = _dense_group_ids(codes, size)
            return gid, int(firsts.shape[0]), firsts
        if len(keys) > 1 and size < _PACK_MAX_CODES:
            # several integer keys packed into one int64: the single-key table, no key matrix
            keys = [dense_codes(keys, ranges)[0]]
    gid, firsts = hash_group_ids(keys)
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
