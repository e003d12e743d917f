"""Exact integer and decimal frame sums of the window operator, as DuckDB widens them (SUM of
INTEGER/BIGINT is HUGEINT, of DECIMAL(p, s) DECIMAL(38, s)): never wrapping past 64 bits.

Where the largest value times the widest frame stays below 2**63 one int64 prefix sum is exact (the
common case). Otherwise each value splits into its high and low 32 bits, whose frame sums cannot
overflow for fewer than 2**31 rows, and the two combine into the exact sum: int64 when every sum
fits, else (on the host) Python ints in an object array, the wide types' form. A GPU query whose
window sum needs more than 64 bits raises GpuWideValueError and runs on the CPU.
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import numpy as np

from hetdb.backend.cpu import window_near as KN
from hetdb.backend.cpu import window_running as KR
from hetdb.backend.cpu.window_passes import averages, value_span
from hetdb.column import Column
from hetdb.errors import GpuWideValueError
from hetdb.exec.wide import is_object

_LIMIT = 1 << 63


def frame_int_sums(kern, xp, data: Any, valid: Any, fs: Any, fe: Any) -> Any:
    """Per row: the exact sum of the valid integers ``data[fs:fe]`` (int64 or an object array)."""
    n = int(data.shape[0])
    if is_object(data):  # HUGEINT / DECIMAL(38) values past 64 bits: Python ints on the host
        values = [int(v) if ok else 0 for v, ok in zip(data.tolist(), np.asarray(valid).tolist())]
        pre = [0, *accumulate(values)]
        sums = [pre[e] - pre[s] for s, e in zip(np.asarray(fs).tolist(), np.asarray(fe).tolist())]
        return _packed(np.array(sums, dtype=object))
    d = data.astype(xp.int64, copy=False)
    if n == 0:
        return kern.frame_sum_int(d, valid, fs, fe)
    if xp is np:  # one parallel pass
        lo, hi, width = (int(v) for v in value_span(d, fs, fe))
    else:
        lo, hi, width = (int(v) for v in xp.stack([d.min(), d.max(), (fe - fs).max()]).tolist())
    if max(-lo, hi) * max(width, 1) < _LIMIT:
        return kern.frame_sum_int(d, valid, fs, fe)
    high = kern.frame_sum_int(d >> 32, valid, fs, fe)
    low = kern.frame_sum_int(d & 0xFFFFFFFF, valid, fs, fe)
    top, rest = (int(v) for v in xp.stack([xp.abs(high).max(), low.max()]).tolist())
    if top < (1 << 30) and rest < (1 << 62):  # |high * 2**32| + low < 2**63
        return (high << 32) + low
    if xp is not np:
        raise GpuWideValueError("a window sum needs more than 64 bits")
    return _packed(np.array([(h << 32) + w for h, w in zip(high.tolist(), low.tolist())], dtype=object))


def _integers(call: Any, x: Column) -> bool:
    """sum/count/avg of integer or decimal values the int64 kernels take."""
    data = x.data
    return call.op in ("sum", "count", "avg") and data is not None and x.dictionary is None \
        and data.dtype.kind in "iu" and not (data.dtype.kind == "u" and data.dtype.itemsize == 8)


def running_aggregate(call: Any, x: Column, bounds: Any) -> Column | None:
    """sum/count/avg of integers or decimals on the CPU over a frame from the partition's first row to
    the end of a segment: the current row (ROWS ... CURRENT ROW), its last peer (RANGE ... CURRENT
    ROW) or the partition's last row (... UNBOUNDED FOLLOWING); by one segmented scan of the sorted
    rows (``bounds``: the operator's _Bounds) and, unless the frame ends at the row, a pass spreading
    each segment's last value over it. None where that does not apply (another frame or type) or a
    running sum leaves int64."""
    fr = call.frame
    if not _integers(call, x) or fr.start != "unbounded_preceding" or fr.end not in ("current", "unbounded_following"):
        return None
    counts = call.op != "sum" or x.validity is not None
    got = KR.running_sums(x.data, x.validity, bounds.part_start, counts)
    if got is None:
        return None
    total, cnt = got
    if fr.end == "unbounded_following" or fr.kind in ("range", "groups"):
        ends = bounds.part_start if fr.end == "unbounded_following" else bounds.peer_start
        KR.spread_last(total, ends)
        if counts:
            KR.spread_last(cnt, ends)
    return _result(call, x, total, cnt)


def narrow_aggregate(call: Any, x: Column, part_start: np.ndarray) -> Column | None:
    """sum/count/avg of integers or decimals on the CPU over a ROWS frame of at most MAX_REACH rows
    around the row (n PRECEDING or CURRENT ROW .. CURRENT ROW or m FOLLOWING), each row summing its
    neighbours within the partition; None where that does not apply or a sum leaves int64."""
    fr = call.frame
    if not _integers(call, x) or fr.kind != "rows" or fr.start not in ("preceding", "current") \
            or fr.end not in ("current", "following"):
        return None
    before = int(fr.start_n) if fr.start == "preceding" else 0
    after = int(fr.end_n) if fr.end == "following" else 0
    if before < 0 or after < 0 or before + after > KN.MAX_REACH:
        return None
    counts = call.op != "sum" or x.validity is not None
    got = KN.frame_sums(x.data, x.validity, part_start, before, after, counts)
    return None if got is None else _result(call, x, *got)


def _result(call: Any, x: Column, total: np.ndarray, cnt: np.ndarray) -> Column:
    """The function's column from int64 frame sums and counts (frames that hold their own row)."""
    has = None if x.validity is None else cnt > 0
    if call.op == "count":
        return Column(call.dtype, data=cnt.astype(call.dtype.numpy_dtype, copy=False))
    if call.op == "sum":
        return Column(call.dtype, data=total.astype(call.dtype.numpy_dtype, copy=False), validity=has)
    scale = 10.0 ** x.dtype.scale if x.dtype.kind == "decimal" else 1.0
    return Column(call.dtype, data=averages(total, cnt, scale).astype(call.dtype.numpy_dtype, copy=False),
                  validity=has)


def _packed(sums: np.ndarray) -> np.ndarray:
    if len(sums) == 0 or (min(sums) >= -_LIMIT and max(sums) < _LIMIT):
        return sums.astype(np.int64)
    return sums


def as_float(xp, sums: Any) -> Any:
    """The sums as doubles (for avg)."""
    if is_object(sums):
        return np.array([float(v) for v in sums.tolist()], dtype=np.float64)
    return sums.astype(xp.float64)
