"""Running frames (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) of integer and decimal sums,
counts and averages on the CPU: one chunked parallel segmented scan over the values and the partition
start flags, where the general path builds two frame-bound arrays, a prefix sum and two gathers per
row. Frames that end at the last row of a segment (the whole partition; RANGE ... CURRENT ROW: the
last peer) take the running value of that row, spread back over the segment by a second chunked
pass. The int64 sums are checked for overflow as they run: a running sum that may leave int64 returns
None and the window takes the exact general path (operators/window_sums)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads

_NO_VALIDITY = np.ones(0, np.bool_)


def _chunks(n: int) -> int:
    return max(1, min(kernel_threads() * 4, n // 65536))


def running_sums(x, valid, part_start, counts: bool):
    """(sums, counts) per row over the valid values of ``x`` (integers; ``valid`` None: all) from the
    row's partition start to the row; counts is an empty array unless ``counts``. None where a sum
    overflows int64."""
    n = x.shape[0]
    out = np.empty(n, np.int64)
    cnt = np.empty(n if counts else 0, np.int64)
    if n == 0:
        return out, cnt
    x = x.astype(np.int64, copy=False)
    has_valid = valid is not None
    ok = _running(x, valid if has_valid else _NO_VALIDITY, has_valid, part_start, _chunks(n), out, cnt, counts)
    return (out, cnt) if ok else None


@njit(cache=True)
def _overflows(a, b, s):
    return ((a ^ s) & (b ^ s)) < 0


@njit(cache=True, nogil=True, parallel=True)
def _running(x, valid, has_valid, part_start, chunks, out, cnt, counts):
    # each chunk scans from 0; the rows before a chunk's first partition start then add the running
    # sum (and count) carried in from the chunks before it
    n = x.shape[0]
    size = (n + chunks - 1) // chunks
    ends = np.zeros(chunks, np.int64)
    count_ends = np.zeros(chunks, np.int64)
    first = np.full(chunks, -1, np.int64)
    bad = np.zeros(chunks, np.bool_)
    for c in prange(chunks):
        acc = np.int64(0)
        k = np.int64(0)
        fp = -1
        wrapped = False
        for i in range(c * size, min(n, (c + 1) * size)):
            if part_start[i]:
                acc = np.int64(0)
                k = np.int64(0)
                if fp < 0:
                    fp = i
            if not has_valid or valid[i]:
                v = x[i]
                s = acc + v
                if _overflows(acc, v, s):
                    wrapped = True
                acc = s
                k += 1
            out[i] = acc
            if counts:
                cnt[i] = k
        ends[c] = acc
        count_ends[c] = k
        first[c] = fp
        bad[c] = wrapped
    carry = np.zeros(chunks, np.int64)
    count_carry = np.zeros(chunks, np.int64)
    for c in range(1, chunks):
        if first[c - 1] >= 0:
            carry[c] = ends[c - 1]
            count_carry[c] = count_ends[c - 1]
        else:
            s = carry[c - 1] + ends[c - 1]
            if _overflows(carry[c - 1], ends[c - 1], s):
                bad[c] = True
            carry[c] = s
            count_carry[c] = count_carry[c - 1] + count_ends[c - 1]
    for c in prange(chunks):
        if carry[c] != 0 or count_carry[c] != 0:
            stop = first[c] if first[c] >= 0 else min(n, (c + 1) * size)
            for i in range(c * size, stop):
                s = out[i] + carry[c]
                if _overflows(out[i], carry[c], s):
                    bad[c] = True
                out[i] = s
                if counts:
                    cnt[i] += count_carry[c]
    return not bad.any()


def spread_last(values, seg_start):
    """In place: every row of a segment (segments begin where ``seg_start`` is set) takes the value of
    the segment's last row; returns ``values``."""
    n = values.shape[0]
    if n:
        _spread_last(values, seg_start, _chunks(n))
    return values


@njit(cache=True, nogil=True, parallel=True)
def _spread_last(values, seg_start, chunks):
    # each chunk spreads backwards from its segment ends; the rows after a chunk's last segment end
    # take the value at the first segment end in a later chunk
    n = values.shape[0]
    size = (n + chunks - 1) // chunks
    first_end = np.full(chunks, -1, np.int64)
    for c in prange(chunks):
        for i in range(c * size, min(n, (c + 1) * size)):
            if i == n - 1 or seg_start[i + 1]:
                first_end[c] = i
                break
    carry = np.zeros(chunks, np.int64)
    ahead = values[n - 1]
    for c in range(chunks - 1, -1, -1):
        carry[c] = ahead  # the value of the segment open at the chunk's end
        if first_end[c] >= 0:
            ahead = values[first_end[c]]
    for c in prange(chunks):
        cur = carry[c]
        for i in range(min(n, (c + 1) * size) - 1, c * size - 1, -1):
            if i == n - 1 or seg_start[i + 1]:
                cur = values[i]
            values[i] = cur
