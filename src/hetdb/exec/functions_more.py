"""Executors of sql/functions_more.py: bitwise operators on the backend's arrays, GLOB/SIMILAR TO and
a few text and date functions (vectorised, or on the host through Python for patterns)."""

from __future__ import annotations

import fnmatch
import math
import re
from functools import lru_cache

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError, OutOfRangeError
from hetdb.exec.columns import and_valid
from hetdb.exec.expr_functions import civil_from_days, days_from_civil
from hetdb.exec.functions_hash import FUNCTIONS as HASH_FUNCTIONS
from hetdb.exec.functions_host import python_function
from hetdb.exec.functions_interval import FUNCTIONS as INTERVAL_FUNCTIONS
from hetdb.exec.functions_math import FUNCTIONS as MATH_FUNCTIONS
from hetdb.exec.functions_narrow import FUNCTIONS as NARROW_FUNCTIONS
from hetdb.plan.expr import Call

_DAY_US = 86_400_000_000
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def _bitwise(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    a, c = (ev.evaluate(x, batch) for x in expr.args)
    x, y = a.data.astype(expr.dtype.numpy_dtype), c.data.astype(np.int64)
    if expr.op == "bit_and":
        out = x & y.astype(x.dtype)
    elif expr.op == "bit_or":
        out = x | y.astype(x.dtype)
    elif expr.op == "bit_xor":
        out = x ^ y.astype(x.dtype)
    else:
        out = _shift(xp, expr.op, x, y, and_valid(xp, a.validity, c.validity))
    return Column(expr.dtype, data=out.astype(expr.dtype.numpy_dtype), validity=and_valid(xp, a.validity, c.validity))


def _shift(xp, op: str, x, y, valid):
    """DuckDB's shifts: a left shift of a negative number, by a negative amount or past the type's
    width is an error; a right shift by the width or more gives 0."""
    bits = x.dtype.itemsize * 8
    shift = xp.clip(y, 0, bits - 1).astype(x.dtype)
    if op == "shift_right":
        return xp.where(y < bits, x >> shift, 0)
    limit = xp.iinfo(x.dtype).max >> shift
    bad = (y < 0) | (y >= bits) | (x < 0) | (x > limit)
    if valid is not None:
        bad &= valid
    if bool(xp.any(bad)):
        raise OutOfRangeError("Out of Range Error: a left shift of a negative number, by a negative amount "
                              "or past the type's width overflows")
    return x << shift


def _bit_not(ev, expr: Call, batch: Batch) -> Column:
    a = ev.evaluate(expr.args[0], batch)
    return Column(expr.dtype, data=~a.data, validity=a.validity)


def _bit_count(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    a = ev.evaluate(expr.args[0], batch)
    bits = a.data.dtype.itemsize * 8
    v = a.data.view({32: xp.uint32, 64: xp.uint64}[bits])
    count = xp.zeros(v.shape, dtype=xp.int32)
    for _ in range(bits):
        count += (v & 1).astype(xp.int32)
        v = v >> 1
    return Column(expr.dtype, data=count, validity=a.validity)


@lru_cache(maxsize=256)
def _full(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as e:
        raise HetdbError(f"invalid regular expression {pattern!r}: {e}") from None


def _days(ev, col: Column):
    if col.dtype.kind == "timestamp":
        return ev.xp.floor_divide(col.data, _DAY_US)
    return col.data.astype(ev.xp.int64)


def _last_day(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    y, m, _ = civil_from_days(xp, _days(ev, col))
    ny, nm = xp.where(m == 12, y + 1, y), xp.where(m == 12, 1, m + 1)
    last = days_from_civil(xp, ny, nm, xp.ones_like(nm)) - 1
    return Column(T.DATE, data=last.astype(xp.int32), validity=col.validity)


def _names(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    days = _days(ev, col)
    if expr.op == "dayname":
        idx, names = (days + 4) % 7, _DAYS
    else:
        idx, names = civil_from_days(xp, days)[1] - 1, _MONTHS
    codes = (ev.backend.to_host(idx) if xp is not np else idx).astype(np.int32)
    arr = pa.DictionaryArray.from_arrays(pa.array(codes, mask=None if col.validity is None else
                                                  ~np.asarray(col.validity if xp is np else xp.asnumpy(col.validity))),
                                         pa.array(names))
    from hetdb.exec.hostutil import column_to_device

    return column_to_device(ev.backend, Column.from_arrow(arr.cast(pa.string()), T.STRING))


def _yearweek(ev, expr: Call, batch: Batch) -> Column:
    from hetdb.exec.functions_datetime import _iso

    col = ev.evaluate(expr.args[0], batch)
    year, week = _iso(ev.xp, _days(ev, col))
    return Column(T.INT64, data=(year * 100 + week).astype(ev.xp.int64), validity=col.validity)


def _epoch_units(ev, expr: Call, batch: Batch) -> Column:
    col = ev.evaluate(expr.args[0], batch)
    us = col.data.astype(ev.xp.int64) if col.dtype.kind == "timestamp" else col.data.astype(ev.xp.int64) * _DAY_US
    d = expr.args[1].value
    # DuckDB rounds epoch_ms half away from zero (-0.0015 s is -2 ms)
    data = us if d == 1 else ev.xp.sign(us) * ((ev.xp.abs(us) + d // 2) // d)
    return Column(T.INT64, data=data, validity=col.validity)


def _time_bucket(ev, expr: Call, batch: Batch) -> Column:
    """Buckets of ``width`` microseconds (or months) counted from the origin (microseconds, or months
    since year 0 for month widths), shifted by the offset."""
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    width, by_month, origin, offset = (a.value for a in expr.args[1:5])
    us = (col.data.astype(xp.int64) if col.dtype.kind == "timestamp" else col.data.astype(xp.int64) * _DAY_US) - offset
    if by_month:
        y, m, _ = civil_from_days(xp, xp.floor_divide(us, _DAY_US))
        rel = y * 12 + (m - 1) - origin
        start = xp.floor_divide(rel, width) * width + origin
        days = days_from_civil(xp, xp.floor_divide(start, 12), start % 12 + 1, xp.ones_like(start))
        data = days * _DAY_US + offset
    else:
        data = xp.floor_divide(us - origin, width) * width + origin + offset
    return Column(T.TIMESTAMP, data=data.astype(xp.int64), validity=col.validity)


def _difference_part(ev, expr: Call, batch: Batch) -> Column:
    """A part of ``a - b`` as DuckDB's INTERVAL holds it: whole days plus microseconds, both carrying
    the difference's sign (truncated toward zero)."""
    xp = ev.xp
    a, c = ev.evaluate(expr.args[1], batch), ev.evaluate(expr.args[2], batch)
    diff = a.data.astype(xp.int64) - c.data.astype(xp.int64)
    validity = and_valid(xp, a.validity, c.validity)
    part = expr.args[0].value
    if part == "epoch":
        return Column(T.FLOAT64, data=diff / 1e6, validity=validity)
    sign, mag = xp.sign(diff), xp.abs(diff)
    rem = mag % _DAY_US
    out = {"day": mag // _DAY_US, "hour": rem // 3_600_000_000, "minute": rem // 60_000_000 % 60,
           "second": rem // 1_000_000 % 60, "millisecond": rem // 1000 % 60_000,
           "microsecond": rem % 60_000_000}.get(part)
    data = xp.zeros_like(diff) if out is None else sign * out  # month and larger: 0 (no months in a - b)
    return Column(T.INT64, data=data.astype(xp.int64), validity=validity)


def _avg_micros(ev, expr: Call, batch: Batch) -> Column:
    """sql/temporal_aggs.py: sum // count toward zero, + 1 when the remainder passes count // 2."""
    xp = ev.xp
    total, count = (ev.evaluate(a, batch) for a in expr.args)
    c = count.data.astype(xp.int64)
    valid = c > 0
    if total.data.dtype == object:
        sums = [int(v) if v is not None else 0 for v in total.data.tolist()]
        data = xp.asarray([_rounded_avg(v, int(n)) if n > 0 else 0 for v, n in zip(sums, c.tolist())], dtype=xp.int64)
    else:
        s = total.data.astype(xp.int64)
        n = xp.maximum(c, 1)
        q = xp.sign(s) * (xp.abs(s) // n)
        data = q + ((s - q * n) > n // 2)
    validity = valid if total.validity is None else valid & total.validity
    return Column(expr.dtype, data=data.astype(xp.int64), validity=validity)


def _assemble_bits(ev, expr: Call, batch: Batch) -> Column:
    """sql/bit_aggs.py: one aggregated 0/1 (or count, for xor: its parity) column per bit -> the value."""
    xp = ev.xp
    cols = [ev.evaluate(a, batch) for a in expr.args[1:]]
    parity = bool(expr.args[0].value)
    acc = xp.zeros(batch.num_rows, dtype=xp.uint64)
    for b, col in enumerate(cols):
        bit = col.data.astype(xp.int64)
        if parity:
            bit = bit % 2
        acc |= bit.astype(xp.uint64) << xp.uint64(b)
    width = 32 if expr.dtype.kind == "int32" else 64
    data = acc.astype(xp.uint32).view(xp.int32) if width == 32 else acc.view(xp.int64)
    return Column(expr.dtype, data=data, validity=cols[0].validity)


def _factorial(ev, expr: Call, batch: Batch) -> Column:
    """n! as HUGEINT (exact Python ints; int64 data while every value fits, see hetdb.types)."""
    from hetdb.exec.hostutil import column_to_host, wide_column_to_device
    from hetdb.exec.wide import narrow

    col = column_to_host(ev.backend, ev.evaluate(expr.args[0], batch))
    values = np.asarray(col.data, dtype=np.int64)
    live = values if col.validity is None else values[np.asarray(col.validity, dtype=bool)]
    if (live < 0).any():
        raise OutOfRangeError("Out of Range Error: factorial of a negative number is undefined")
    if (live > 33).any():
        raise OutOfRangeError(f"Out of Range Error: factorial({int(live.max())}) is past HUGEINT's range "
                              "(at most factorial(33))")
    table = [math.factorial(k) for k in range(34)]
    data = np.array([table[min(max(int(v), 0), 33)] for v in values.tolist()], dtype=object)
    return wide_column_to_device(ev.backend, Column(T.INT128, data=narrow(data), validity=col.validity))


def _timestamp_from_micros(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    v = col.data.astype(xp.float64)
    return Column(expr.dtype, data=(xp.sign(v) * xp.floor(xp.abs(v) + 0.5)).astype(xp.int64), validity=col.validity)


def _rounded_avg(total: int, count: int) -> int:
    q = abs(total) // count * (1 if total >= 0 else -1)
    return q + (total - q * count > count // 2)


def _cbrt(ev, expr: Call, batch: Batch) -> Column:
    col = ev.evaluate(expr.args[0], batch)
    return Column(T.FLOAT64, data=ev.xp.cbrt(col.data.astype(ev.xp.float64)), validity=col.validity)


def _chr(n: int) -> str:
    try:
        return chr(n)
    except (ValueError, OverflowError):
        raise HetdbError(f"chr: {n} is not a valid Unicode code point") from None


FUNCTIONS = {
    **{op: _bitwise for op in ("bit_and", "bit_or", "bit_xor", "shift_left", "shift_right")},
    "bit_not": _bit_not, "bit_count": _bit_count,
    "glob": python_function(lambda s, p: fnmatch.fnmatchcase(s, p), pa.bool_()),
    "regexp_full_match": python_function(lambda s, p: _full(p).fullmatch(s) is not None, pa.bool_()),
    "last_day": _last_day, "dayname": _names, "monthname": _names, "yearweek": _yearweek,
    "epoch_units": _epoch_units, "cbrt": _cbrt, "time_bucket": _time_bucket,
    "difference_part": _difference_part, "avg_micros": _avg_micros,
    "timestamp_from_micros": _timestamp_from_micros, "factorial": _factorial,
    "assemble_bits": _assemble_bits,
    "contains_rows": python_function(lambda s, p: p in s, pa.bool_()),
    "starts_with_rows": python_function(lambda s, p: s.startswith(p), pa.bool_()),
    "ascii": python_function(lambda s: ord(s[0]) if s else 0, pa.int32()),
    "chr": python_function(_chr, pa.string()),
    **INTERVAL_FUNCTIONS,
    **HASH_FUNCTIONS,
    **MATH_FUNCTIONS,
    **NARROW_FUNCTIONS,
}
