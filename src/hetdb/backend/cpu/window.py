"""Window-function kernels on the CPU (Numba): rows arrive sorted by partition and order keys, with
flags where a partition and a peer group (rows equal on the ORDER BY keys) begin. Every function is
one segmented pass over the sorted rows.

Frames are half-open row ranges ``[fs, fe)`` per row, clamped to the row's partition. Within a
partition both ends never decrease (ROWS and RANGE frames with constant offsets), which the sliding
min/max relies on.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads
from hetdb.backend.cpu.window_stats import interpolate


def _out(n):
    """An int64 output array allocated by NumPy (which asks for huge pages), not inside a kernel
    (Numba's allocator faults every 4 KiB page in on first touch: 4x slower on large arrays)."""
    return np.empty(n, np.int64)


# Frame bound codes (plan.window.Frame sides).
BOUND_CODES = {"unbounded_preceding": 0, "preceding": 1, "current": 2, "following": 3,
               "unbounded_following": 4}
# Float frames this wide or narrower are summed row by row; wider ones by partition-local prefix sums.
_DIRECT_SUM_WIDTH = 32


@njit(cache=True, nogil=True, parallel=True)
def _run_bounds(flags, chunks, lo, hi):
    """Per row: the start of its run (the last flagged row at or before it) and the end (the next
    flagged row after it, or n); ``flags[0]`` is set. Each chunk of rows scans forward and backward on
    its own; a second pass fills in the rows whose run crosses a chunk border from the neighbouring
    chunks' carries."""
    n = flags.shape[0]
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        a = c * size
        b = min(n, a + size)
        last = -1
        for i in range(a, b):
            if flags[i]:
                last = i
            lo[i] = last
        nxt = -1
        for i in range(b - 1, a - 1, -1):
            hi[i] = nxt
            if flags[i]:
                nxt = i
    carry_lo = np.zeros(chunks, np.int64)
    carry_hi = np.full(chunks, n, np.int64)
    cur = 0
    for c in range(chunks):
        carry_lo[c] = cur
        b = min(n, c * size + size)
        if b > c * size and lo[b - 1] >= 0:
            cur = lo[b - 1]
    cur = n
    for c in range(chunks - 1, -1, -1):
        carry_hi[c] = cur
        a = c * size
        if min(n, a + size) > a:
            first = a if flags[a] else hi[a]  # the chunk's first flagged row, -1 for none
            if first >= 0:
                cur = first
    for c in prange(chunks):
        a = c * size
        b = min(n, a + size)
        for i in range(a, b):
            if lo[i] < 0:
                lo[i] = carry_lo[c]
            if hi[i] < 0:
                hi[i] = carry_hi[c]


def run_bounds(flags):
    """Per row: the start and end (exclusive) of its run of rows, runs starting where ``flags`` is
    set (``flags[0]`` is), from one parallel pass."""
    n = flags.shape[0]
    lo = np.empty(n, np.int64)
    hi = np.empty(n, np.int64)
    _run_bounds(flags, max(1, min(kernel_threads() * 4, n // 4096)), lo, hi)
    return lo, hi


def boundaries(part_start, peer_start):
    """Per row: partition start/end and peer-group start/end (ends exclusive)."""
    return (*run_bounds(part_start), *run_bounds(part_start | peer_start))


@njit(cache=True, nogil=True, parallel=True)
def mark_changes(a, flags):
    """Set ``flags[i]`` where ``a[i]`` differs from the row before."""
    for i in prange(1, a.shape[0]):
        if a[i] != a[i - 1]:
            flags[i] = True


def dense_rank(part_start, peer_start):
    return _dense_rank(part_start, peer_start, _out(part_start.shape[0]))


@njit(cache=True)
def _dense_rank(part_start, peer_start, out):
    n = part_start.shape[0]
    d = 0
    for i in range(n):
        if part_start[i]:
            d = 0
        if part_start[i] or peer_start[i]:
            d += 1
        out[i] = d
    return out


def ntile(ps, pe, buckets):
    """DuckDB's NTILE: the first (rows mod buckets) tiles get one row more."""
    return _ntile(ps, pe, buckets, _out(ps.shape[0]))


@njit(cache=True, nogil=True, parallel=True)
def _ntile(ps, pe, buckets, out):
    n = ps.shape[0]
    for i in prange(n):
        total = pe[i] - ps[i]
        b = buckets if buckets < total else total
        size = total // b
        large = total - b * size
        small_end = large * (size + 1)
        r = i - ps[i]
        if r < small_end:
            out[i] = 1 + r // (size + 1)
        else:
            out[i] = 1 + large + (r - small_end) // size
    return out


def shifted(ps, pe, shift):
    """Row i + shift when it lies in i's partition, else -1 (lag: negative shift, lead: positive)."""
    return _shifted(ps, pe, shift, _out(ps.shape[0]))


@njit(cache=True, nogil=True, parallel=True)
def _shifted(ps, pe, shift, out):
    n = ps.shape[0]
    for i in prange(n):
        j = i + shift
        out[i] = j if ps[i] <= j < pe[i] else -1
    return out


@njit(cache=True)
def _bound(code, off, i, ps, pe, gs, ge, is_end):
    if code == 0:
        return ps
    if code == 4:
        return pe
    if code == 2:
        return ge if is_end else gs
    j = i - off if code == 1 else i + off
    if is_end:
        j += 1
    if j < ps:
        return ps
    if j > pe:
        return pe
    return j


def rows_frame(ps, pe, s_code, s_off, e_code, e_off):
    return _rows_frame(ps, pe, s_code, s_off, e_code, e_off, _out(ps.shape[0]), _out(ps.shape[0]))


@njit(cache=True, nogil=True, parallel=True)
def _rows_frame(ps, pe, s_code, s_off, e_code, e_off, fs, fe):
    n = ps.shape[0]
    for i in prange(n):
        s = _bound(s_code, s_off, i, ps[i], pe[i], i, i + 1, False)
        e = _bound(e_code, e_off, i, ps[i], pe[i], i, i + 1, True)
        fs[i] = s
        fe[i] = e if e > s else s
    return fs, fe


@njit(cache=True)
def _lower(w, lo, hi, x):
    """First index in [lo, hi) with w >= x (w ascending)."""
    while lo < hi:
        m = (lo + hi) >> 1
        if w[m] < x:
            lo = m + 1
        else:
            hi = m
    return lo


@njit(cache=True)
def _upper(w, lo, hi, x):
    """First index in [lo, hi) with w > x (w ascending)."""
    while lo < hi:
        m = (lo + hi) >> 1
        if w[m] <= x:
            lo = m + 1
        else:
            hi = m
    return lo


def range_frame(ps, pe, gs, ge, w, valid, s_code, s_off, e_code, e_off):
    """RANGE frames over one ORDER BY key ``w`` (ascending: a DESC key arrives negated). Rows whose
    key is NULL frame their NULL peers for offset bounds."""
    n = ps.shape[0]
    return _range_frame(ps, pe, gs, ge, w, valid, s_code, s_off, e_code, e_off, _out(n), _out(n))


@njit(cache=True)
def _range_frame(ps, pe, gs, ge, w, valid, s_code, s_off, e_code, e_off, fs, fe):
    n = ps.shape[0]
    a = 0
    b = 0
    for i in range(n):
        if i == ps[i]:
            # the non-NULL rows of this partition form one run (NULLs sort first or last)
            a = ps[i]
            while a < pe[i] and not valid[a]:
                a += 1
            b = a
            while b < pe[i] and valid[b]:
                b += 1
        if s_code == 1 or s_code == 3:
            if not valid[i]:
                s = gs[i]
            elif s_code == 1:
                s = _lower(w, a, b, w[i] - s_off)
            else:
                s = _lower(w, a, b, w[i] + s_off)
        else:
            s = _bound(s_code, 0, i, ps[i], pe[i], gs[i], ge[i], False)
        if e_code == 1 or e_code == 3:
            if not valid[i]:
                e = ge[i]
            elif e_code == 1:
                e = _upper(w, a, b, w[i] - e_off)
            else:
                e = _upper(w, a, b, w[i] + e_off)
        else:
            e = _bound(e_code, 0, i, ps[i], pe[i], gs[i], ge[i], True)
        fs[i] = s
        fe[i] = e if e > s else s
    return fs, fe


def prefix_counts(valid):
    return _prefix_counts(valid, _out(valid.shape[0] + 1))


@njit(cache=True)
def _prefix_counts(valid, out):
    n = valid.shape[0]
    out[0] = 0
    for i in range(n):
        out[i + 1] = out[i] + (1 if valid[i] else 0)
    return out


def frame_sum_int(x, valid, fs, fe):
    """Exact integer frame sums through one prefix sum (int64 arithmetic wraps)."""
    n = x.shape[0]
    chunks = max(1, min(kernel_threads() * 4, n // 65536))
    return _frame_sum_int(x, valid, fs, fe, chunks, _out(n + 1), _out(n))


@njit(cache=True, nogil=True, parallel=True)
def _frame_sum_int(x, valid, fs, fe, chunks, pre, out):
    # the prefix sum in two parallel passes: each chunk's total, then each chunk's running sums
    # from the totals of the chunks before it
    n = x.shape[0]
    size = (n + chunks - 1) // chunks
    totals = np.zeros(chunks + 1, np.int64)
    for c in prange(chunks):
        acc = np.int64(0)
        for i in range(c * size, min(n, (c + 1) * size)):
            if valid[i]:
                acc += x[i]
        totals[c + 1] = acc
    for c in range(chunks):
        totals[c + 1] += totals[c]
    pre[0] = 0
    for c in prange(chunks):
        acc = totals[c]
        for i in range(c * size, min(n, (c + 1) * size)):
            if valid[i]:
                acc += x[i]
            pre[i + 1] = acc
    for i in prange(n):
        out[i] = pre[fe[i]] - pre[fs[i]]
    return out


def frame_sum_float(x, valid, ps, fs, fe):
    """Float frame sums: narrow frames row by row, wide ones by partition-local prefix sums of the
    finite values (a running sum is then exactly the sequential sum) plus counts of NaN, +inf and
    -inf in the frame, which decide a non-finite sum as any summation order would (a prefix sum
    that passed an inf would give inf - inf = NaN for every frame after it)."""
    n = x.shape[0]
    return _frame_sum_float(x, valid, ps, fs, fe, np.zeros(n + 1, np.float64), np.zeros((n + 1, 3), np.int64),
                            np.empty(n, np.float64))


@njit(cache=True)
def _frame_sum_float(x, valid, ps, fs, fe, pre, special, out):
    n = x.shape[0]
    for i in range(n):
        v = x[i] if valid[i] else 0.0
        finite = np.isfinite(v)
        pre[i + 1] = (v if finite else 0.0) if i == ps[i] else pre[i] + (v if finite else 0.0)
        special[i + 1, 0] = special[i, 0] + (1 if v != v else 0)
        special[i + 1, 1] = special[i, 1] + (1 if v == np.inf else 0)
        special[i + 1, 2] = special[i, 2] + (1 if v == -np.inf else 0)
    for i in range(n):
        s = fs[i]
        e = fe[i]
        if e - s <= _DIRECT_SUM_WIDTH:
            acc = 0.0
            for j in range(s, e):
                if valid[j]:
                    acc += x[j]
            out[i] = acc
            continue
        nan = special[e, 0] - special[s, 0]
        pos = special[e, 1] - special[s, 1]
        neg = special[e, 2] - special[s, 2]
        if nan > 0 or (pos > 0 and neg > 0):
            out[i] = np.nan
        elif pos > 0:
            out[i] = np.inf
        elif neg > 0:
            out[i] = -np.inf
        else:
            out[i] = pre[e] - (pre[s] if s > ps[i] else 0.0)
    return out


def frame_extreme(key, valid, ps, fs, fe, is_max):
    """Index of the frame's min (max) valid key per row, -1 for none: a monotonic deque per
    partition (frame ends never decrease within a partition)."""
    n = key.shape[0]
    return _frame_extreme(key, valid, ps, fs, fe, is_max, _out(n), _out(n))


@njit(cache=True)
def _frame_extreme(key, valid, ps, fs, fe, is_max, out, dq):
    n = key.shape[0]
    head = 0
    tail = 0
    hi = 0
    for i in range(n):
        if i == ps[i]:
            head = 0
            tail = 0
            hi = fs[i]
        while hi < fe[i]:
            if valid[hi]:
                v = key[hi]
                if is_max:
                    while tail > head and key[dq[tail - 1]] < v:
                        tail -= 1
                else:
                    while tail > head and key[dq[tail - 1]] > v:
                        tail -= 1
                dq[tail] = hi
                tail += 1
            hi += 1
        while tail > head and dq[head] < fs[i]:
            head += 1
        out[i] = dq[head] if tail > head else -1
    return out


_RADIX_BITS = 11  # 2,048 buckets: each thread's counts and scatter targets stay in cache
# Below this many rows one thread sorts (the thread pool's start-up costs more than it saves).
_PARALLEL_RADIX_ROWS = 1 << 16


def radix_refine(code, bits, order):
    """``order`` stably re-sorted by ``code[order]`` (non-negative int64 codes below ``2**bits``):
    LSD radix sort with 11-bit digits, each pass counted and scattered by every kernel thread over
    its own slice of the rows. Sorting by the last key first and refining by each earlier key gives
    a lexicographic stable sort."""
    n = order.shape[0]
    chunks = kernel_threads() if n >= _PARALLEL_RADIX_ROWS else 1
    return _radix_refine(code, bits, order, max(chunks, 1), _out(n), order.copy(), _out(n), _out(n))


@njit(cache=True, nogil=True, parallel=True)
def _radix_refine(code, bits, order, chunks, keys, idx, tmp_k, tmp_i):
    n = order.shape[0]
    for i in prange(n):
        keys[i] = code[order[i]]
    radix = 1 << _RADIX_BITS
    mask = radix - 1
    size = (n + chunks - 1) // chunks
    counts = np.zeros((chunks, radix), np.int64)
    shift = 0
    while shift < bits:
        counts[:, :] = 0
        for c in prange(chunks):
            for i in range(c * size, min(n, (c + 1) * size)):
                counts[c, (keys[i] >> shift) & mask] += 1
        # a digit that every row shares leaves the order as it is: skip the scatter
        single = False
        start = 0
        for d in range(radix):
            total = 0
            for c in range(chunks):
                cnt = counts[c, d]
                counts[c, d] = start + total
                total += cnt
            single = single or total == n
            start += total
        if not single:
            for c in prange(chunks):
                for i in range(c * size, min(n, (c + 1) * size)):
                    d = (keys[i] >> shift) & mask
                    p = counts[c, d]
                    counts[c, d] = p + 1
                    tmp_k[p] = keys[i]
                    tmp_i[p] = idx[i]
            keys, tmp_k = tmp_k, keys
            idx, tmp_i = tmp_i, idx
        shift += _RADIX_BITS
    return idx


@njit(cache=True)
def partition_variance(x, valid, ps, pe, ddof):
    """Per row: the variance of its partition's valid values (two passes: mean, then squared
    deviations); ``ok`` False where the partition has no more than ``ddof`` values."""
    n = x.shape[0]
    out = np.zeros(n, np.float64)
    ok = np.zeros(n, np.bool_)
    i = 0
    while i < n:
        s = ps[i]
        e = pe[i]
        c = 0
        mean = 0.0
        for j in range(s, e):
            if valid[j]:
                c += 1
                mean += x[j]
        if c > ddof:
            mean /= c
            m2 = 0.0
            for j in range(s, e):
                if valid[j]:
                    d = x[j] - mean
                    m2 += d * d
            v = m2 / (c - ddof)
            for j in range(s, e):
                out[j] = v
                ok[j] = True
        i = e
    return out, ok


@njit(cache=True)
def partition_quantile(xs, valid, ps, pe, q, desc=False):
    """Per row: the interpolated ``q`` quantile (window_stats.interpolate) of its partition, whose
    valid values come first and ascending in ``xs``: doubles, or unscaled DECIMAL values (int64, and
    so is the result). ``desc``: of the values in descending order (positions from the largest)."""
    n = xs.shape[0]
    out = np.zeros_like(xs)
    ok = np.zeros(n, np.bool_)
    i = 0
    while i < n:
        s = ps[i]
        e = pe[i]
        c = 0
        while s + c < e and valid[s + c]:
            c += 1
        if c > 0:
            pos = q * (c - 1)
            lo = int(np.floor(pos))
            hi = int(np.ceil(pos))
            d = pos - lo
            if desc:
                lo, hi = c - 1 - lo, c - 1 - hi
            v = xs[s + lo] if lo == hi else interpolate(xs[s + lo], xs[s + hi], d)
            for j in range(s, e):
                out[j] = v
                ok[j] = True
        i = e
    return out, ok


@njit(cache=True)
def partition_mode(order, key, valid, ps, pe):
    """Per row: a row holding its partition's most frequent valid key (ties: the value that appears
    first), -1 for none. ``order`` sorts each partition's rows by (valid first, key, row)."""
    n = order.shape[0]
    out = np.full(n, -1, np.int64)
    i = 0
    while i < n:
        s = ps[i]
        e = pe[i]
        best = -1
        best_count = 0
        j = s
        while j < e and valid[order[j]]:
            r = j
            while r < e and valid[order[r]] and key[order[r]] == key[order[j]]:
                r += 1
            first = order[j]
            if r - j > best_count or (r - j == best_count and first < best):
                best = first
                best_count = r - j
            j = r
        for t in range(s, e):
            out[t] = best
        i = e
    return out


@njit(cache=True, nogil=True, parallel=True)
def pack_key(code, key, span, lo):
    """``code * span + (key - lo)`` in place: one more key packed into a row code."""
    for i in prange(code.shape[0]):
        code[i] = code[i] * span + (key[i] - lo)


@njit(cache=True, nogil=True, parallel=True)
def descents(code):
    """How many rows have a smaller code than the row before (0: already sorted)."""
    n = code.shape[0]
    bad = 0
    for i in prange(1, n):
        if code[i] < code[i - 1]:
            bad += 1
    return bad
