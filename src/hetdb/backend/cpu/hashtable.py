"""Open-addressing hash table over int64 key matrices, built in parallel (Numba).

Slots are (hash, key id) pairs in one (capacity, 2) int64 array, so a probe that misses touches one
cache line; key id -1 marks an empty slot (no key value is reserved). Every hit is confirmed on the
full hash and then on every key column, except with one key column: its ``row_hash`` is a bijection,
so the hash match is the key match (hashes must come from ``keys.hash_rows``).

Parallel build: the slot array is cut into P equal ranges and every row goes to the range of its home
slot (a stable counting sort), so P threads insert without sharing a slot. A row whose linear probe
would run past the end of its range is deferred; all rows of one key follow the same probe path, so a
key is either wholly inserted by its range's thread or wholly deferred, and a short sequential pass
inserts the deferred rows with wrap-around afterwards. Key ids of range p are allocated from p's
segment of the sorted rows, so they are unique without coordination (ids are sparse; arrays indexed by
id have one entry per row).

Rows of a range are visited in ascending row order (``descending=False``: a key's representative is its
first row, as group numbering needs) or descending (joins: prepending to the chain of equal keys leaves
the chain ascending).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads, same_key, slot_of, table_capacity

# Below this many rows one thread builds faster than partitioning costs.
_PARALLEL_BUILD_ROWS = 1 << 17
_RANGE_SLOTS_LOG2 = 14


@dataclass
class HashTable:
    slots: np.ndarray      # (capacity, 2) int64: hash bits, key id (-1 = empty)
    shift: np.uint64
    key_rep: np.ndarray    # per key id: first row visited (lowest row when ascending)
    key_count: np.ndarray  # per key id: rows with that key (0 = unused id)
    next_row: np.ndarray   # per row: next row with the same key in ascending order, -1 at the end
    row_key: np.ndarray    # per row: key id
    # the parallel build's ranges: row numbers grouped by range (ascending within one), where each
    # range starts and the key id of each row in that order; range p's key ids lie in
    # [starts[p], starts[p + 1]) (see csr)
    ranges: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    distinct: int = -1     # used key ids (distinct keys), -1: not counted


@njit(cache=True, nogil=True, inline="always")
def _insert(keys, h, slots, shift, lo_slot, hi_slot, wrap, i, next_id,
            key_rep, key_count, next_row, row_key, chain):
    """Insert row i (hash ``h``); returns (the id counter after it, the row's key id), or (-1, -1)
    when the probe left [lo_slot, hi_slot). ``row_key`` empty: not written (see build)."""
    hb = np.int64(h)
    s = slot_of(h, shift)
    mask = slots.shape[0] - 1
    while True:
        k = slots[s, 1]
        if k == -1:
            slots[s, 0] = hb
            slots[s, 1] = next_id
            key_rep[next_id] = i
            key_count[next_id] = 1
            if row_key.shape[0]:
                row_key[i] = next_id
            if chain:
                next_row[i] = -1
            return next_id + 1, next_id
        if slots[s, 0] == hb and same_key(keys, key_rep[k], keys, i):
            if chain:
                next_row[i] = key_rep[k]
                key_rep[k] = i
            key_count[k] += 1
            if row_key.shape[0]:
                row_key[i] = k
            return next_id, k
        s += 1
        if wrap:
            s &= mask
        elif s >= hi_slot:
            return -1, -1


@njit(cache=True, nogil=True, parallel=True)
def _partition_rows(hashes, shift, part_shift, nparts, nchunks, rows, sorted_hashes):
    """Row numbers grouped by range of their home slot (stable), their hashes in that order (the
    inserts read them sequentially: read through the row numbers, a cache miss per row took about
    40% of a 1.5M-row build on one core), and the range start offsets."""
    n = hashes.shape[0]
    hist = np.zeros((nchunks, nparts), np.int64)
    for c in prange(nchunks):
        for i in range(c * n // nchunks, (c + 1) * n // nchunks):
            hist[c, slot_of(hashes[i], shift) >> part_shift] += 1
    starts = np.empty(nparts + 1, np.int64)
    pos = np.empty((nchunks, nparts), np.int64)
    total = 0
    for p in range(nparts):
        starts[p] = total
        for c in range(nchunks):
            pos[c, p] = total
            total += hist[c, p]
    starts[nparts] = total
    for c in prange(nchunks):
        for i in range(c * n // nchunks, (c + 1) * n // nchunks):
            p = slot_of(hashes[i], shift) >> part_shift
            rows[pos[c, p]] = i
            sorted_hashes[pos[c, p]] = hashes[i]
            pos[c, p] += 1
    return starts


@njit(cache=True, nogil=True, parallel=True)
def _build_parallel(keys, hashes, slots, shift, part_shift, rows, starts, descending, chain,
                    key_rep, key_count, next_row, row_key, deferred, jkey):
    """``hashes``: in the order of ``rows`` (see _partition_rows); ``deferred``: False per row;
    ``jkey``: set to the key id of each row in the order of ``rows`` (the CSR layout then reads it
    in order, not ``row_key`` at random rows)."""
    nparts = starts.shape[0] - 1
    span = slots.shape[0] // nparts
    next_ids = np.empty(nparts, np.int64)
    ndeferred = np.zeros(nparts, np.int64)
    for p in prange(nparts):
        lo = starts[p]
        hi = starts[p + 1]
        nid = lo
        for t in range(hi - lo):
            j = hi - 1 - t if descending else lo + t
            r, k = _insert(keys, hashes[j], slots, shift, p * span, (p + 1) * span, False, rows[j], nid,
                           key_rep, key_count, next_row, row_key, chain)
            if r < 0:
                deferred[j] = True
                ndeferred[p] += 1
            else:
                nid = r
                jkey[j] = k
        next_ids[p] = nid
    # (one thread: only the ranges that deferred rows are walked again, not every row)
    for p in range(nparts):
        if ndeferred[p] == 0:
            continue
        lo = starts[p]
        hi = starts[p + 1]
        nid = next_ids[p]
        for t in range(hi - lo):
            j = hi - 1 - t if descending else lo + t
            if deferred[j]:
                nid, jkey[j] = _insert(keys, hashes[j], slots, shift, 0, 0, True, rows[j], nid,
                                       key_rep, key_count, next_row, row_key, chain)
        next_ids[p] = nid
    distinct = 0
    for p in range(nparts):
        distinct += next_ids[p] - starts[p]
    return distinct


@njit(cache=True, nogil=True)
def _build_serial(keys, hashes, slots, shift, descending, chain, key_rep, key_count, next_row, row_key):
    n = hashes.shape[0]
    nid = 0
    for t in range(n):
        i = n - 1 - t if descending else t
        nid, _ = _insert(keys, hashes[i], slots, shift, 0, 0, True, i, nid,
                         key_rep, key_count, next_row, row_key, chain)
    return nid


@njit(cache=True, nogil=True, parallel=True)
def _clear_slots(slots):
    for s in prange(slots.shape[0]):
        slots[s, 0] = 0
        slots[s, 1] = -1


def empty_slots(cap: int) -> np.ndarray:
    """An empty slot array. Allocated by NumPy, which asks the kernel for huge pages for large
    arrays (allocated by Numba, 8M slots took ~100 ms to fault in on the 2-core machine against
    ~20 ms), and a large one written on every kernel thread (one thread's fill is the serial part
    of a multi-million-row build)."""
    slots = np.empty((cap, 2), np.int64)
    if cap < _PARALLEL_BUILD_ROWS:
        slots[:, 1] = -1
    else:
        _clear_slots(slots)
    return slots


def build(keys: np.ndarray, hashes: np.ndarray, descending: bool, chain: bool,
          row_keys: bool = True) -> HashTable:
    """Hash table over the rows of a key matrix (see module docstring). ``row_keys`` False: a
    parallel build leaves ``row_key`` empty (a random write per build row that a join's CSR layout
    does without: it reads the key ids in range order; joins.py fills it when an operator asks)."""
    n = int(hashes.shape[0])
    cap, shift = table_capacity(n)
    slots = empty_slots(cap)
    key_rep = np.empty(n, np.int64)
    key_count = np.zeros(n, np.int64)
    next_row = np.empty(n if chain else 0, np.int64)
    parallel = n >= _PARALLEL_BUILD_ROWS
    row_key = np.empty(n if row_keys or not parallel else 0, np.int64)
    threads = kernel_threads()
    if not parallel:
        distinct = _build_serial(keys, hashes, slots, shift, descending, chain, key_rep, key_count, next_row, row_key)
    else:
        # at least 4 ranges per thread, and ranges of at most 2^14 slots (256 KiB: in the L2 cache),
        # on one thread too: inserting into a cache-sized range beat inserting over the whole table
        # by 1.1-2.1x on one core (150k-2M rows; random inserts into a multi-MiB table miss)
        log_cap = int(np.log2(cap))
        part_bits = min(max(int(4 * threads - 1).bit_length(), log_cap - _RANGE_SLOTS_LOG2), 10, log_cap - 4)
        nparts = 1 << part_bits
        part_shift = int(np.log2(cap)) - part_bits
        # (one histogram row per chunk: 4 chunks per thread, not one per range)
        rows, sorted_hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
        starts = _partition_rows(hashes, shift, part_shift, nparts, min(nparts, 4 * threads), rows, sorted_hashes)
        jkey = np.empty(n, np.int64)
        distinct = _build_parallel(keys, sorted_hashes, slots, shift, part_shift, rows, starts, descending, chain,
                                   key_rep, key_count, next_row, row_key, np.zeros(n, np.bool_), jkey)
        return HashTable(slots, shift, key_rep, key_count, next_row, row_key, (rows, starts, jkey), int(distinct))
    return HashTable(slots, shift, key_rep, key_count, next_row, row_key, distinct=int(distinct))


@njit(cache=True, nogil=True)
def _csr_serial(row_key, key_count):
    start = np.empty(key_count.shape[0] + 1, np.int64)
    total = 0
    for k in range(key_count.shape[0]):
        start[k] = total
        total += key_count[k]
    start[key_count.shape[0]] = total
    pos = start[:-1].copy()
    order = np.empty(row_key.shape[0], np.int64)
    for i in range(row_key.shape[0]):
        k = row_key[i]
        order[pos[k]] = i
        pos[k] += 1
    return start, order


@njit(cache=True, nogil=True, parallel=True)
def _csr_ranges(key_count, rows, starts, jkey, start, pos, order):
    """``_csr_serial`` per range of a parallel build, the ranges in parallel: range p's rows are
    rows[starts[p]:starts[p + 1]] (ascending, their key ids in ``jkey``) and its key ids lie in the
    same interval, so its keys' row runs start at starts[p] and fill that interval of ``order``."""
    n = key_count.shape[0]
    start[n] = n
    for p in prange(starts.shape[0] - 1):
        lo = starts[p]
        hi = starts[p + 1]
        total = lo
        for k in range(lo, hi):
            start[k] = total
            pos[k] = total
            total += key_count[k]
        for j in range(lo, hi):
            k = jkey[j]
            order[pos[k]] = rows[j]
            pos[k] += 1
    return start, order


def csr(table: HashTable) -> tuple[np.ndarray, np.ndarray]:
    """(start, order): the rows of key id k are order[start[k]:start[k] + key_count[k]], ascending."""
    if table.ranges is None:
        return _csr_serial(table.row_key, table.key_count)
    n = table.key_count.shape[0]
    start, pos, order = np.empty(n + 1, np.int64), np.empty(n, np.int64), np.empty(table.ranges[0].shape[0], np.int64)
    _csr_ranges(table.key_count, *table.ranges, start, pos, order)
    return start, order


@njit(cache=True, nogil=True, parallel=True)
def lookup(table_keys, slots, shift, key_rep, probe_keys, probe_hashes):
    """Key id matching each probe row, -1 when none."""
    n = probe_keys.shape[1]
    out = np.empty(n, np.int64)
    mask = slots.shape[0] - 1
    for i in prange(n):
        h = probe_hashes[i]
        hb = np.int64(h)
        s = slot_of(h, shift)
        found = -1
        while True:
            k = slots[s, 1]
            if k == -1:
                break
            if slots[s, 0] == hb and same_key(table_keys, key_rep[k], probe_keys, i):
                found = k
                break
            s = (s + 1) & mask
        out[i] = found
    return out
