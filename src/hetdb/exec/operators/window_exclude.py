"""Window frames with EXCLUDE CURRENT ROW / GROUP / TIES: the frame ``[fs, fe)`` less the row, its peer
group, or its peers but itself, is two runs of rows, ``[fs, le)`` before the excluded ones and
``[rs, fe)`` after them, plus (TIES) the row itself between them. Each function combines what it
computes over the runs (sums and counts add, extremes compare, the n-th value counts through
them) on the backend's arrays, so that the GPU's array path runs them too; median, quantile_cont
and mode take the runs into their host loops."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.column import Column
from hetdb.exec.operators import window_sums
from hetdb.plan.window import WindowCall

# aggregates over frames computed by host loops (window_holistic.frame_host)
FRAMED_HOST = ("quantile_cont", "mode", "var_samp", "var_pop", "stddev_samp", "stddev_pop", "arg_max", "arg_min",
               "count_distinct", "string_agg", "quantile_disc", "product", "fsum", "bit_and",
               "bit_or", "bit_xor", "array_agg", "sum_distinct", "avg_distinct", "skewness", "kurtosis", "covar_pop",
               "covar_samp", "corr", "regr_slope", "regr_intercept", "regr_r2", "regr_count", "regr_avgx",
               "regr_avgy", "regr_sxx", "regr_syy", "regr_sxy")


class Runs:
    """The rows of each row's frame once its exclusion is taken out (arrays over the sorted rows)."""

    def __init__(self, b: Any, exclude: str, fs: Any, fe: Any) -> None:
        xp = b.backend.xp
        n = fs.shape[0]
        self.rows = xp.arange(n, dtype=xp.int64)
        xs, xe = (self.rows, self.rows + 1) if exclude == "current_row" else (b.gs, b.ge)
        self.ls, self.le = fs, xp.minimum(fe, xp.maximum(fs, xs))
        self.rs, self.re = xp.maximum(fs, xp.minimum(fe, xe)), fe
        # TIES: the row itself stays (it is inside its frame unless the frame is all before/after it)
        self.tie = (fs <= self.rows) & (self.rows < fe) if exclude == "ties" else xp.zeros(n, dtype=bool)

    def host(self) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(_host(a), dtype=np.int64) for a in (self.ls, self.le, self.rs, self.re)) + \
            (np.asarray(_host(self.tie), dtype=np.bool_),)


def _host(a: Any) -> Any:
    return a.get() if hasattr(a, "get") else a


def function(b: Any, call: WindowCall, args: list[Column], fs: Any, fe: Any) -> Column:
    """``call`` (an aggregate, frame value or median/quantile/mode) over frames with its EXCLUDE."""
    from hetdb.exec.operators import window_functions as WF

    op = call.op
    kern, xp = b.kern, b.backend.xp
    r = Runs(b, call.frame.exclude, fs, fe)
    if op in FRAMED_HOST:
        from hetdb.exec.operators import window_holistic as WH

        return WH.frame_host(call, args, r.host(), _host(b.ps))
    if op.endswith("_value") or op.endswith("_value_ignore_nulls"):
        return WF._pick(b, args[0], _nth(b, r, call, args[0]))
    if op == "count_star":
        return WF._int_column(xp, call.dtype, (r.le - r.ls) + (r.re - r.rs) + r.tie)
    x = args[0]
    valid = WF._valid(xp, x)
    tie = r.tie & valid
    if op in ("min", "max"):
        key = WF._order_key(kern, b.backend, WF._key(b.backend, x))
        best = xp.where(tie, r.rows, -1)
        for s, e in ((r.ls, r.le), (r.rs, r.re)):
            best = better(xp, key, best, kern.frame_extreme(key, valid, b.ps, s, e, op == "max"), op == "max")
        return WF._pick(b, x, best)
    counts = kern.prefix_counts(valid) if kern is not WF.K else _prefix(valid)
    cnt = counts[r.le] - counts[r.ls] + counts[r.re] - counts[r.rs] + tie
    has = cnt > 0
    if op == "count":
        return WF._int_column(xp, call.dtype, cnt)
    data = x.data
    if data.dtype.kind == "f":
        d = data.astype(xp.float64)
        total = kern.frame_sum_float(d, valid, b.ps, r.ls, r.le) + kern.frame_sum_float(d, valid, b.ps, r.rs, r.re)
        total = total + xp.where(tie, d, 0.0)
    else:
        total = window_sums.frame_int_sums(kern, xp, data, valid, r.ls, r.le) \
            + window_sums.frame_int_sums(kern, xp, data, valid, r.rs, r.re)
        own = xp.where(tie, data, 0).astype(xp.int64)
        total = total + (own.astype(object) if total.dtype == object else own)
    if op == "sum":
        return Column(call.dtype, data=total, validity=has) if total.dtype == object else \
            WF._int_column(xp, call.dtype, total, has)
    scale = 10.0 ** x.dtype.scale if x.dtype.kind == "decimal" else 1.0
    total = window_sums.as_float(xp, total)
    return WF._int_column(xp, call.dtype, xp.where(has, total / scale / xp.maximum(cnt, 1), 0.0), has)


def _prefix(valid: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(valid, dtype=np.int64)])


def better(xp, key, a, b, is_max: bool):
    """Per row the better of two candidate rows (-1: none) by ``key``."""
    ka, kb = key[xp.maximum(a, 0)], key[xp.maximum(b, 0)]
    wins = (kb > ka) if is_max else (kb < ka)
    return xp.where((a < 0) | ((b >= 0) & wins), b, a)


def _nth(b: Any, r: Runs, call: WindowCall, x: Column):
    """The row of first/last/nth_value (IGNORE NULLS: counting the non-NULL rows only) over the runs
    ``[ls, le)``, the row itself (TIES), ``[rs, re)``; -1 where the frame holds no such row."""
    from hetdb.exec.operators import window_functions as WF

    xp = b.backend.xp
    op = call.op
    if op.endswith("_ignore_nulls"):
        pos, before = WF._valid_positions(xp, x)
        own = r.tie & WF._valid(xp, x)
    else:
        pos, before = r.rows, xp.arange(r.rows.shape[0] + 1, dtype=xp.int64)
        own = r.tie
    n_left = before[r.le] - before[r.ls]
    n_own = own.astype(xp.int64)
    n_right = before[r.re] - before[r.rs]
    total = n_left + n_own + n_right
    if op.startswith("first"):
        k = xp.zeros_like(total)
    elif op.startswith("last"):
        k = total - 1
    else:
        k = xp.full_like(total, call.args[1].value - 1)
    left = WF._at(xp, pos, before[r.ls] + k, k < n_left)
    right = WF._at(xp, pos, before[r.rs] + (k - n_left - n_own), k >= n_left + n_own)
    pick = xp.where(k < n_left, left, xp.where(own & (k == n_left), r.rows, right))
    return xp.where((k >= 0) & (k < total), pick, -1)


def whole_runs(fs: Any, fe: Any) -> tuple[np.ndarray, ...]:
    """The host loops' runs of frames without EXCLUDE: ``[fs, fe)`` and nothing else."""
    fs, fe = np.asarray(_host(fs), dtype=np.int64), np.asarray(_host(fe), dtype=np.int64)
    return fs, fe, fe, fe, np.zeros(fs.shape[0], dtype=np.bool_)
