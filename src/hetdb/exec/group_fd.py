"""Plain-string group keys that follow the other group keys (a functional dependency found at run time).

``GROUP BY c_custkey, c_name, c_address, c_comment`` (TPC-H q10, and every query that groups by a key
and the columns that describe it) has plain-string keys whose value is fixed by the other keys.
Numbering such strings (``factorize_strings``: a sort per 8 bytes of the longest string) costs far more
than grouping by the other keys and checking that every row's string equals the string of its
group's first row: lengths first, then the bytes, in chunks of bounded size. When the check holds
the grouping by the other keys *is* the grouping by all keys; when it fails for any row, the caller
groups by every key as before. The answer is the same either way; only the work differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads
from hetdb.column import Column

CHUNK_CHARS = 1 << 24  # bytes compared per step (index arrays of this many int64 values)
_PARALLEL_ROWS = 1 << 16  # rows from which the host check runs on every kernel thread


def plain_string(col: Column) -> bool:
    return col.dtype.kind == "string" and col.dictionary is None and col.offsets is not None


def follows_groups(xp: Any, col: Column, gid: Any, first: Any) -> bool:
    """Whether every row of the plain-string ``col`` holds the same value (or NULL) as the first row
    of its group (``gid`` per row, ``first`` row of each group)."""
    n = int(gid.shape[0])
    if n == 0:
        return True
    if xp is np:
        valid = col.validity if col.validity is not None else np.ones(0, np.bool_)
        args = (np.ascontiguousarray(col.offsets, dtype=np.int64), col.chars, valid, col.validity is not None,
                gid, first)
        threads = kernel_threads()
        if n >= _PARALLEL_ROWS and threads > 1:
            # the final merge's check runs after the workers, on the connection's threads (TPC-H q10
            # at SF 10: ~30 ms of one thread for the groups' c_name, c_address, c_comment, c_phone)
            return bool(_follows_host_parallel(*args, np.int64(4 * threads)))
        return bool(_follows_host(*args))
    rep = first[gid]
    offsets = col.offsets.astype(xp.int64, copy=False)
    lengths = offsets[1:] - offsets[:-1]
    check = rep != xp.arange(n, dtype=rep.dtype)
    if col.validity is not None:
        if not bool(xp.all(col.validity == col.validity[rep])):
            return False
        check &= col.validity
    if not bool(xp.all(xp.where(check, lengths == lengths[rep], True))):
        return False
    rows = xp.nonzero(check & (lengths > 0))[0]
    if rows.shape[0] == 0:
        return True
    row_len = lengths[rows]
    ends = xp.cumsum(row_len)
    chars = col.chars
    start = 0
    while start < len(rows):
        # rows [start, stop) hold at most CHUNK_CHARS bytes (at least one row)
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(xp.searchsorted(ends, base + CHUNK_CHARS, side="right")))
        r = rows[start:stop]
        lens = row_len[start:stop]
        owner = xp.repeat(xp.arange(r.shape[0], dtype=xp.int64), lens)
        within = xp.arange(owner.shape[0], dtype=xp.int64) - (xp.cumsum(lens) - lens)[owner]
        mine = chars[offsets[r][owner] + within]
        theirs = chars[offsets[rep[r]][owner] + within]
        if not bool(xp.all(mine == theirs)):
            return False
        start = stop
    return True


@njit(cache=True, nogil=True)
def _follows_host(offsets, chars, valid, nullable, gid, first):
    """follows_groups on the host: one pass over the rows, comparing each with its group's first."""
    return _follows_rows(offsets, chars, valid, nullable, gid, first, 0, gid.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def _follows_host_parallel(offsets, chars, valid, nullable, gid, first, nchunks):
    """_follows_host over ``nchunks`` chunks of rows on the kernel threads."""
    n = gid.shape[0]
    ok = np.ones(nchunks, np.bool_)
    for c in prange(nchunks):
        ok[c] = _follows_rows(offsets, chars, valid, nullable, gid, first, c * n // nchunks, (c + 1) * n // nchunks)
    return ok.all()


@njit(cache=True, nogil=True)
def _follows_rows(offsets, chars, valid, nullable, gid, first, lo, hi):
    for i in range(lo, hi):
        r = first[gid[i]]
        if r == i:
            continue
        if nullable:
            if valid[i] != valid[r]:
                return False
            if not valid[i]:
                continue
        a, b = offsets[i], offsets[r]
        length = offsets[i + 1] - a
        if offsets[r + 1] - b != length:
            return False
        for j in range(length):
            if chars[a + j] != chars[b + j]:
                return False
    return True


def follows_groups_at(col: Column, rows: np.ndarray, gid: np.ndarray, first: np.ndarray) -> bool:
    """follows_groups for rows whose strings stay in ``col`` (host): row i's string is ``col``'s row
    ``rows[i]``. The partitioned final merge (exec/operators/aggregate_parallel.py) checks its
    partitions' rows this way without gathering their strings."""
    if gid.shape[0] == 0:
        return True
    valid = col.validity if col.validity is not None else np.ones(0, np.bool_)
    return bool(_follows_at(np.ascontiguousarray(col.offsets, dtype=np.int64), col.chars, valid,
                            col.validity is not None, np.ascontiguousarray(rows, dtype=np.int64), gid, first))


@njit(cache=True, nogil=True)
def _follows_at(offsets, chars, valid, nullable, rows, gid, first):
    for i in range(gid.shape[0]):
        f = first[gid[i]]
        if f == i:
            continue
        a_row, b_row = rows[i], rows[f]
        if nullable:
            if valid[a_row] != valid[b_row]:
                return False
            if not valid[a_row]:
                continue
        a, b = offsets[a_row], offsets[b_row]
        length = offsets[a_row + 1] - a
        if offsets[b_row + 1] - b != length:
            return False
        for j in range(length):
            if chars[a + j] != chars[b + j]:
                return False
    return True
