"""INTERVAL values (DuckDB's months, days, microseconds) and the functions over them.

Physical layout (see hetdb.types): one complex128 per value used as a 16-byte container; viewed as
int64 pairs, word 0 holds the microseconds and word 1 the months (high 32 bits) and days (low 32
bits, two's complement). Moving values (gather, filter, concatenation, transfer to a device) copies
the bytes unchanged; every computation unpacks to int64 arrays first, so the container's float
meaning is never used. Comparisons and ORDER BY use ``interval_key``: DuckDB's normalised order,
a month counting 30 days and a day 24 hours.

Ops (sql/interval.py binds them):
  interval_make(months, days, micros)     three INT64 columns -> INTERVAL (to_days, to_hours, ...)
  interval_add / interval_sub (a, b)      component-wise, as DuckDB
  interval_mul(iv, n)                     each component times the integer n
  interval_scale(iv, f, divide)           iv * f or iv / f for a DOUBLE f (PostgreSQL's cascade)
  interval_neg(iv)
  timestamp_diff(a, b)                    TIMESTAMP - TIMESTAMP: days and microseconds, both with
                                          the sign of the difference (DuckDB's normalisation)
  timestamp_add_interval(x, iv, sign)     TIMESTAMP/DATE ± an INTERVAL value -> TIMESTAMP
  interval_key(iv)                        -> INT64 microseconds with 30-day months
  interval_field(name, iv)                -> INT64 'months', 'days' or 'micros' as stored
  interval_part(part, iv)                 extract/date_part of an INTERVAL
  age(a, b)                               DuckDB's age(): years/months/days/time borrowing field by field
"""

from __future__ import annotations

from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.columns import and_valid
from hetdb.exec.expr_functions import civil_from_days
from hetdb.plan.expr import Call

US_SECOND = 1_000_000
US_MINUTE = 60 * US_SECOND
US_HOUR = 60 * US_MINUTE
US_DAY = 24 * US_HOUR
US_MONTH = 30 * US_DAY
_LOW32 = 0xFFFF_FFFF


def pack(xp, months, days, micros) -> Any:
    """INTERVAL container array from int64 arrays (or scalars) of months, days and microseconds."""
    months, days, micros = (xp.asarray(v, dtype=xp.int64) for v in (months, days, micros))
    n = max(months.size, days.size, micros.size)
    words = xp.empty((n, 2), dtype=xp.int64)
    words[:, 0] = micros
    words[:, 1] = (months << 32) | (days & _LOW32)
    return words.reshape(-1).view(xp.complex128)


def unpack(xp, data) -> tuple[Any, Any, Any]:
    """(months, days, micros) int64 arrays of an INTERVAL container array."""
    words = xp.ascontiguousarray(data).view(xp.int64).reshape(-1, 2)
    md = words[:, 1]
    days = ((md & _LOW32) ^ 0x8000_0000) - 0x8000_0000  # sign-extend the low 32 bits
    return md >> 32, days, words[:, 0].copy()


def _interval(ev, e, batch: Batch):
    c = ev.evaluate(e, batch)
    return c, unpack(ev.xp, c.data)


def _make(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    cols = [ev.evaluate(a, batch) for a in expr.args]
    parts = [c.data.astype(xp.int64) for c in cols]
    validity = and_valid(xp, and_valid(xp, cols[0].validity, cols[1].validity), cols[2].validity)
    return Column(T.INTERVAL, data=pack(xp, *parts), validity=validity)


def _add_sub(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    a, (am, ad, au) = _interval(ev, expr.args[0], batch)
    b, (bm, bd, bu) = _interval(ev, expr.args[1], batch)
    s = 1 if expr.op == "interval_add" else -1
    return Column(T.INTERVAL, data=pack(xp, am + s * bm, ad + s * bd, au + s * bu),
                  validity=and_valid(xp, a.validity, b.validity))


def _mul(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    a, (m, d, u) = _interval(ev, expr.args[0], batch)
    nc = ev.evaluate(expr.args[1], batch)
    n = nc.data.astype(xp.int64)
    return Column(T.INTERVAL, data=pack(xp, m * n, d * n, u * n), validity=and_valid(xp, a.validity, nc.validity))


def _scale(ev, expr: Call, batch: Batch) -> Column:
    """INTERVAL * or / a DOUBLE as PostgreSQL's interval_mul/interval_div (DuckDB's): each field
    scaled and truncated, the fractional months cascading into days (30 a month) and the fractional
    days into microseconds, the cascaded fractions rounded to whole microseconds."""
    from hetdb.errors import HetdbError

    xp = ev.xp
    a, (m, d, u) = _interval(ev, expr.args[0], batch)
    fc = ev.evaluate(expr.args[1], batch)
    f = fc.data.astype(xp.float64)
    valid = and_valid(xp, a.validity, fc.validity)
    if expr.args[2].value:  # divide
        zero = f == 0 if valid is None else (f == 0) & valid
        if bool(zero.any()):
            raise HetdbError("Invalid Input Error: Division by zero in an INTERVAL division (DuckDB raises "
                             "this error too)")
        f = xp.where(f == 0, 1.0, f)

        def op(x):
            return x.astype(xp.float64) / f
    else:
        def op(x):
            return x.astype(xp.float64) * f

    def tsround(x):
        return xp.rint(x * 1e6) / 1e6

    mf, df = op(m), op(d)
    mi, di = xp.trunc(mf), xp.trunc(df)
    month_days = tsround((mf - mi) * 30.0)
    sec = tsround((df - di + month_days - xp.trunc(month_days)) * 86400.0)
    carry = xp.where(xp.abs(sec) >= 86400.0, xp.trunc(sec / 86400.0), 0.0)
    di = di + carry + xp.trunc(month_days)
    sec = sec - carry * 86400.0
    micros = xp.rint(op(u) + sec * 1e6)
    return Column(T.INTERVAL, data=pack(xp, mi.astype(xp.int64), di.astype(xp.int64), micros.astype(xp.int64)),
                  validity=valid)


def _neg(ev, expr: Call, batch: Batch) -> Column:
    a, (m, d, u) = _interval(ev, expr.args[0], batch)
    return Column(T.INTERVAL, data=pack(ev.xp, -m, -d, -u), validity=a.validity)


def _tdiv(xp, x, k: int):
    """Integer division rounding toward zero (C's, as DuckDB's)."""
    return xp.sign(x) * (xp.abs(x) // k)


def _micros(xp, col: Column):
    data = col.data.astype(xp.int64)
    return data * US_DAY if col.dtype.kind == "date" else data


def _timestamp_diff(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    a, b = ev.evaluate(expr.args[0], batch), ev.evaluate(expr.args[1], batch)
    ua, ub = _micros(xp, a), _micros(xp, b)
    if len(expr.args) > 2:
        return _timestamptz_diff(xp, a, b, ua, ub, expr.args[2].value)
    delta = ua - ub
    days = _tdiv(xp, delta, US_DAY)  # toward zero: both parts carry the sign of the difference
    return Column(T.INTERVAL, data=pack(xp, xp.zeros_like(delta), days, delta - days * US_DAY),
                  validity=and_valid(xp, a.validity, b.validity))


def _timestamptz_diff(xp, a: Column, b: Column, ua, ub, zone: str) -> Column:
    """DuckDB's (ICU's) difference: from the earlier instant, the most whole calendar days in
    ``zone`` that do not pass the later one, then the remaining microseconds in elapsed time;
    negated when a is the earlier."""
    from hetdb.exec.interval_tz import whole_days_tz

    lo, hi = xp.minimum(ua, ub), xp.maximum(ua, ub)
    days, at = whole_days_tz(xp, lo, hi, zone)
    s = xp.where(ua < ub, -1, 1)
    return Column(T.INTERVAL, data=pack(xp, xp.zeros_like(days), s * days, s * (hi - at)),
                  validity=and_valid(xp, a.validity, b.validity))


def _timestamp_add(ev, expr: Call, batch: Batch) -> Column:
    from hetdb.exec.functions_datetime import _add_months, _split

    xp = ev.xp
    x = ev.evaluate(expr.args[0], batch)
    iv, (m, d, u) = _interval(ev, expr.args[1], batch)
    sign = int(expr.args[2].value)
    validity = and_valid(xp, x.validity, iv.validity)
    if len(expr.args) > 3:
        from hetdb.exec.interval_tz import add_interval_tz

        return Column(expr.dtype, data=add_interval_tz(xp, _micros(xp, x), sign * m, sign * d, sign * u,
                                                       expr.args[3].value), validity=validity)
    days, tod = _split(xp, _micros(xp, x))
    days = _add_months(xp, days, sign * m)
    data = ((days + sign * d) * US_DAY + tod + sign * u).astype(xp.int64)
    return Column(T.TIMESTAMP, data=data, validity=validity)


def _key(ev, expr: Call, batch: Batch) -> Column:
    a, (m, d, u) = _interval(ev, expr.args[0], batch)
    return Column(T.INT64, data=m * US_MONTH + d * US_DAY + u, validity=a.validity)


def _field(ev, expr: Call, batch: Batch) -> Column:
    a, (m, d, u) = _interval(ev, expr.args[1], batch)
    return Column(T.INT64, data={"months": m, "days": d, "micros": u}[expr.args[0].value], validity=a.validity)


def _part(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    part = expr.args[0].value
    a, (m, d, u) = _interval(ev, expr.args[1], batch)
    if part == "epoch":
        years = _tdiv(xp, m, 12)  # DuckDB: a year is 365.25 days, the other months 30 days
        days = years * 365.25 + (m - years * 12) * 30 + d
        return Column(T.FLOAT64, data=days * 86_400.0 + u / US_SECOND, validity=a.validity)
    rest_m = m - _tdiv(xp, m, 12) * 12
    in_minute = u - _tdiv(xp, u, US_MINUTE) * US_MINUTE
    in_hour = u - _tdiv(xp, u, US_HOUR) * US_HOUR
    data = {"year": lambda: _tdiv(xp, m, 12), "month": lambda: rest_m, "quarter": lambda: _tdiv(xp, rest_m, 3) + 1,
            "day": lambda: d, "hour": lambda: _tdiv(xp, u, US_HOUR),
            "minute": lambda: _tdiv(xp, in_hour, US_MINUTE), "second": lambda: _tdiv(xp, in_minute, US_SECOND),
            "millisecond": lambda: _tdiv(xp, in_minute, 1000), "microsecond": lambda: in_minute,
            "decade": lambda: _tdiv(xp, m, 120), "century": lambda: _tdiv(xp, m, 1200),
            "millennium": lambda: _tdiv(xp, m, 12000)}[part]()
    return Column(T.INT64, data=data.astype(xp.int64), validity=a.validity)


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _age(ev, expr: Call, batch: Batch) -> Column:
    """DuckDB's Interval::GetAge: field-wise differences of the later minus the earlier timestamp,
    negative fields borrowing from the next larger one (a day borrows the length of the earlier
    timestamp's month), the sign restored at the end."""
    from hetdb.exec.functions_datetime import _split

    xp = ev.xp
    a, b = ev.evaluate(expr.args[0], batch), ev.evaluate(expr.args[1], batch)
    ua, ub = _micros(xp, a), _micros(xp, b)
    flip = ua < ub
    hi, lo = xp.where(flip, ub, ua), xp.where(flip, ua, ub)
    dh, th = _split(xp, hi)
    dl, tl = _split(xp, lo)
    yh, mh, day_h = civil_from_days(xp, dh)
    yl, ml, day_l = civil_from_days(xp, dl)
    time = th - tl
    borrow = time < 0
    time = xp.where(borrow, time + US_DAY, time)
    days = day_h - day_l - borrow
    leap = ((yl % 4 == 0) & (yl % 100 != 0)) | (yl % 400 == 0)
    month_len = xp.asarray(_MONTH_DAYS, dtype=xp.int64)[ml - 1] + (leap & (ml == 2))
    short = days < 0
    days = xp.where(short, days + month_len, days)
    months = (yh - yl) * 12 + (mh - ml) - short
    s = xp.where(flip, -1, 1)
    return Column(T.INTERVAL, data=pack(xp, s * months, s * days, s * time),
                  validity=and_valid(xp, a.validity, b.validity))


def interval_text(months: int, days: int, micros: int) -> str:
    """DuckDB's text of an INTERVAL: '1 year 2 months 3 days 04:05:06.789', '-1 day 01:00:00'."""
    years, rest = int(months / 12), months - int(months / 12) * 12
    parts = [f"{v} {unit}{'' if abs(v) == 1 else 's'}"
             for v, unit in ((years, "year"), (rest, "month"), (days, "day")) if v]
    if micros or not parts:
        us = abs(micros)
        text = f"{us // US_HOUR:02d}:{us // US_MINUTE % 60:02d}:{us // US_SECOND % 60:02d}"
        if us % US_SECOND:
            text += f".{us % US_SECOND:06d}".rstrip("0")
        parts.append(("-" if micros < 0 else "") + text)
    return " ".join(parts)


def _text(ev, expr: Call, batch: Batch) -> Column:
    """INTERVAL -> VARCHAR on the host (Python per value)."""
    import numpy as np
    import pyarrow as pa

    from hetdb.exec.hostutil import column_to_device, column_to_host, note_host_step

    note_host_step(ev.backend, "cast INTERVAL -> VARCHAR (host)")
    col = column_to_host(ev.backend, ev.evaluate(expr.args[0], batch))
    months, days, micros = unpack(np, col.data)
    valid = np.ones(len(col), dtype=bool) if col.validity is None else np.asarray(col.validity, dtype=bool)
    text = [interval_text(int(m), int(d), int(u)) if ok else None
            for m, d, u, ok in zip(months.tolist(), days.tolist(), micros.tolist(), valid.tolist())]
    return column_to_device(ev.backend, Column.from_arrow(pa.array(text, pa.string()), T.STRING))


FUNCTIONS = {
    "interval_text": _text,
    "interval_make": _make, "interval_add": _add_sub, "interval_sub": _add_sub, "interval_mul": _mul,
    "interval_scale": _scale,
    "interval_neg": _neg, "timestamp_diff": _timestamp_diff, "timestamp_add_interval": _timestamp_add,
    "interval_key": _key, "interval_part": _part, "interval_field": _field, "age": _age,
}
