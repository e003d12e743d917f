"""The window operator's functions over its sorted rows: the partition and peer-group boundaries of
one window (made when first needed), the ORDER BY keys as integers, and each function's column on
the CPU's compiled loops or the array kernels (``exec/window_array``)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_near as KN
from hetdb.backend.cpu import window_passes as KP
from hetdb.backend.cpu import window_take as KT
from hetdb.backend.cpu.sort import order_key
from hetdb.column import Column
from hetdb.exec import functions_interval as IV
from hetdb.exec.columns import concat_columns, take, to_plain
from hetdb.exec.operators import window_exclude as WX
from hetdb.exec.operators import window_sums
from hetdb.exec.wide import is_object, sort_key
from hetdb.exec.window_array import BOUND_CODES, float_order_key
from hetdb.plan.window import WHOLE_PARTITION, WindowCall


def _valid(xp, col: Column):
    return xp.ones(len(col), dtype=bool) if col.validity is None else col.validity


def _key(backend, col: Column):
    """Integer/float keys that order like the column (strings: byte-order codes)."""
    xp = backend.xp
    if col.dtype.kind == "string" and col.dictionary is not None and len(col.dictionary):
        # byte-order ranks of the (small) dictionary, gathered by the codes: no string per row
        d = col.dictionary
        ranks, _, _ = backend.factorize_strings(d.offsets, d.chars)
        codes = col.data.astype(xp.int64)
        if col.validity is not None:
            codes = xp.where(col.validity, codes, 0)
        data = backend.gather(ranks.astype(xp.int64), codes)
    elif col.dtype.kind == "string":
        plain = to_plain(backend, col)
        codes, _, _ = backend.factorize_strings(plain.offsets, plain.chars)
        data = codes.astype(xp.int64)
    elif col.dtype.kind == "interval":  # DuckDB's order: normalised microseconds (30-day months)
        months, days, micros = IV.unpack(xp, col.data)
        data = months * IV.US_MONTH + days * IV.US_DAY + micros
    else:
        data = col.data
        if is_object(data):  # HUGEINT / DECIMAL(38) past 64 bits (host only): ranks ordered like the values
            data = sort_key(xp, data if col.validity is None else np.where(col.validity, data, 0))
        data = data.astype(xp.float64 if data.dtype.kind == "f" else xp.int64, copy=False)
    if col.validity is not None:
        data = xp.where(col.validity, data, xp.zeros(1, dtype=data.dtype))
    return data


def _order_key(kern, backend, key):
    """``key`` as int64 in DuckDB's order (floats: NaN above +inf, -0.0 = 0.0), so that NaNs are
    peers and one partition (NaN <> NaN in IEEE would start a new one at every NaN)."""
    if key.dtype.kind != "f":
        return key
    return order_key(key, False) if kern is K else float_order_key(backend.xp, key)


# Whole-partition statistics the array kernels compute (the other holistic aggregates run on the host).
VARIANCES = ("var_samp", "var_pop", "stddev_samp", "stddev_pop")


class _Bounds:
    """One window's sorted rows: kernels, backend, partition/peer flags and per-row partition and
    peer-group boundaries (ps/pe, gs/ge: start, end exclusive), each computed when first asked for
    (large windows: every int64 array not made is memory not touched)."""

    def __init__(self, kern: Any, backend: Any, part_start: Any, peers) -> None:
        self.kern, self.backend, self.part_start, self._peers = kern, backend, part_start, peers

    @cached_property
    def peer_start(self) -> Any:
        return self._peers()

    @cached_property
    def _partitions(self) -> tuple[Any, Any]:
        return self.kern.run_bounds(self.part_start)

    @cached_property
    def _peer_groups(self) -> tuple[Any, Any]:
        return self.kern.run_bounds(self.peer_start)

    ps = property(lambda self: self._partitions[0])
    pe = property(lambda self: self._partitions[1])
    gs = property(lambda self: self._peer_groups[0])
    ge = property(lambda self: self._peer_groups[1])


def _int_column(xp, dtype, data, validity=None) -> Column:
    return Column(dtype, data=xp.asarray(data, dtype=dtype.numpy_dtype), validity=validity)


def _function(b: _Bounds, call: WindowCall, args, order, order_keys) -> Column:
    op = call.op
    kern, backend = b.kern, b.backend
    xp = backend.xp
    n = b.part_start.shape[0]
    if op == "row_number":
        if kern is K:
            return _int_column(xp, call.dtype, KP.ranks(b.part_start, None))
        return _int_column(xp, call.dtype, xp.arange(n, dtype=xp.int64) - b.ps + 1)
    if op == "rank":
        if kern is K:
            return _int_column(xp, call.dtype, KP.ranks(b.part_start, b.peer_start))
        return _int_column(xp, call.dtype, b.gs - b.ps + 1)
    if op == "dense_rank":
        dense = KP.dense_rank if kern is K else kern.dense_rank
        return _int_column(xp, call.dtype, dense(b.part_start, b.peer_start))
    if op == "percent_rank":
        size = b.pe - b.ps
        return _int_column(xp, call.dtype, xp.where(size > 1, (b.gs - b.ps) / xp.maximum(size - 1, 1), 0.0))
    if op == "cume_dist":
        return _int_column(xp, call.dtype, (b.ge - b.ps) / (b.pe - b.ps))
    if kern is K and args and call.frame.exclude is None:  # integer sum/count/avg from the partition start or over a few rows
        near = window_sums.running_aggregate(call, args[0], b) or window_sums.narrow_aggregate(call, args[0],
                                                                                              b.part_start)
        if near is not None:
            return near
    if op == "ntile":
        buckets = call.args[0].value
        if buckets is None:
            return _int_column(xp, call.dtype, xp.zeros(n), xp.zeros(n, dtype=bool))
        if kern is K:  # from the partition flags: no per-row partition bounds to build and read
            return _int_column(xp, call.dtype, KP.ntile_runs(b.part_start, buckets))
        return _int_column(xp, call.dtype, kern.ntile(b.ps, b.pe, buckets))
    if op in ("lag_ignore_nulls", "lead_ignore_nulls"):
        idx = _valid_neighbour(b, args[0], call.args[1].value, op == "lead_ignore_nulls")
        return _pick(b, args[0], idx) if len(args) < 3 else _shifted_or_default(b, args[0], args[2], idx)
    if op in ("lag", "lead"):
        shift = call.args[1].value if op == "lead" else -call.args[1].value
        near = kern is K and abs(shift) <= KN.MAX_REACH
        idx = KN.shifted(b.part_start, shift) if near else kern.shifted(b.ps, b.pe, shift)
        if len(args) < 3:
            return _pick(b, args[0], idx)
        return _shifted_or_default(b, args[0], args[2], idx)
    from hetdb.exec.operators import window_holistic as WH

    if op in VARIANCES and kern is not K and call.frame == WHOLE_PARTITION:  # per-partition sums (GPU: on the device)
        x = args[0]
        var, ok = kern.partition_variance(x.data.astype(xp.float64), _valid(xp, x), b.part_start,
                                          1 if op.endswith("samp") else 0)
        return _int_column(xp, call.dtype, xp.sqrt(var) if op.startswith("stddev") else var, ok)
    if op in WH.GROUP_STATS and call.frame == WHOLE_PARTITION:
        return WH.group_statistic(call, args, b.ps, b.pe)
    fs, fe = _frame(b, call, order, order_keys)
    if call.frame.exclude is not None:
        return WX.function(b, call, args, fs, fe)
    if op in WX.FRAMED_HOST:  # median/quantile_cont/mode/variances over a frame (host)
        return WH.frame_host(call, args, WX.whole_runs(fs, fe), b.ps)
    if op.endswith("_value_ignore_nulls"):
        return _pick(b, args[0], _valid_in_frame(b, args[0], fs, fe, op, call))
    if op == "first_value":
        return _pick(b, args[0], xp.where(fe > fs, fs, -1))
    if op == "last_value":
        return _pick(b, args[0], xp.where(fe > fs, fe - 1, -1))
    if op == "nth_value":
        j = fs + (call.args[1].value - 1)
        return _pick(b, args[0], xp.where(j < fe, j, -1))
    if op == "count_star":
        return _int_column(xp, call.dtype, fe - fs)
    x = args[0]
    valid = _valid(xp, x)
    if op in ("min", "max"):
        # int64 order keys (NaN the largest, as in DuckDB): IEEE comparisons would leave a NaN
        # beside -inf in the CPU's monotonic deque (min over {NaN, -inf} was NaN)
        key = _order_key(kern, backend, _key(backend, x))
        return _pick(b, x, kern.frame_extreme(key, valid, b.ps, fs, fe, op == "max"))
    if kern is K:
        cnt, has = KP.frame_counts(x.validity, fs, fe)
    elif x.validity is None:  # every row counts: no prefix sum and two gathers
        cnt = fe - fs
        has = cnt > 0
    else:
        counts = kern.prefix_counts(valid)
        cnt = counts[fe] - counts[fs]
        has = cnt > 0
    if op == "count":
        return _int_column(xp, call.dtype, cnt)
    data = x.data
    if data.dtype.kind == "f":
        total = kern.frame_sum_float(data.astype(xp.float64), valid, b.ps, fs, fe)
    else:  # exact, widened as DuckDB's SUM (HUGEINT, DECIMAL(38, s))
        total = window_sums.frame_int_sums(kern, xp, data, valid, fs, fe)
    if op == "sum":
        if total.dtype == object:
            return Column(call.dtype, data=total, validity=has)
        return _int_column(xp, call.dtype, total, has)
    scale = 10.0 ** x.dtype.scale if x.dtype.kind == "decimal" else 1.0
    if kern is K and total.dtype != object:
        return _int_column(xp, call.dtype, KP.averages(total, cnt, scale), has)
    total = window_sums.as_float(xp, total)
    return _int_column(xp, call.dtype, xp.where(has, total / scale / xp.maximum(cnt, 1), 0.0), has)


def _compiled_take(b: _Bounds, *cols: Column) -> bool:
    """The CPU's compiled gather applies: fixed-width host values, rows to take from."""
    return b.kern is K and all(c.data is not None and c.dictionary is None and c.data.dtype != object
                               and len(c) > 0 for c in cols)


def _valid_positions(xp, x: Column):
    """(positions of the rows where ``x`` is not NULL, count of such rows before each position 0..n)."""
    valid = _valid(xp, x)
    before = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(valid, dtype=xp.int64)])
    return xp.flatnonzero(valid), before


def _at(xp, pos, k, ok):
    """pos[k] where ``ok``, else -1."""
    if pos.shape[0] == 0:
        return xp.full(k.shape[0], -1, dtype=xp.int64)
    return xp.where(ok, pos[xp.clip(k, 0, pos.shape[0] - 1)], -1)


def _valid_in_frame(b: _Bounds, x: Column, fs, fe, op: str, call: WindowCall):
    """first/last/nth_value IGNORE NULLS: the row of the frame's first/last/n-th non-NULL value, or -1."""
    xp = b.backend.xp
    pos, before = _valid_positions(xp, x)
    lo, hi = before[fs], before[fe]  # the frame's valid rows are pos[lo:hi]
    k = lo if op.startswith("first") else hi - 1 if op.startswith("last") else lo + (call.args[1].value - 1)
    return _at(xp, pos, k, (k >= lo) & (k < hi))


def _valid_neighbour(b: _Bounds, x: Column, offset: int, lead: bool):
    """lag/lead IGNORE NULLS: the row of the ``offset``-th non-NULL value before (after) each row in its
    partition, or -1; offset 0 is the row itself."""
    xp = b.backend.xp
    n = b.ps.shape[0]
    if offset == 0:
        return xp.arange(n, dtype=xp.int64)
    pos, before = _valid_positions(xp, x)
    i = xp.arange(n, dtype=xp.int64)
    if lead:
        k = before[i + 1] + offset - 1
        return _at(xp, pos, k, k < before[b.pe])
    k = before[i] - offset
    return _at(xp, pos, k, k >= before[b.ps])


def _pick(b: _Bounds, x: Column, idx) -> Column:
    """Rows ``idx`` of ``x``, NULL where ``idx`` is -1."""
    if not _compiled_take(b, x):
        return take(b.backend, x, idx, missing=True)
    data, ok = KT.take_or(x.data, x.validity, idx)
    return Column(x.dtype, data=data, validity=ok)


def _shifted_or_default(b: _Bounds, x: Column, default: Column, idx) -> Column:
    """Row ``idx`` of ``x``, or of ``default`` where ``idx`` is -1 (lag/lead with a default)."""
    backend = b.backend
    if _compiled_take(b, x, default) and len(default) == idx.shape[0]:
        data, ok = KT.take_or(x.data, x.validity, idx, default.data.astype(x.data.dtype, copy=False),
                              default.validity)
        return Column(x.dtype, data=data, validity=ok)
    xp = backend.xp
    n = idx.shape[0]
    if x.dtype.kind == "string" or x.dictionary is not None or default.dictionary is not None:
        both = concat_columns(backend, [x, default])
        return take(backend, both, xp.where(idx < 0, xp.arange(n, dtype=xp.int64) + n, idx))
    miss = idx < 0
    safe = xp.where(miss, 0, idx)
    data = xp.where(miss, default.data, backend.gather(x.data, safe))
    validity = None
    if x.validity is not None or default.validity is not None:
        validity = xp.where(miss, _valid(xp, default), backend.gather(_valid(xp, x), safe))
    return Column(x.dtype, data=data.astype(x.data.dtype, copy=False), validity=validity)


def _groups_frame(b: _Bounds, s_code: int, s_off: int, e_code: int, e_off: int):
    """GROUPS frames: n peer groups before/after the row's group, within its partition (backend arrays)."""
    xp = b.backend.xp
    ps, pe, gs, ge = b.ps, b.pe, b.gs, b.ge
    n = ps.shape[0]
    gid = xp.cumsum(b.peer_start.astype(xp.int64)) - 1  # every row's peer group, counted over all rows
    gstart = xp.flatnonzero(b.peer_start)
    gend = xp.concatenate([gstart[1:], xp.full(1, n, dtype=gstart.dtype)])
    first, last = gid[ps], gid[xp.maximum(pe - 1, 0)]
    if s_code == 1:  # n PRECEDING
        fs = gstart[xp.maximum(gid - s_off, first)]
    elif s_code == 3:  # n FOLLOWING: past the partition's last group the frame is empty
        g = gid + s_off
        fs = xp.where(g > last, pe, gstart[xp.minimum(g, last)])
    else:
        fs = {0: ps, 2: gs, 4: pe}[s_code]
    if e_code == 1:  # n PRECEDING: before the partition's first group the frame is empty
        g = gid - e_off
        fe = xp.where(g < first, ps, gend[xp.maximum(g, first)])
    elif e_code == 3:
        fe = gend[xp.minimum(gid + e_off, last)]
    else:
        fe = {0: ps, 2: ge, 4: pe}[e_code]
    return fs, xp.maximum(fe, fs)


def _frame(b: _Bounds, call: WindowCall, order, order_keys):
    kern, xp, ps, pe = b.kern, b.backend.xp, b.ps, b.pe
    fr = call.frame
    if fr.start == "unbounded_preceding" and fr.end == "unbounded_following":
        return ps, pe  # ROWS or RANGE: the whole partition
    s_code, e_code = BOUND_CODES[fr.start], BOUND_CODES[fr.end]
    s_off = fr.start_n if fr.start_n is not None else 0
    e_off = fr.end_n if fr.end_n is not None else 0
    if fr.kind == "rows":
        return kern.rows_frame(ps, pe, s_code, int(s_off), e_code, int(e_off))
    gs, ge = b.gs, b.ge
    if fr.start_n is None and fr.end_n is None:  # RANGE/GROUPS by peers: the bounds are the boundaries
        fs = {0: ps, 2: gs, 4: pe}[s_code]
        return fs, xp.maximum({0: ps, 2: ge, 4: pe}[e_code], fs)
    if fr.kind == "groups":
        return _groups_frame(b, s_code, int(s_off), e_code, int(e_off))
    col = order[0] if order else None
    if col is None:
        w = xp.zeros(ps.shape[0], dtype=xp.int64)
        valid = xp.ones(ps.shape[0], dtype=bool)
        return kern.range_frame(ps, pe, gs, ge, w, valid, s_code, 0, e_code, 0)
    w = _key(b.backend, col)
    if order_keys[0].descending:
        w = -w
    if w.dtype.kind == "f":
        s_off, e_off = float(s_off), float(e_off)
    else:
        s_off, e_off = int(s_off), int(e_off)
    return kern.range_frame(ps, pe, gs, ge, w, _valid(xp, col), s_code, s_off, e_code, e_off)
