"""Direct-indexed join tables whose keys repeat, built on every kernel thread (Numba).

A direct table has a slot per key value in [lo, lo + size). Built in one pass over the rows, its
inserts ran on one thread (then the CSR layout, on one thread too): TPC-H q07's lineitem and orders
builds at SF 10 took ~110 ms of one core after their pipelines' workers, whatever the thread count.

Here the slots are cut into P equal ranges and the rows grouped by the range of their key (a stable
counting sort, in parallel over chunks of rows), so P threads insert without sharing a slot, each
visiting its rows in ascending order (a key's representative is its lowest row, as in the serial
build). Key ids of range p are allocated from p's segment of the sorted rows, so they are unique
without coordination: ids are sparse (an unused id has count 0), as in the parallel hash build
(hashtable.py), and the rows grouped by range give the CSR layout range by range (hashtable.csr).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.hashtable import HashTable
from hetdb.backend.cpu.keys import kernel_threads

_RANGE_SLOTS = 1 << 16  # slots of one range at most (int32: 256 KiB, in a core's L2 cache)
_MAX_RANGES = 1 << 12


@njit(cache=True, nogil=True, parallel=True)
def _group_rows(key, lo, width, nparts, nchunks, rows, direct):
    """Rows grouped by the range of their slot (stable) and where each range starts; ``direct``
    cleared (-1) on the way."""
    n = key.shape[0]
    for s in prange(direct.shape[0]):
        direct[s] = -1
    hist = np.zeros((nchunks, nparts), np.int64)
    for c in prange(nchunks):
        for i in range(c * n // nchunks, (c + 1) * n // nchunks):
            hist[c, (np.int64(key[i]) - lo) // width] += 1
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
            p = (np.int64(key[i]) - lo) // width
            rows[pos[c, p]] = i
            pos[c, p] += 1
    return starts


@njit(cache=True, nogil=True, parallel=True)
def _insert_ranges(key, lo, rows, starts, direct, key_rep, key_count, row_key, jkey):
    """Inserts range by range (see the module docstring); the number of distinct keys."""
    nparts = starts.shape[0] - 1
    used = np.zeros(nparts, np.int64)
    for p in prange(nparts):
        nid = starts[p]
        for j in range(starts[p], starts[p + 1]):
            i = rows[j]
            c = np.int64(key[i]) - lo
            k = direct[c]
            if k == -1:
                direct[c] = nid
                key_rep[nid] = i
                key_count[nid] = 1
                row_key[i] = nid
                jkey[j] = nid
                nid += 1
            else:
                key_count[k] += 1
                row_key[i] = k
                jkey[j] = k
        used[p] = nid - starts[p]
    return used.sum()


def direct_build_parallel(key: np.ndarray, lo: np.int64, size: int) -> tuple[np.ndarray, HashTable]:
    """(direct slots, the table's key ids with their ranges) over ``key``'s rows, keys in
    [lo, lo + size); see the module docstring."""
    n = int(key.shape[0])
    threads = kernel_threads()
    nparts = int(min(_MAX_RANGES, max(4 * threads, -(-size // _RANGE_SLOTS)), max(1, size)))
    width = -(-size // nparts)
    nparts = -(-size // width)
    rows = np.empty(n, np.int64)
    direct = np.empty(size, np.int32)  # key ids < n < 2**31
    starts = _group_rows(key, lo, np.int64(width), nparts, min(nparts, 4 * threads), rows, direct)
    key_rep = np.empty(n, np.int64)
    key_count = np.zeros(n, np.int64)
    row_key = np.empty(n, np.int64)
    jkey = np.empty(n, np.int64)
    distinct = _insert_ranges(key, lo, rows, starts, direct, key_rep, key_count, row_key, jkey)
    table = HashTable(np.empty((0, 2), np.int64), np.uint64(0), key_rep, key_count, np.empty(0, np.int64),
                      row_key, (rows, starts, jkey), int(distinct))
    return direct, table
