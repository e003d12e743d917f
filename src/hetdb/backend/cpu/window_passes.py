"""Per-row passes of the window operator on the CPU, each one parallel Numba loop where NumPy would
make one to four serial passes (and allocate their temporaries): row numbers and ranks from the
partition and peer start flags, frame row counts, the value range and widest frame that decide
whether an int64 prefix sum is exact, and averages from exact sums. On many cores the serial NumPy
passes, not the sort, were what kept the window from scaling."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads


def _chunks(n: int) -> int:
    return max(1, min(kernel_threads() * 4, n // 65536))


def frame_counts(valid, fs, fe):
    """(rows counted, frame not empty) per row: the valid rows of ``[fs, fe)`` (``valid`` None:
    every row counts)."""
    n = fs.shape[0]
    cnt, has = np.empty(n, np.int64), np.empty(n, np.bool_)
    if valid is None:
        _widths(fs, fe, cnt, has)
    else:
        _valid_counts(valid, fs, fe, _chunks(n), np.empty(n + 1, np.int64), cnt, has)
    return cnt, has


@njit(cache=True, nogil=True, parallel=True)
def _widths(fs, fe, cnt, has):
    n = fs.shape[0]
    for i in prange(n):
        c = fe[i] - fs[i]
        cnt[i] = c
        has[i] = c > 0


@njit(cache=True, nogil=True, parallel=True)
def _valid_counts(valid, fs, fe, chunks, pre, cnt, has):
    # the prefix count in two parallel passes: each chunk's total, then its running counts from the
    # totals of the chunks before it
    n = valid.shape[0]
    size = (n + chunks - 1) // chunks
    totals = np.zeros(chunks + 1, np.int64)
    for c in prange(chunks):
        acc = 0
        for i in range(c * size, min(n, (c + 1) * size)):
            acc += 1 if valid[i] else 0
        totals[c + 1] = acc
    for c in range(chunks):
        totals[c + 1] += totals[c]
    pre[0] = 0
    for c in prange(chunks):
        acc = totals[c]
        for i in range(c * size, min(n, (c + 1) * size)):
            acc += 1 if valid[i] else 0
            pre[i + 1] = acc
    for i in prange(fs.shape[0]):
        c = pre[fe[i]] - pre[fs[i]]
        cnt[i] = c
        has[i] = c > 0


def value_span(d, fs, fe):
    """(min, max) of the int64 values ``d`` and the widest frame ``fe - fs`` (0 for no rows)."""
    n = d.shape[0]
    return _value_span(d, fs, fe, _chunks(max(n, fs.shape[0])))


@njit(cache=True, nogil=True, parallel=True)
def _value_span(d, fs, fe, chunks):
    n = d.shape[0]
    m = fs.shape[0]
    los = np.empty(chunks, np.int64)
    his = np.empty(chunks, np.int64)
    widths = np.zeros(chunks, np.int64)
    for c in prange(chunks):
        lo = d[0]
        hi = d[0]
        for i in range(c * n // chunks, (c + 1) * n // chunks):
            v = d[i]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        w = 0
        for i in range(c * m // chunks, (c + 1) * m // chunks):
            if fe[i] - fs[i] > w:
                w = fe[i] - fs[i]
        los[c] = lo
        his[c] = hi
        widths[c] = w
    return los.min(), his.max(), widths.max()


def averages(total, cnt, scale):
    """``total / scale / cnt`` per row (0.0 where ``cnt`` is 0: the row is NULL)."""
    out = np.empty(total.shape[0], np.float64)
    _averages(total, cnt, scale, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _averages(total, cnt, scale, out):
    for i in prange(total.shape[0]):
        out[i] = total[i] / scale / cnt[i] if cnt[i] > 0 else 0.0


def dense_rank(part_start, peer_start):
    """DENSE_RANK from the flags of partition and peer-group starts (``part_start[0]`` set): each
    chunk of rows counts from 0, then the rows before a chunk's first partition start add the count
    the chunks before them carried."""
    n = part_start.shape[0]
    out = np.empty(n, np.int64)
    if n:
        _dense_rank_chunks(part_start, peer_start, _chunks(n), out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _dense_rank_chunks(part_start, peer_start, chunks, out):
    n = part_start.shape[0]
    size = (n + chunks - 1) // chunks
    ends = np.zeros(chunks, np.int64)
    first = np.full(chunks, -1, np.int64)  # the chunk's first partition start
    for c in prange(chunks):
        d = 0
        fp = -1
        for i in range(c * size, min(n, (c + 1) * size)):
            if part_start[i]:
                d = 0
                if fp < 0:
                    fp = i
            if part_start[i] or peer_start[i]:
                d += 1
            out[i] = d
        ends[c] = d
        first[c] = fp
    carry = np.zeros(chunks, np.int64)
    for c in range(1, chunks):
        carry[c] = ends[c - 1] if first[c - 1] >= 0 else carry[c - 1] + ends[c - 1]
    for c in prange(chunks):
        if carry[c]:
            stop = first[c] if first[c] >= 0 else min(n, (c + 1) * size)
            for i in range(c * size, stop):
                out[i] += carry[c]


def ranks(part_start, peer_start):
    """ROW_NUMBER (``peer_start`` None) or RANK per row straight from the flags of partition and peer
    starts (``part_start[0]`` set; peer starts include partition starts): the row (or its peer group's
    first row) minus its partition's first row, plus one. One chunked scan carries each chunk's last
    starts into the next, where the general path builds the start and end arrays of both. Outputs
    are allocated by NumPy (huge pages), not inside the kernels (Numba's allocator faults every 4 KiB
    page in on first touch)."""
    n = part_start.shape[0]
    out = np.empty(n, np.int64)
    if n:
        rows = peer_start is None
        _ranks(part_start, part_start if rows else peer_start, rows, _chunks(n), out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _ranks(part_start, peer_start, rows, chunks, out):
    n = part_start.shape[0]
    size = (n + chunks - 1) // chunks
    last_p = np.full(chunks, -1, np.int64)
    last_g = np.full(chunks, -1, np.int64)
    for c in prange(chunks):
        lp = -1
        lg = -1
        for i in range(c * size, min(n, (c + 1) * size)):
            if part_start[i]:
                lp = i
            if peer_start[i]:
                lg = i
        last_p[c] = lp
        last_g[c] = lg
    p_in = np.zeros(chunks, np.int64)
    g_in = np.zeros(chunks, np.int64)
    for c in range(1, chunks):
        p_in[c] = last_p[c - 1] if last_p[c - 1] >= 0 else p_in[c - 1]
        g_in[c] = last_g[c - 1] if last_g[c - 1] >= 0 else g_in[c - 1]
    for c in prange(chunks):
        p = p_in[c]
        g = g_in[c]
        for i in range(c * size, min(n, (c + 1) * size)):
            if part_start[i]:
                p = i
            if peer_start[i]:
                g = i
            out[i] = (i if rows else g) - p + 1


def ntile_runs(part_start, buckets):
    """NTILE(buckets) straight from the partition-start flags (the first (rows mod buckets) tiles get
    one row more), without per-row partition bounds: the partitions' starts are found once and each
    chunk of rows walks them (a window without PARTITION BY is one run over every row)."""
    n = part_start.shape[0]
    starts = np.flatnonzero(part_start).astype(np.int64)
    if starts.shape[0] == 0 or starts[0] != 0:
        starts = np.concatenate((np.zeros(1, np.int64), starts))
    out = np.empty(n, np.int64)
    _ntile_runs(starts, n, buckets, _chunks(n), out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _ntile_runs(starts, n, buckets, chunks, out):
    size = (n + chunks - 1) // chunks
    m = starts.shape[0]
    for c in prange(chunks):
        a = c * size
        b = min(n, a + size)
        if a >= b:
            continue
        p = np.searchsorted(starts, a, side="right") - 1  # the partition holding row a
        while a < b:
            s = starts[p]
            e = starts[p + 1] if p + 1 < m else n
            total = e - s
            t = buckets if buckets < total else total
            tile = total // t
            large = total - t * tile
            small_end = large * (tile + 1)
            stop = e if e < b else b
            for i in range(a, stop):
                r = i - s
                if r < small_end:
                    out[i] = 1 + r // (tile + 1)
                else:
                    out[i] = 1 + large + (r - small_end) // tile
            a = stop
            p += 1
