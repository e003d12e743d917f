"""Whole-partition statistics of the window operator on the CPU (Numba): product, Kahan sum and
entropy (sql/host_aggs.py). Rows arrive sorted by partition; ``ps``/``pe`` are each row's partition
start and end (exclusive). Each function returns a value per row (its partition's) and, where the
result can be NULL, whether it is not."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves


@njit(cache=True)
def fma(a, b, c):
    """a * b + c rounded once, as a fused multiply-add (the compiled C++ of DuckDB contracts its
    interpolation into one): the product's rounding error by Dekker's two-product, added back after
    the two-sum of the rounded product and ``c``."""
    p = a * b
    if not (math.isfinite(p) and math.isfinite(c)) or abs(a) > 1e300 or abs(b) > 1e300:
        return p + c
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    z = s - p
    low = (p - (s - z)) + (c - z)
    return s + (low + err)


def interpolate(lo, hi, d):
    """DuckDB's quantile interpolation between sorted neighbours ``lo`` and ``hi`` at fraction ``d``,
    as its compiled code computes it: doubles lo * (1 - d) + hi * d; unscaled DECIMALs (int64)
    lo + (hi - lo) * d on the neighbours' doubles, truncated toward zero (DuckDB 2.0.1, checked on
    random DECIMAL(18, 0..9) values up to 10^18). Each is one fused multiply-add: the last bit, and
    for a DECIMAL next to a whole number its last digit, follow it. A DECIMAL's result is an int64,
    and only an interpolated value passes through doubles: a value picked at a whole position keeps
    every digit, as in DuckDB. Compiled code calls it through the typed overload below."""
    if isinstance(lo, (int, np.integer)):
        return math.trunc(float(Fraction(float(hi) - float(lo)) * Fraction(d) + Fraction(float(lo))))
    return float(Fraction(float(lo)) * Fraction(1.0 - d) + Fraction(hi * d))


@overload(interpolate)
def _interpolate_typed(lo, hi, d):
    if isinstance(lo, types.Integer):
        def decimal_impl(lo, hi, d):
            return np.int64(math.trunc(fma(float(hi) - float(lo), d, float(lo))))
        return decimal_impl

    def double_impl(lo, hi, d):
        return fma(lo, 1.0 - d, hi * d)
    return double_impl


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
def frame_quantile(xs, valid, ls, le, rs, re, tie, q, desc=False):
    """Per row: the interpolated ``q`` quantile (``interpolate``; NaN the largest) of the valid values
    of its frame, the rows ``[ls, le)``, the row itself where ``tie`` and ``[rs, re)``
    (window_exclude's runs); ok False where the frame holds none. ``xs``: doubles, or unscaled
    DECIMAL values (int64, and so is the result). ``desc``: of the values in descending order."""
    n = xs.shape[0]
    out = np.zeros_like(xs)
    ok = np.zeros(n, np.bool_)
    for i in prange(n):
        width = max(le[i] - ls[i], 0) + max(re[i] - rs[i], 0) + 1
        buf = np.empty(width, xs.dtype)
        c = 0
        for j in range(ls[i], le[i]):
            if valid[j]:
                buf[c] = xs[j]
                c += 1
        if tie[i] and valid[i]:
            buf[c] = xs[i]
            c += 1
        for j in range(rs[i], re[i]):
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
        if desc:
            lo, hi = c - 1 - lo, c - 1 - hi
        out[i] = v[lo] if lo == hi else interpolate(v[lo], v[hi], d)
        ok[i] = True
    return out, ok


_DIRECT_WIDTH = 64  # frames up to this wide: two passes over their rows; wider: prefix sums


@njit(cache=True)
def frame_variance(xs, valid, ls, le, rs, re, tie, ps, ddof):
    """Per row: the variance (``ddof`` 1: sample, 0: population) of the valid values of its frame (the
    runs of frame_quantile); ok False where fewer than ddof + 1. Narrow frames: mean, then squared
    deviations; wide ones: prefix sums of the values less their partition's first one (so that
    running frames cost one pass, and the shift keeps the sums' cancellation small)."""
    n = xs.shape[0]
    out = np.zeros(n, np.float64)
    ok = np.zeros(n, np.bool_)
    s1 = np.zeros(n + 1, np.float64)
    s2 = np.zeros(n + 1, np.float64)
    cnt = np.zeros(n + 1, np.int64)
    shift = 0.0
    for i in range(n):
        if i == ps[i]:
            shift = 0.0
            for j in range(i, n):
                if ps[j] != i:
                    break
                if valid[j]:
                    shift = xs[j]
                    break
        d = xs[i] - shift if valid[i] else 0.0
        s1[i + 1] = s1[i] + d
        s2[i + 1] = s2[i] + d * d
        cnt[i + 1] = cnt[i] + (1 if valid[i] else 0)
    for i in range(n):
        a, b, c, e = ls[i], le[i], rs[i], re[i]
        own = tie[i] and valid[i]
        m = cnt[b] - cnt[a] + cnt[e] - cnt[c] + (1 if own else 0)
        if m <= ddof:
            continue
        if (b - a) + (e - c) <= _DIRECT_WIDTH:
            total = xs[i] if own else 0.0
            for j in range(a, b):
                if valid[j]:
                    total += xs[j]
            for j in range(c, e):
                if valid[j]:
                    total += xs[j]
            mean = total / m
            m2 = (xs[i] - mean) ** 2 if own else 0.0
            for j in range(a, b):
                if valid[j]:
                    m2 += (xs[j] - mean) ** 2
            for j in range(c, e):
                if valid[j]:
                    m2 += (xs[j] - mean) ** 2
        else:  # the shift cancels out of the deviations
            t1 = s1[b] - s1[a] + s1[e] - s1[c]
            t2 = s2[b] - s2[a] + s2[e] - s2[c]
            if own:
                di = s1[i + 1] - s1[i]
                t1 += di
                t2 += di * di
            m2 = max(t2 - t1 * t1 / m, 0.0)
        out[i] = m2 / (m - ddof)
        ok[i] = True
    return out, ok


@njit(cache=True)
def _move(codes, valid, counts, hist, j, step):
    """Count row ``j``'s value in (step 1) or out of (step -1) the window; ``hist[c]``: values counted c times."""
    if valid[j]:
        c = codes[j]
        hist[counts[c]] -= 1
        counts[c] += step
        hist[counts[c]] += 1


@njit(cache=True)
def frame_mode(codes, valid, ls, le, rs, re, tie):
    """Per row: a row holding the most frequent valid value of its frame (the runs of frame_quantile),
    ties to the value met first in the frame's order, -1 for none. The counts follow the frame's hull
    ``[ls, re)`` as it slides; the rows between the runs leave the counts while one row is answered."""
    n = codes.shape[0]
    out = np.full(n, -1, np.int64)
    counts = np.zeros(codes.max() + 1 if n else 1, np.int64)
    hist = np.zeros(n + 2, np.int64)
    hist[0] = counts.shape[0]
    a = 0
    b = 0
    top = 0
    for i in range(n):
        s = ls[i]
        e = max(re[i], s)
        if s < a or e < b or s >= b:  # not a slide forward: empty the window, then fill it anew
            for j in range(a, b):
                _move(codes, valid, counts, hist, j, -1)
            a = s
            b = s
            top = 0
        for j in range(a, s):
            _move(codes, valid, counts, hist, j, -1)
        for j in range(b, e):
            _move(codes, valid, counts, hist, j, 1)
            if valid[j] and counts[codes[j]] > top:
                top = counts[codes[j]]
        a = s
        b = e
        while top > 0 and hist[top] == 0:
            top -= 1
        lo = min(max(le[i], s), e)
        hi = max(min(rs[i], e), lo)
        for j in range(lo, hi):  # the excluded rows between the runs
            if not (tie[i] and j == i):
                _move(codes, valid, counts, hist, j, -1)
        best = top
        while best > 0 and hist[best] == 0:
            best -= 1
        if best > 0:
            for j in range(s, e):
                if (j < lo or j >= hi or (tie[i] and j == i)) and valid[j] and counts[codes[j]] == best:
                    out[i] = j
                    break
        for j in range(lo, hi):
            if not (tie[i] and j == i):
                _move(codes, valid, counts, hist, j, 1)
    return out


@njit(cache=True)
def frame_distinct(codes, valid, ls, le, rs, re, tie):
    """Per row: how many distinct valid codes its frame holds (the runs of frame_quantile), by counts
    that follow the frame's hull as frame_mode's do."""
    n = codes.shape[0]
    out = np.zeros(n, np.int64)
    counts = np.zeros(codes.max() + 1 if n else 1, np.int64)
    hist = np.zeros(n + 2, np.int64)
    hist[0] = counts.shape[0]
    a = 0
    b = 0
    for i in range(n):
        s = ls[i]
        e = max(re[i], s)
        if s < a or e < b or s >= b:
            for j in range(a, b):
                _move(codes, valid, counts, hist, j, -1)
            a = s
            b = s
        for j in range(a, s):
            _move(codes, valid, counts, hist, j, -1)
        for j in range(b, e):
            _move(codes, valid, counts, hist, j, 1)
        a = s
        b = e
        lo = min(max(le[i], s), e)
        hi = max(min(rs[i], e), lo)
        for j in range(lo, hi):
            if not (tie[i] and j == i):
                _move(codes, valid, counts, hist, j, -1)
        out[i] = counts.shape[0] - hist[0]
        for j in range(lo, hi):
            if not (tie[i] and j == i):
                _move(codes, valid, counts, hist, j, 1)
    return out


@njit(cache=True)
def frame_quantile_disc(key, valid, ls, le, rs, re, tie, q):
    """Per row: a row holding DuckDB's discrete ``q`` quantile of its frame's valid keys (the runs of
    frame_quantile): the sorted values' 0-based position max(0, ceil(n * q) - 1); -1 for none. A row
    whose runs equal the previous row's (whole partitions, peers) takes its answer."""
    n = key.shape[0]
    out = np.full(n, -1, np.int64)
    for i in range(n):
        if i > 0 and ls[i] == ls[i - 1] and le[i] == le[i - 1] and rs[i] == rs[i - 1] and re[i] == re[i - 1] \
                and not tie[i] and not tie[i - 1]:
            out[i] = out[i - 1]
            continue
        width = max(le[i] - ls[i], 0) + max(re[i] - rs[i], 0) + 1
        rows = np.empty(width, np.int64)
        c = 0
        for j in range(ls[i], le[i]):
            if valid[j]:
                rows[c] = j
                c += 1
        if tie[i] and valid[i]:
            rows[c] = i
            c += 1
        for j in range(rs[i], re[i]):
            if valid[j]:
                rows[c] = j
                c += 1
        if c == 0:
            continue
        members = rows[:c]
        order = np.argsort(key[members], kind="mergesort")
        pos = max(0, int(math.ceil(c * q)) - 1)
        out[i] = members[order[pos]]
    return out


# frame_reduce's operations
PRODUCT, KAHAN_SUM, BIT_AND, BIT_OR, BIT_XOR = 0, 1, 2, 3, 4


@njit(cache=True)
def _reduce(op, acc, err, v, fv):
    """One value into the running (acc, err): product and Kahan sum of ``fv``, bit ops of ``v``."""
    if op == PRODUCT:
        return acc * fv, err, 0
    if op == KAHAN_SUM:
        diff = fv - err
        nxt = acc + diff
        return nxt, (nxt - acc) - diff, 0
    return acc, err, v


@njit(cache=True)
def frame_reduce(op, ints, floats, valid, ls, le, rs, re, tie):
    """Per row: product / Kahan sum (``floats``) or bit_and / bit_or / bit_xor (``ints``) of the valid
    values of its frame (the runs of frame_quantile), in frame order; ok False for none. A row whose
    runs equal the previous row's takes its answer (whole partitions cost one pass)."""
    n = valid.shape[0]
    fout = np.zeros(n, np.float64)
    iout = np.zeros(n, np.int64)
    ok = np.zeros(n, np.bool_)
    for i in range(n):
        if i > 0 and ls[i] == ls[i - 1] and le[i] == le[i - 1] and rs[i] == rs[i - 1] and re[i] == re[i - 1] \
                and not tie[i] and not tie[i - 1]:
            fout[i], iout[i], ok[i] = fout[i - 1], iout[i - 1], ok[i - 1]
            continue
        acc = 1.0 if op == PRODUCT else 0.0
        err = 0.0
        bits = np.int64(-1) if op == BIT_AND else np.int64(0)
        seen = False
        for part in range(3):
            lo, hi = (ls[i], le[i]) if part == 0 else ((i, i + 1) if part == 1 else (rs[i], re[i]))
            if part == 1 and not tie[i]:
                continue
            for j in range(lo, hi):
                if not valid[j]:
                    continue
                seen = True
                if op == BIT_AND:
                    bits &= ints[j]
                elif op == BIT_OR:
                    bits |= ints[j]
                elif op == BIT_XOR:
                    bits ^= ints[j]
                else:
                    acc, err, _ = _reduce(op, acc, err, 0, floats[j])
        fout[i] = acc
        iout[i] = bits
        ok[i] = seen
    return fout, iout, ok


@njit(cache=True)
def _distinct_move(codes, valid, counts, values, j, step, acc):
    """Count row ``j``'s code in/out; a code's first (last) row adds (takes away) its value: acc[0] is
    the integer sum, acc[1] the float sum and acc[2] its Neumaier compensation, acc[3] the count."""
    if valid[j]:
        c = codes[j]
        if (step > 0 and counts[c] == 0) or (step < 0 and counts[c] == 1):
            v = values[c] * step
            t = acc[1] + v
            acc[2] += (acc[1] - t) + v if abs(acc[1]) >= abs(v) else (v - t) + acc[1]
            acc[1] = t
            acc[3] += step
        counts[c] += step


@njit(cache=True)
def frame_distinct_sum(codes, values, ivalues, valid, ls, le, rs, re, tie):
    """Per row: the sum of the distinct valid values of its frame (the runs of frame_quantile) as an
    exact int64 sum of ``ivalues`` and a compensated float sum of ``values`` (one value per code),
    and how many there are; the counts follow the frame's hull as frame_mode's do."""
    n = codes.shape[0]
    isum = np.zeros(n, np.int64)
    fsum = np.zeros(n, np.float64)
    cnt = np.zeros(n, np.int64)
    k = codes.max() + 1 if n else 1
    counts = np.zeros(k, np.int64)
    acc = np.zeros(4, np.float64)
    itotal = np.int64(0)
    a = 0
    b = 0
    for i in range(n):
        s = ls[i]
        e = max(re[i], s)
        if s < a or e < b or s >= b:
            counts[:] = 0
            acc[:] = 0.0
            itotal = np.int64(0)
            a = s
            b = s
        for j in range(a, s):
            if valid[j] and counts[codes[j]] == 1:
                itotal -= ivalues[codes[j]]
            _distinct_move(codes, valid, counts, values, j, -1, acc)
        for j in range(b, e):
            if valid[j] and counts[codes[j]] == 0:
                itotal += ivalues[codes[j]]
            _distinct_move(codes, valid, counts, values, j, 1, acc)
        a = s
        b = e
        lo = min(max(le[i], s), e)
        hi = max(min(rs[i], e), lo)
        own = itotal
        saved = acc.copy()
        for j in range(lo, hi):
            if not (tie[i] and j == i):
                if valid[j] and counts[codes[j]] == 1:
                    own -= ivalues[codes[j]]
                _distinct_move(codes, valid, counts, values, j, -1, acc)
        isum[i] = own
        fsum[i] = acc[1] + acc[2]
        cnt[i] = np.int64(acc[3])
        for j in range(lo, hi):
            if not (tie[i] and j == i):
                _distinct_move(codes, valid, counts, values, j, 1, acc)
        acc[:] = saved
    return isum, fsum, cnt
