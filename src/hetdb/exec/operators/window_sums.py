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

from hetdb.backend.cpu.window_passes import value_span
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


def _packed(sums: np.ndarray) -> np.ndarray:
    if len(sums) == 0 or (min(sums) >= -_LIMIT and max(sums) < _LIMIT):
        return sums.astype(np.int64)
    return sums


def as_float(xp, sums: Any) -> Any:
    """The sums as doubles (for avg)."""
    if is_object(sums):
        return np.array([float(v) for v in sums.tolist()], dtype=np.float64)
    return sums.astype(xp.float64)
