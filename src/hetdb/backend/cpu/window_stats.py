"""Whole-partition statistics of the window operator on the CPU (Numba): product, Kahan sum and
entropy (sql/host_aggs.py). Rows arrive sorted by partition; ``ps``/``pe`` are each row's partition
start and end (exclusive). Each function returns a value per row (its partition's) and, where the
result can be NULL, whether it is not."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True)
def partition_product(x, valid, ps, pe):
    """Per row: the product of its partition's valid values in row order; ``ok`` False for none."""
    n = x.shape[0]
    out = np.zeros(n, np.float64)
    ok = np.zeros(n, np.bool_)
    i = 0
    while i < n:
        s = ps[i]
        e = pe[i]
        prod = 1.0
        seen = False
        for j in range(s, e):
            if valid[j]:
                prod *= x[j]
                seen = True
        for j in range(s, e):
            out[j] = prod
            ok[j] = seen
        i = e
    return out, ok


@njit(cache=True)
def partition_kahan_sum(x, valid, ps, pe):
    """Per row: Kahan's compensated sum of its partition's valid values in row order (DuckDB's fsum);
    ``ok`` False for none."""
    n = x.shape[0]
    out = np.zeros(n, np.float64)
    ok = np.zeros(n, np.bool_)
    i = 0
    while i < n:
        s = ps[i]
        e = pe[i]
        total = 0.0
        err = 0.0
        seen = False
        for j in range(s, e):
            if valid[j]:
                diff = x[j] - err
                nxt = total + diff
                err = (nxt - total) - diff
                total = nxt
                seen = True
        for j in range(s, e):
            out[j] = total
            ok[j] = seen
        i = e
    return out, ok


@njit(cache=True)
def partition_entropy(order, key, valid, ps, pe):
    """Per row: the base-2 entropy of the frequencies of its partition's valid keys (0.0 for none).
    ``order`` sorts each partition's rows by (valid first, key)."""
    n = order.shape[0]
    out = np.zeros(n, np.float64)
    i = 0
    while i < n:
        s = ps[i]
        e = pe[i]
        j = s
        while j < e and valid[order[j]]:
            j += 1
        total = j - s
        # DuckDB's formula: log2(n) - sum(c * log2(c)) / n (not exactly 0.0 for one value of some n)
        acc = 0.0
        j = s
        while j < s + total:
            r = j
            while r < s + total and key[order[r]] == key[order[j]]:
                r += 1
            c = float(r - j)
            acc += c * math.log2(c)
            j = r
        h = math.log2(total) - acc / total if total else 0.0
        for t in range(s, e):
            out[t] = h
        i = e
    return out


@njit(cache=True, nogil=True, parallel=True)
def frame_quantile(xs, valid, fs, fe, q, decimal):
    """Per row: the interpolated ``q`` quantile (DuckDB's lo * (1 - d) + hi * d, NaN the largest) of the
    valid values of its frame ``[fs, fe)``; ok False where the frame holds none. ``decimal``: unscaled
    DECIMAL values, lo + (hi - lo) * d truncated toward zero (as DuckDB's generic interpolation)."""
    n = xs.shape[0]
    out = np.zeros(n, np.float64)
    ok = np.zeros(n, np.bool_)
    for i in prange(n):
        s = fs[i]
        e = fe[i]
        if e <= s:
            continue
        buf = np.empty(e - s, np.float64)
        c = 0
        for j in range(s, e):
            if valid[j]:
                buf[c] = xs[j]
                c += 1
        if c == 0:
            continue
        v = np.sort(buf[:c])
        pos = q * (c - 1)
        lo = int(math.floor(pos))
        hi = int(math.ceil(pos))
        d = pos - lo
        if lo == hi:
            out[i] = v[lo]
        elif decimal:
            out[i] = np.trunc(v[lo] + (v[hi] - v[lo]) * d)
        else:
            out[i] = v[lo] * (1.0 - d) + v[hi] * d
        ok[i] = True
    return out, ok
