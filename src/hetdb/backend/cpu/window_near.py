"""Window functions that reach only a few rows around each row, on the CPU: lag/lead by a small
offset and sum/count/avg over a narrow ROWS frame (n PRECEDING / CURRENT ROW .. CURRENT ROW / m
FOLLOWING). Each row looks at its neighbours and the partition start flags between them, so no
per-row partition bounds (two int64 arrays and a backward pass), frame bounds or prefix sums are
built: one parallel pass per function."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# Offsets and frame widths up to this many rows are walked row by row (the work per row grows with it).
MAX_REACH = 64

_NO_VALIDITY = np.ones(0, np.bool_)


def shifted(part_start, shift: int):
    """Row ``i + shift`` where it lies in row i's partition, else -1 (lag: negative ``shift``)."""
    out = np.empty(part_start.shape[0], np.int64)
    _shifted(part_start, shift, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _shifted(part_start, shift, out):
    n = part_start.shape[0]
    for i in prange(n):
        out[i] = _shifted_row(part_start, shift, i, n)


@njit(cache=True)
def _shifted_row(part_start, shift, i, n):
    i = np.int64(i)
    j = i + shift
    if j < 0 or j >= n:
        return -1
    lo = j + 1 if shift < 0 else i + 1
    hi = i if shift < 0 else j
    for k in range(lo, hi + 1):  # a partition starting after the earlier row separates them
        if part_start[k]:
            return -1
    return j


def frame_sums(x, valid, part_start, before: int, after: int, counts: bool):
    """(sums, counts) of the valid integers of ``x`` (``valid`` None: all) over rows ``i - before``
    .. ``i + after`` of row i's partition (``before``, ``after`` >= 0); counts empty unless
    ``counts``. None where a sum may leave int64."""
    n = x.shape[0]
    out = np.empty(n, np.int64)
    cnt = np.empty(n if counts else 0, np.int64)
    x = x.astype(np.int64, copy=False)
    has_valid = valid is not None
    bad = np.zeros(1, np.bool_)
    _frame_sums(x, valid if has_valid else _NO_VALIDITY, has_valid, part_start, before, after, out, cnt,
                counts, bad)
    return None if bad[0] else (out, cnt)


@njit(cache=True, nogil=True, parallel=True)
def _frame_sums(x, valid, has_valid, part_start, before, after, out, cnt, counts, bad):
    n = x.shape[0]
    for i in prange(n):
        lo, hi = _reach(part_start, i, before, after, n)
        acc = np.int64(0)
        k = 0
        for j in range(lo, hi + 1):
            if not has_valid or valid[j]:
                v = x[j]
                s = acc + v
                if ((acc ^ s) & (v ^ s)) < 0:
                    bad[0] = True
                acc = s
                k += 1
        out[i] = acc
        if counts:
            cnt[i] = k


@njit(cache=True)
def _reach(part_start, i, before, after, n):
    """The first and last row of ``i - before .. i + after`` in row i's partition."""
    lo = np.int64(i)  # a parfor's index may be unsigned: mixed with int64 it would become a float
    steps = 0
    while steps < before and not part_start[lo]:
        lo -= 1
        steps += 1
    hi = np.int64(i)
    steps = 0
    while steps < after and hi + 1 < n and not part_start[hi + 1]:
        hi += 1
        steps += 1
    return lo, hi
