"""Moment statistics of the window operator over frames on the CPU (Numba): skewness, kurtosis and
the paired ones (covar_pop/covar_samp, corr, regr_*) of each row's frame, the runs ``[ls, le)``, the
row itself where ``tie`` and ``[rs, re)`` (exec/operators/window_exclude), by two passes over the
frame's rows with DuckDB's formulas and edge results (sql/holistic_stats.py); a row whose runs equal
the previous row's takes its answer (whole partitions cost one pass)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

OPS = ("skewness", "kurtosis", "covar_pop", "covar_samp", "corr", "regr_slope", "regr_intercept", "regr_r2",
       "regr_count", "regr_avgx", "regr_avgy", "regr_sxx", "regr_syy", "regr_sxy")


@njit(cache=True)
def _rows(i, ls, le, rs, re, tie, ok, buf):
    c = 0
    for part in range(3):
        lo, hi = (ls[i], le[i]) if part == 0 else ((i, i + 1) if part == 1 else (rs[i], re[i]))
        if part == 1 and not tie[i]:
            continue
        for j in range(lo, hi):
            if ok[j]:
                buf[c] = j
                c += 1
    return c


@njit(cache=True)
def frame_moments(op, y, x, ok_rows, ls, le, rs, re, tie):
    """Per row: statistic ``OPS[op]`` of the frame's rows where ``ok_rows`` (both arguments valid);
    (value, valid). One-argument statistics read ``y``."""
    n = y.shape[0]
    out = np.zeros(n, np.float64)
    ok = np.zeros(n, np.bool_)
    buf = np.empty(n + 1, np.int64)
    for i in range(n):
        if i > 0 and ls[i] == ls[i - 1] and le[i] == le[i - 1] and rs[i] == rs[i - 1] and re[i] == re[i - 1] \
                and not tie[i] and not tie[i - 1]:
            out[i], ok[i] = out[i - 1], ok[i - 1]
            continue
        c = _rows(i, ls, le, rs, re, tie, ok_rows, buf)
        if op == 8:  # regr_count: 0 for none
            out[i], ok[i] = c, True
            continue
        if c == 0:
            continue
        sy = 0.0
        sx = 0.0
        ymin, ymax, xmin, xmax = np.inf, -np.inf, np.inf, -np.inf
        for k in range(c):
            j = buf[k]
            sy += y[j]
            sx += x[j]
            ymin, ymax = min(ymin, y[j]), max(ymax, y[j])
            xmin, xmax = min(xmin, x[j]), max(xmax, x[j])
        my, mx = sy / c, sx / c
        syy = sxx = sxy = s3 = s4 = 0.0
        for k in range(c):
            j = buf[k]
            dy, dx = y[j] - my, x[j] - mx
            syy += dy * dy
            sxx += dx * dx
            sxy += dx * dy
            s3 += dy * dy * dy
            s4 += dy * dy * dy * dy
        y_const, x_const = ymin == ymax, xmin == xmax
        value = math.nan
        valid = True
        if op == 0 or op == 1:  # skewness / kurtosis of y
            if (op == 0 and c <= 2) or (op == 1 and c <= 3) or y_const:
                continue
            m2, m3, m4 = syy / c, s3 / c, s4 / c
            if op == 0:
                value = math.sqrt(c * (c - 1.0)) / (c - 2.0) * (m3 / m2 ** 1.5)
            else:
                value = (c - 1.0) * ((c + 1.0) * (m4 / (m2 * m2)) - 3.0 * (c - 1.0)) / ((c - 2.0) * (c - 3.0))
        elif op == 2:
            value = sxy / c
        elif op == 3:
            valid = c >= 2
            value = sxy / (c - 1.0) if valid else 0.0
        elif op == 4:
            value = math.nan if (x_const or y_const) else sxy / math.sqrt(sxx * syy)
        elif op == 5:
            value = math.nan if x_const else sxy / sxx
        elif op == 6:
            valid = not x_const
            value = my - (sxy / sxx) * mx if valid else 0.0
        elif op == 7:
            valid = not x_const
            if valid:
                r = sxy / math.sqrt(sxx * syy) if not y_const else 1.0
                value = 1.0 if y_const else r * r
        elif op == 9:
            value = mx
        elif op == 10:
            value = my
        elif op == 11:
            value = sxx
        elif op == 12:
            value = syy
        else:
            value = sxy
        out[i], ok[i] = value, valid
    return out, ok
