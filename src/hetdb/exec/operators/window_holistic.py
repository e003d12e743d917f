"""The window operator's statistics over whole partitions that need all of a partition's values:
quantile_cont, variance/stddev, arg_max/arg_min, string_agg, mode, product, fsum, entropy and
array_agg (sql/holistic.py, sql/host_aggs.py, sql/lists.py); computed on the host by the compiled
loops of ``backend/cpu/window`` and ``backend/cpu/window_stats``."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_moments as KM
from hetdb.backend.cpu import window_stats as KS
from hetdb.backend.cpu.sort import order_key
from hetdb.column import Column
from hetdb.exec.columns import take
from hetdb.exec.operators import window as W
from hetdb.exec.operators import window_functions as WF
from hetdb.exec.wide import narrow
from hetdb.plan.window import WindowCall

_HOST = W._HOST


GROUP_STATS = ("quantile_cont", "stddev_samp", "stddev_pop", "var_samp", "var_pop", "arg_max", "arg_min",
               "string_agg", "string_agg_distinct", "count_distinct", "mode", "product", "fsum", "entropy", "array_agg", "array_agg_distinct")


def group_statistic(call: WindowCall, args, ps, pe) -> Column:
    """Aggregates over the whole partition that need all its values (sql/holistic.py); host only."""
    op = call.op
    x = args[0]
    valid = WF._valid(np, x)
    if op in ("arg_max", "arg_min"):
        both = valid & WF._valid(np, args[1])
        return take(_HOST, x, K.frame_extreme(WF._key(_HOST, args[1]), both, ps, ps, pe, op == "arg_max"),
                    missing=True)
    if op in ("string_agg", "string_agg_distinct"):
        return _string_agg(call, args, ps, pe)
    if op in ("array_agg", "array_agg_distinct"):
        return _array_agg(call, args, ps, pe)
    if op in ("mode", "entropy", "count_distinct"):
        key = WF._key(_HOST, x)
        if op != "mode":  # NaNs one value, -0.0 = 0.0
            key = order_key(key, False) if key.dtype.kind == "f" else key
        order = W._sort_permutation([ps, np.logical_not(valid), key], [False, False, False], ps.shape[0])
        if op == "entropy":
            return WF._int_column(np, call.dtype, KS.partition_entropy(order, key, valid, ps, pe))
        if op == "count_distinct":
            return Column(call.dtype, data=_count_distinct(key[order], valid[order], ps, pe))
        return take(_HOST, x, K.partition_mode(order, key, valid, ps, pe), missing=True)
    if op == "quantile_cont" and call.dtype.is_wide:
        return _wide_quantile(call, x, list(zip(ps.tolist(), pe.tolist())))
    if op == "quantile_cont":
        data = _quantile_input(call, x)
        order = W._sort_permutation([ps, np.logical_not(valid), data], [False, False, False], ps.shape[0])
        out, ok = K.partition_quantile(data[order], valid[order], ps, pe, float(call.args[1].value),
                                       _descending(call))
        return WF._int_column(np, call.dtype, out, ok)
    data = np.asarray(x.data, dtype=np.float64)
    if op in ("product", "fsum"):
        out, ok = (KS.partition_product if op == "product" else KS.partition_kahan_sum)(data, valid, ps, pe)
    else:
        out, ok = K.partition_variance(data, valid, ps, pe, 1 if op.endswith("samp") else 0)
        if op.startswith("stddev"):
            out = np.sqrt(out)
    return WF._int_column(np, call.dtype, out, ok)


def _descending(call: WindowCall) -> bool:
    """quantile_cont of WITHIN GROUP (ORDER BY x DESC): a third argument, TRUE (sql/holistic.py)."""
    return len(call.args) > 2 and bool(call.args[2].value)


def _quantile_input(call: WindowCall, x: Column) -> np.ndarray:
    """quantile_cont's values: a DECIMAL's unscaled int64 as they are (picked and interpolated
    exactly, as DuckDB: read as doubles, values past 2^53 lost digits), anything else as doubles."""
    if call.dtype.kind == "decimal":
        return np.asarray(x.data, dtype=np.int64)
    return np.asarray(x.data, dtype=np.float64)


def _wide_interpolate(lo: int, hi: int, d: float) -> int:
    """DuckDB's interpolation of HUGEINT-backed DECIMALs (19..38 digits): lo + trunc(double(hi - lo) * d)
    exactly; where hi - lo leaves 128 bits, the doubles' formula of the narrow ones."""
    delta = hi - lo
    if -(2**127) <= delta < 2**127:
        return lo + math.trunc(float(delta) * d)
    return KS.interpolate(lo, hi, d)


def _wide_quantile(call: WindowCall, x: Column, frames: list[tuple]) -> Column:
    """quantile_cont of a DECIMAL(19..38) (int64 or Python-int values) per row over its frame, in
    Python integers: ``frames[row]`` is its partition ``(start, end)`` or its runs ``(ls, le, row or
    -1, rs, re)``; equal frames are computed once. A rare type (results of wide arithmetic and sums)."""
    data, valid = x.data, WF._valid(np, x)
    q = float(call.args[1].value)
    out = np.zeros(len(frames), dtype=object)
    ok = np.zeros(len(frames), dtype=bool)
    done: dict[tuple, int | None] = {}
    for i, frame in enumerate(frames):
        if frame not in done:
            spans = [frame] if len(frame) == 2 else [frame[:2], (frame[2], frame[2] + 1), frame[3:]]
            v = sorted((int(data[j]) for s, e in spans if s >= 0 for j in range(s, e) if valid[j]),
                       reverse=_descending(call))
            pos = q * (len(v) - 1)
            lo, hi = math.floor(pos), math.ceil(pos)
            done[frame] = None if not v else v[lo] if lo == hi else _wide_interpolate(v[lo], v[hi], pos - lo)
        if done[frame] is not None:
            out[i], ok[i] = done[frame], True
    return Column(call.dtype, data=narrow(out), validity=ok)


def frame_quantile(call: WindowCall, x: Column, runs: tuple) -> Column:
    """median/quantile_cont over each row's frame, the runs ``(ls, le, rs, re, tie)`` of
    window_exclude (host)."""
    if call.dtype.is_wide:
        ls, le, rs, re, tie = (a.tolist() for a in runs)
        return _wide_quantile(call, x, [(ls[i], le[i], i if tie[i] else -1, rs[i], re[i]) for i in range(len(ls))])
    out, ok = KS.frame_quantile(_quantile_input(call, x), WF._valid(np, x), *runs, float(call.args[1].value),
                                _descending(call))
    return WF._int_column(np, call.dtype, out, ok)


def frame_variance(call: WindowCall, x: Column, runs: tuple, ps) -> Column:
    """var_samp/var_pop/stddev_samp/stddev_pop over each row's frame (the runs of window_exclude; host)."""
    out, ok = KS.frame_variance(np.asarray(x.data, dtype=np.float64), WF._valid(np, x), *runs,
                                np.asarray(ps, np.int64), 1 if call.op.endswith("samp") else 0)
    return WF._int_column(np, call.dtype, np.sqrt(out) if call.op.startswith("stddev") else out, ok)


def frame_host(call: WindowCall, args: list[Column], runs: tuple, ps) -> Column:
    """The holistic aggregates that take frames (median/quantile_cont, quantile_disc, mode, variances,
    arg_max/arg_min, count(DISTINCT), string_agg) over the runs ``(ls, le, rs, re, tie)`` of window_exclude, on the host."""
    op, x = call.op, args[0]
    ps = np.asarray(ps, np.int64)
    if op == "quantile_cont":
        return frame_quantile(call, x, runs)
    if op == "mode":
        return frame_mode(call, x, runs)
    if op in ("arg_max", "arg_min"):
        return take(_HOST, x, _frame_arg(call, args, runs, ps), missing=True)
    if op in _REDUCE:
        valid = WF._valid(np, x)
        data = np.asarray(x.data)
        fout, iout, ok = KS.frame_reduce(_REDUCE[op], data.astype(np.int64), data.astype(np.float64), valid, *runs)
        if op.startswith("bit_"):
            return Column(call.dtype, data=iout.astype(call.dtype.numpy_dtype), validity=ok)
        return WF._int_column(np, call.dtype, fout, ok)
    if op in KM.OPS:
        y = args[0]
        xcol = args[1] if len(args) > 1 else y
        both = WF._valid(np, y) & WF._valid(np, xcol)
        out, ok = KM.frame_moments(KM.OPS.index(op), np.asarray(y.data, np.float64), np.asarray(xcol.data, np.float64),
                                   both, *runs)
        return WF._int_column(np, call.dtype, out, ok)
    if op in ("sum_distinct", "avg_distinct"):
        return _distinct_sum(call, x, runs)
    if op == "quantile_disc":
        key = WF._order_key(K, _HOST, WF._key(_HOST, x))
        return take(_HOST, x, KS.frame_quantile_disc(key, WF._valid(np, x), *runs, float(call.args[1].value)),
                    missing=True)
    if op == "quantile_disc":
        key = WF._order_key(K, _HOST, WF._key(_HOST, x))
        return take(_HOST, x, KS.frame_quantile_disc(key, WF._valid(np, x), *runs, float(call.args[1].value)),
                    missing=True)
    if op == "count_distinct":
        return Column(call.dtype, data=KS.frame_distinct(_codes(x), WF._valid(np, x), *runs))
    if op == "string_agg":
        return _frame_string_agg(call, args, runs, ps)
    if op == "array_agg":
        return _frame_array_agg(call, args, runs, ps)
    return frame_variance(call, x, runs, ps)


_REDUCE = {"product": KS.PRODUCT, "fsum": KS.KAHAN_SUM, "bit_and": KS.BIT_AND, "bit_or": KS.BIT_OR,
           "bit_xor": KS.BIT_XOR}


def _distinct_sum(call: WindowCall, x: Column, runs: tuple) -> Column:
    """sum/avg(DISTINCT x) over each row's frame: exact for integers and DECIMALs (unscaled), a
    compensated sum for doubles; NULL where the frame holds no value."""
    codes = _codes(x)
    data = np.asarray(x.data)
    first = np.zeros(int(codes.max()) + 1 if codes.shape[0] else 1, np.int64)
    first[codes[::-1]] = np.arange(codes.shape[0])[::-1]  # a row of each code
    values = data[first] if data.shape[0] else np.zeros(1, data.dtype)
    isum, fsum, cnt = KS.frame_distinct_sum(codes, values.astype(np.float64), values.astype(np.int64),
                                            WF._valid(np, x), *runs)
    has = cnt > 0
    floating = data.dtype.kind == "f"
    if call.op == "sum_distinct":
        return WF._int_column(np, call.dtype, fsum if floating else isum, has)
    scale = 10.0 ** x.dtype.scale if x.dtype.kind == "decimal" else 1.0
    total = fsum if floating else isum.astype(np.float64)
    return WF._int_column(np, call.dtype, np.where(has, total / scale / np.maximum(cnt, 1), 0.0), has)


def _codes(x: Column) -> np.ndarray:
    """Dense codes of ``x``'s values (NaNs one value, -0.0 = 0.0)."""
    key = WF._key(_HOST, x)
    if key.dtype.kind == "f":
        key = order_key(key, False)
    return np.unique(key, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _frame_arg(call: WindowCall, args: list[Column], runs: tuple, ps) -> np.ndarray:
    """The row of the frame's largest (smallest) ``by`` where both arguments are valid, ties to the
    first in the frame (DuckDB's); -1 for none."""
    from hetdb.exec.operators.window_exclude import better

    ls, le, rs, re, tie = runs
    key = WF._order_key(K, _HOST, WF._key(_HOST, args[1]))
    both = WF._valid(np, args[0]) & WF._valid(np, args[1])
    is_max = call.op == "arg_max"
    best = K.frame_extreme(key, both, ps, ls, le, is_max)
    best = better(np, key, best, np.where(tie & both, np.arange(ls.shape[0]), -1), is_max)
    return better(np, key, best, K.frame_extreme(key, both, ps, rs, re, is_max), is_max)


def _frame_members(runs: tuple, flags: str, keys: list[Column], ps):
    """Each row's frame rows (the runs of window_exclude) in frame order, or in an aggregate's own
    ORDER BY ``keys`` (``flags``: 'd'/'a' and 'f'/'l' per key; ranked within the partition)."""
    ls, le, rs, re, tie = runs
    n = ls.shape[0]
    rank = None
    if keys:
        k_arrays, k_desc = W._sort_arrays(K, _HOST, keys, [f == "d" for f in flags[0::2]],
                                          [f == "f" for f in flags[1::2]])
        order = W._sort_permutation([ps, *k_arrays], [False, *k_desc], n)
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(n)
    for i in range(n):
        rows = [*range(ls[i], le[i]), *([i] if tie[i] else []), *range(rs[i], re[i])]
        if rank is not None:
            rows.sort(key=rank.__getitem__)
        yield rows


def _frame_string_agg(call: WindowCall, args: list[Column], runs: tuple, ps) -> Column:
    """string_agg over each row's frame: its non-NULL strings in frame order, or in the aggregate's
    own ORDER BY."""
    values = args[0].to_arrow().to_pylist()
    sep = call.args[1].value
    out: list[str | None] = []
    for rows in _frame_members(runs, call.args[2].value, args[3:], ps):
        parts = [values[j] for j in rows if values[j] is not None]
        out.append(sep.join(parts) if parts else None)
    return Column.from_arrow(pa.array(out, type=pa.string()), call.dtype)


def _frame_array_agg(call: WindowCall, args: list[Column], runs: tuple, ps) -> Column:
    """array_agg/list over each row's frame: its values, NULLs included, in frame order or the
    aggregate's ORDER BY; NULL for an empty frame."""
    values = args[0].to_arrow().to_pylist()
    out = np.empty(runs[0].shape[0], dtype=object)
    for i, rows in enumerate(_frame_members(runs, call.args[1].value, args[2:], ps)):
        out[i] = [values[j] for j in rows] if rows else None
    return Column(call.dtype, data=out)


def frame_mode(call: WindowCall, x: Column, runs: tuple) -> Column:
    """mode over each row's frame (the runs of window_exclude): the most frequent valid value, ties
    to the one met first in the frame (DuckDB's), NULL for none (host)."""
    key = WF._key(_HOST, x)
    if key.dtype.kind == "f":
        key = order_key(key, False)  # NaNs one value, -0.0 = 0.0
    _, codes = np.unique(key, return_inverse=True)
    idx = KS.frame_mode(codes.astype(np.int64).reshape(-1), WF._valid(np, x), *runs)
    return take(_HOST, x, idx, missing=True)


def _count_distinct(keys: np.ndarray, valid: np.ndarray, ps: np.ndarray, pe: np.ndarray) -> np.ndarray:
    """Per row: the distinct valid keys of its partition; ``keys``/``valid`` are in each partition's
    sorted order, valid ones first (a partition's rows stay in its [ps, pe) positions)."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    pos = np.arange(n)
    new = valid & ((pos == ps) | np.concatenate(([True], keys[1:] != keys[:-1])))
    before = np.concatenate(([0], np.cumsum(new, dtype=np.int64)))  # new values before each position
    return before[pe] - before[ps]


def _ordered_values(x: Column, flags: str, keys, ps) -> list:
    """``x``'s values (Python, None for NULL) with each partition's rows in the ORDER BY of ``keys``
    (``flags``: 'd'/'a' and 'f'/'l' per key), ties and no keys in input order."""
    k_arrays, k_desc = W._sort_arrays(K, _HOST, keys, [f == "d" for f in flags[0::2]], [f == "f" for f in flags[1::2]])
    order = W._sort_permutation([ps, *k_arrays], [False, *k_desc], ps.shape[0])
    return take(_HOST, x, order).to_arrow().to_pylist()


def _array_agg(call: WindowCall, args, ps, pe) -> Column:
    """Per row: the list of its partition's values, NULLs included, in the ORDER BY given (each
    row of a partition refers to one list object)."""
    n = ps.shape[0]
    values = _ordered_values(args[0], call.args[1].value, args[2:], ps)
    out = np.empty(n, dtype=object)
    starts = np.flatnonzero(ps == np.arange(n))  # a partition's rows are [ps, pe): its first row has ps == i
    for s, e in zip(starts.tolist(), pe[starts].tolist()):
        part = values[s:e] if call.op == "array_agg" else list(dict.fromkeys(values[s:e]))  # DISTINCT: first of each
        out[s:e] = [part] * (e - s)
    return Column(call.dtype, data=out)


def _string_agg(call: WindowCall, args, ps, pe) -> Column:
    """Per row: its partition's non-NULL strings joined by the separator, in the ORDER BY given."""
    n = ps.shape[0]
    values = _ordered_values(args[0], call.args[2].value, args[3:], ps)
    sep = call.args[1].value
    out: list[str | None] = [None] * n
    start = 0
    while start < n:
        end = int(pe[start])
        parts = [v for v in values[start:end] if v is not None]
        if call.op == "string_agg_distinct":  # the first of each value in the ORDER BY
            parts = list(dict.fromkeys(parts))
        joined = sep.join(parts) if parts else None
        out[start:end] = [joined] * (end - start)
        start = end
    return Column.from_arrow(pa.array(out, type=pa.string()), call.dtype)
