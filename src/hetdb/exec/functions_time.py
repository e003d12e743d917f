"""Host implementations of sql/time_type.py's TIME functions (microseconds since midnight, int64)."""

from __future__ import annotations

import math

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import OutOfRangeError
from hetdb.exec.hostutil import column_to_device, column_to_host
from hetdb.plan.expr import Call
from hetdb.sql.time_type import US_PER_DAY, format_time, parse_time


def _host(ev, expr: Call, batch: Batch, i: int = 0) -> Column:
    return column_to_host(ev.backend, ev.evaluate(expr.args[i], batch))


def _valid(*cols: Column):
    out = None
    for c in cols:
        if c.validity is not None:
            out = c.validity.copy() if out is None else out & c.validity
    return out


def _out(ev, dtype, data, validity) -> Column:
    return column_to_device(ev.backend, Column(dtype, data=np.ascontiguousarray(data, dtype=dtype.numpy_dtype),
                                               validity=validity))


def _from_text(ev, expr: Call, batch: Batch) -> Column:
    texts = _host(ev, expr, batch).to_arrow().to_pylist()
    out = np.zeros(len(texts), np.int64)
    for i, s in enumerate(texts):
        if s is None:
            continue
        us = parse_time(s)
        if us is None:
            raise OutOfRangeError(f"Conversion Error: invalid TIME '{s}' (expected format "
                                  "[YYYY-MM-DD ]HH:MM:SS[.MS])")
        out[i] = us
    valid = np.array([s is not None for s in texts], dtype=bool)
    return _out(ev, T.TIME, out, None if valid.all() else valid)


def _to_text(ev, expr: Call, batch: Batch) -> Column:
    import pyarrow as pa

    c = _host(ev, expr, batch)
    valid = np.ones(len(c), bool) if c.validity is None else c.validity
    texts = [format_time(int(v)) if ok else None for v, ok in zip(c.data.tolist(), valid.tolist())]
    return column_to_device(ev.backend, Column.from_arrow(pa.array(texts, pa.string()), T.STRING))


def _of_timestamp(ev, expr: Call, batch: Batch) -> Column:
    c = _host(ev, expr, batch)
    return _out(ev, T.TIME, np.mod(c.data, US_PER_DAY), c.validity)


def _part(ev, expr: Call, batch: Batch) -> Column:
    p = expr.args[0].value
    c = _host(ev, expr, batch, 1)
    us = c.data.astype(np.int64)
    if p == "epoch":
        return _out(ev, T.FLOAT64, us / 1e6, c.validity)
    if p == "hour":
        data = us // 3_600_000_000
    elif p == "minute":
        data = us // 60_000_000 % 60
    else:
        in_minute = us % 60_000_000
        data = in_minute // {"second": 1_000_000, "millisecond": 1000, "microsecond": 1}[p]
    return _out(ev, T.INT64, data, c.validity)


def _make_time(ev, expr: Call, batch: Batch) -> Column:
    h, m, s = (_host(ev, expr, batch, i) for i in range(3))
    valid = _valid(h, m, s)
    ok = np.ones(len(h), bool) if valid is None else valid
    out = np.zeros(len(h), np.int64)
    for i, (hh, mm, ss, v) in enumerate(zip(h.data.tolist(), m.data.tolist(), s.data.tolist(), ok.tolist())):
        if not v:
            continue
        if not (0 <= hh < 24 and 0 <= mm < 60 and math.isfinite(ss) and 0 <= ss <= 60):
            raise OutOfRangeError(f"Conversion Error: Time out of range: {hh}:{mm}:{ss:.6f}")
        out[i] = (hh * 60 + mm) * 60_000_000 + round(ss * 1_000_000)
    return _out(ev, T.TIME, out, valid)


def _date_plus_time(ev, expr: Call, batch: Batch) -> Column:
    d, t = _host(ev, expr, batch, 0), _host(ev, expr, batch, 1)
    return _out(ev, T.TIMESTAMP, d.data.astype(np.int64) * US_PER_DAY + t.data, _valid(d, t))


def _plus_interval(ev, expr: Call, batch: Batch) -> Column:
    from hetdb.exec.functions_interval import unpack

    t, iv = _host(ev, expr, batch, 0), _host(ev, expr, batch, 1)
    _, _, micros = unpack(np, iv.data)
    moved = t.data + expr.args[2].value * micros.astype(np.int64)
    return _out(ev, T.TIME, np.mod(moved, US_PER_DAY), _valid(t, iv))


def _micros(ev, expr: Call, batch: Batch) -> Column:
    c = _host(ev, expr, batch)
    return _out(ev, T.INT64, c.data, c.validity)


FUNCTIONS = {
    "time_micros": _micros,
    "time_from_text": _from_text, "time_to_text": _to_text, "time_of_timestamp": _of_timestamp,
    "time_part": _part, "make_time": _make_time, "date_plus_time": _date_plus_time,
    "time_plus_interval": _plus_interval,
}
