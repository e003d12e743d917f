"""Date and timestamp functions with DuckDB's semantics (vectorised over the backend's arrays;
strftime/strptime run on the host through Python). DATE is days since 1970-01-01 (int32), TIMESTAMP
microseconds (int64). Ops (args positional; ``part`` a string Literal, see sql/functions_ext.py):

  date_part(part, x)        year month day quarter dow isodow doy week isoyear hour minute second
                            millisecond microsecond epoch decade century millennium
  date_trunc(part, x)       -> TIMESTAMP (millennium century decade year quarter month week day hour
                            minute second millisecond)
  date_diff(part, a, b)     boundaries crossed;  date_sub(part, a, b): complete units between
  date_minus_date(a, b)     days;  make_date(y, m, d);  make_timestamp(y, m, d, h, mi, s)
  epoch_ms(ms) to_timestamp(seconds) epoch(x);  add_interval(x, months, days, micros) -> TIMESTAMP
  strftime(x, format) strptime(s, format)
  tz_cast(x, zone)          casts to/from TIMESTAMPTZ with wall times in ``zone`` (also AT TIME ZONE)

Over a TIMESTAMPTZ (UTC microseconds) the binder appends the session's time zone as a last string
argument to date_part, date_trunc, date_diff, date_sub, add_interval and strftime: calendar parts and
units of a day or more count in that zone's wall time (as DuckDB's ICU functions), smaller units in
absolute time.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError
from hetdb.exec import time_formats as TF
from hetdb.exec import timezones as Z
from hetdb.exec.columns import and_valid
from hetdb.exec.expr_functions import civil_from_days, days_from_civil
from hetdb.exec.functions_host import python_function
from hetdb.exec.hostutil import column_to_device, column_to_host, note_host_step
from hetdb.exec.interval_tz import add_interval_tz
from hetdb.plan.expr import Call

US_SECOND = 1_000_000
US_MINUTE = 60 * US_SECOND
US_HOUR = 60 * US_MINUTE
US_DAY = 24 * US_HOUR
_UNIT_US = {"day": US_DAY, "hour": US_HOUR, "minute": US_MINUTE, "second": US_SECOND,
            "millisecond": 1000, "microsecond": 1, "week": 7 * US_DAY}
DATE_PARTS = ("year", "month", "day", "quarter", "dow", "isodow", "doy", "week", "isoyear", "hour",
              "minute", "second", "millisecond", "microsecond", "epoch", "decade", "century", "millennium",
              "yearweek", "era")
TRUNC_PARTS = ("millennium", "century", "decade", "year", "quarter", "month", "week", "day", "hour",
               "minute", "second", "millisecond", "microsecond")
DIFF_PARTS = ("millennium", "century", "decade", "year", "quarter", "month", "week", "day", "hour", "minute",
              "second", "millisecond", "microsecond", "isoyear")
_YEARS = {"decade": 10, "century": 100, "millennium": 1000}


def _micros(xp, col: Column):
    """Microseconds since the epoch of a DATE or TIMESTAMP column."""
    if col.dtype.kind == "timestamp":
        return col.data.astype(xp.int64)
    return col.data.astype(xp.int64) * US_DAY


def _zone(expr: Call, n_args: int) -> str | None:
    """The time zone argument the binder appended after ``n_args`` arguments (TIMESTAMPTZ input)."""
    return expr.args[n_args].value if len(expr.args) > n_args else None


def _wall(xp, col: Column, zone: str | None):
    """Wall-clock microseconds of a DATE/TIMESTAMP, or of a TIMESTAMPTZ in ``zone``."""
    us = _micros(xp, col)
    return Z.to_local(xp, us, zone) if zone is not None else us


def _split(xp, us):
    days = xp.floor_divide(us, US_DAY)
    return days, us - days * US_DAY


def _iso(xp, days):
    """(ISO year, ISO week) of day numbers."""
    isodow = (days + 3) % 7 + 1
    thursday = days - isodow + 4
    ty, _, _ = civil_from_days(xp, thursday)
    one = xp.ones_like(ty)
    return ty, (thursday - days_from_civil(xp, ty, one, one)) // 7 + 1


def _part(xp, part: str, col: Column, zone: str | None = None):
    if part == "epoch":
        return _micros(xp, col) / US_SECOND
    us = _wall(xp, col, zone)
    days, tod = _split(xp, us)
    if part in ("hour", "minute", "second", "millisecond", "microsecond"):
        return {"hour": tod // US_HOUR, "minute": tod // US_MINUTE % 60, "second": tod // US_SECOND % 60,
                "millisecond": tod // 1000 % 60_000, "microsecond": tod % US_MINUTE}[part]
    if part == "dow":
        return (days + 4) % 7
    if part == "isodow":
        return (days + 3) % 7 + 1
    if part in ("week", "isoyear", "yearweek"):
        iy, wk = _iso(xp, days)
        return {"week": wk, "isoyear": iy, "yearweek": iy * 100 + wk}[part]
    y, m, d = civil_from_days(xp, days)
    if part == "doy":
        one = xp.ones_like(y)
        return days - days_from_civil(xp, y, one, one) + 1
    if part == "era":  # DuckDB: 1 for AD, 0 for BC (year 0 = 1 BC)
        return (y > 0).astype(xp.int64)
    return {"year": y, "month": m, "day": d, "quarter": (m - 1) // 3 + 1, "decade": xp.floor_divide(y, 10),
            "century": xp.where(y > 0, (y - 1) // 100 + 1, -((-y) // 100) - 1),
            "millennium": xp.where(y > 0, (y - 1) // 1000 + 1, -((-y) // 1000) - 1)}[part]


def _date_part(ev, expr: Call, batch: Batch) -> Column:
    col = ev.evaluate(expr.args[1], batch)
    data = _part(ev.xp, expr.args[0].value, col, _zone(expr, 2))
    return Column(expr.dtype, data=data.astype(expr.dtype.numpy_dtype), validity=col.validity)


def _trunc_days(xp, part: str, days):
    y, m, _ = civil_from_days(xp, days)
    one = xp.ones_like(y)
    if part == "week":
        return days - (days + 3) % 7
    if part == "month":
        return days_from_civil(xp, y, m, one)
    if part == "quarter":
        return days_from_civil(xp, y, (m - 1) // 3 * 3 + 1, one)
    # DuckDB truncates to the year divisible by 10/100/1000 (2024 -> 2000; not 2001, the first year of
    # the century as EXTRACT counts it)
    year = {"year": y, "decade": xp.floor_divide(y, 10) * 10, "century": xp.floor_divide(y, 100) * 100,
            "millennium": xp.floor_divide(y, 1000) * 1000}[part]
    return days_from_civil(xp, year, one, one)


def _date_trunc(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    part = expr.args[0].value
    col = ev.evaluate(expr.args[1], batch)
    zone = _zone(expr, 2)
    if part in ("minute", "second", "millisecond", "microsecond"):
        zone = None  # DuckDB truncates these in absolute time (a repeated hour keeps its offset)
    us = _wall(xp, col, zone)
    if part in _UNIT_US and part != "week":
        unit = _UNIT_US[part]
        data = xp.floor_divide(us, unit) * unit
    else:
        days, _ = _split(xp, us)
        data = _trunc_days(xp, part, days) * US_DAY
    data = data.astype(xp.int64)
    if zone is not None:
        data = Z.to_utc(xp, data, zone)
    return Column(expr.dtype, data=data, validity=col.validity)


def _months(xp, us):
    days, tod = _split(xp, us)
    y, m, d = civil_from_days(xp, days)
    return y * 12 + m - 1, d, tod


def _diff_micros(xp, part: str, a: Column, b: Column, zone: str | None):
    """Both operands' microseconds: wall time for calendar units of TIMESTAMPTZ, else absolute."""
    if zone is None or part in ("hour", "minute", "second", "millisecond", "microsecond"):
        return _micros(xp, a), _micros(xp, b)
    return _wall(xp, a, zone), _wall(xp, b, zone)


def _date_diff(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    part = expr.args[0].value
    a, b = ev.evaluate(expr.args[1], batch), ev.evaluate(expr.args[2], batch)
    zone = _zone(expr, 3)
    ua, ub = _diff_micros(xp, part, a, b, zone)
    if part == "hour" and zone is not None:  # DuckDB: hours between the wall-clock-truncated instants
        ua, ub = (Z.to_utc(xp, xp.floor_divide(Z.to_local(xp, u, zone), US_HOUR) * US_HOUR, zone) for u in (ua, ub))
    if part == "isoyear":
        data = _iso(xp, _split(xp, ub)[0])[0] - _iso(xp, _split(xp, ua)[0])[0]
    elif part in _YEARS:  # DuckDB: year / 10 (100, 1000) of each side, divided toward zero
        ya, yb = (xp.floor_divide(_months(xp, u)[0], 12) for u in (ua, ub))
        data = xp.trunc(yb / _YEARS[part]) - xp.trunc(ya / _YEARS[part])
    elif part in ("year", "quarter", "month"):
        ma, _, _ = _months(xp, ua)
        mb, _, _ = _months(xp, ub)
        if part == "month":
            data = mb - ma
        elif part == "quarter":
            data = xp.floor_divide(mb, 3) - xp.floor_divide(ma, 3)
        else:
            data = xp.floor_divide(mb, 12) - xp.floor_divide(ma, 12)
    elif part == "week":
        data = xp.floor_divide(_split(xp, ub)[0] - _split(xp, ua)[0], 1)
        data = xp.trunc(data / 7).astype(xp.int64)
    else:
        unit = _UNIT_US[part]
        data = xp.floor_divide(ub, unit) - xp.floor_divide(ua, unit)
    return Column(T.INT64, data=data.astype(xp.int64), validity=and_valid(xp, a.validity, b.validity))


def _month_end(xp, us):
    days, _ = _split(xp, us)
    _, _, d = civil_from_days(xp, days)
    _, _, d_next = civil_from_days(xp, days + 1)
    return d_next < d


def _date_sub(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    part = expr.args[0].value
    a, b = ev.evaluate(expr.args[1], batch), ev.evaluate(expr.args[2], batch)
    ua, ub = _diff_micros(xp, part, a, b, _zone(expr, 3))
    if part in ("year", "quarter", "month", "isoyear") or part in _YEARS:
        ma, da, ta = _months(xp, ua)
        mb, db, tb = _months(xp, ub)
        n = mb - ma
        # a month ending on its last day is complete even when the start's day number is larger
        later = ((db > da) & ~_month_end(xp, ua)) | ((db == da) & (tb > ta))
        earlier = ((db < da) & ~_month_end(xp, ub)) | ((db == da) & (tb < ta))
        n = n - ((n > 0) & earlier) + ((n < 0) & later)
        div = {"month": 1, "quarter": 3, "year": 12, "isoyear": 12}.get(part) or 12 * _YEARS[part]
        data = xp.trunc(n / div).astype(xp.int64)
    else:
        unit = _UNIT_US[part]
        diff = ub - ua
        data = xp.where(diff >= 0, diff // unit, -((-diff) // unit))
    return Column(T.INT64, data=data.astype(xp.int64), validity=and_valid(xp, a.validity, b.validity))


def _date_minus_date(ev, expr: Call, batch: Batch) -> Column:
    a, b = ev.evaluate(expr.args[0], batch), ev.evaluate(expr.args[1], batch)
    xp = ev.xp
    return Column(T.INT64, data=a.data.astype(xp.int64) - b.data.astype(xp.int64),
                  validity=and_valid(xp, a.validity, b.validity))


def _make_date(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    cols = [ev.evaluate(a, batch) for a in expr.args]
    y, m, d = (c.data.astype(xp.int64) for c in cols[:3])
    validity = None
    for c in cols:
        validity = and_valid(xp, validity, c.validity)
    ok = (m >= 1) & (m <= 12) & (d >= 1) & (d <= 31)
    days = days_from_civil(xp, y, xp.where(ok, m, 1), xp.where(ok, d, 1))
    back = civil_from_days(xp, days)
    valid_rows = ok & (back[2] == d) if validity is None else xp.logical_or(~validity, ok & (back[2] == d))
    if not bool(xp.all(valid_rows)):
        raise HetdbError("make_date/make_timestamp: a (year, month, day) that is not a date")
    if expr.op == "make_date":
        return Column(T.DATE, data=days.astype(xp.int32), validity=validity)
    h, mi = (c.data.astype(xp.int64) for c in cols[3:5])
    sec = cols[5].data.astype(xp.float64)
    us = days * US_DAY + h * US_HOUR + mi * US_MINUTE + xp.round(sec * US_SECOND).astype(xp.int64)
    return Column(T.TIMESTAMP, data=us, validity=validity)


def _from_epoch(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    if expr.op == "epoch_ms":
        data = col.data.astype(xp.int64) * 1000
    elif expr.op == "epoch_us_to_timestamp":  # make_timestamp(microseconds)
        data = col.data.astype(xp.int64)
    else:
        data = xp.round(col.data.astype(xp.float64) * US_SECOND).astype(xp.int64)
    return Column(T.TIMESTAMP, data=data, validity=col.validity)


def _epoch(ev, expr: Call, batch: Batch) -> Column:
    col = ev.evaluate(expr.args[0], batch)
    return Column(T.FLOAT64, data=_micros(ev.xp, col) / US_SECOND, validity=col.validity)


def _add_months(xp, days, months: int):
    """Day numbers ``months`` later, the day of month clamped to the month's last day."""
    y, m, d = civil_from_days(xp, days)
    total = y * 12 + (m - 1) + months
    ny, nm = xp.floor_divide(total, 12), total % 12 + 1
    ny2, nm2 = xp.where(nm == 12, ny + 1, ny), xp.where(nm == 12, 1, nm + 1)
    one = xp.ones_like(nm)
    month_len = days_from_civil(xp, ny2, nm2, one) - days_from_civil(xp, ny, nm, one)
    return days_from_civil(xp, ny, nm, xp.minimum(d, month_len))


def _add_interval(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    months, days_n, micros = (a.value for a in expr.args[1:4])
    zone = _zone(expr, 4)
    if zone is not None:
        return Column(expr.dtype, data=add_interval_tz(xp, _micros(xp, col), months, days_n, micros, zone),
                      validity=col.validity)
    days, tod = _split(xp, _micros(xp, col))
    if months:
        days = _add_months(xp, days, months)
    data = ((days + days_n) * US_DAY + tod).astype(xp.int64)
    return Column(expr.dtype, data=data + micros, validity=col.validity)


def _add_interval_n(ev, expr: Call, batch: Batch) -> Column:
    """``x + n * interval`` with a per-row count ``n`` (NULL where n is NULL; a TIMESTAMPTZ on the
    session zone's calendar)."""
    xp = ev.xp
    col, n = ev.evaluate(expr.args[0], batch), ev.evaluate(expr.args[1], batch)
    months, days_n, micros = (a.value for a in expr.args[2:5])
    count = n.data.astype(xp.int64)
    zone = _zone(expr, 5)
    if zone is not None:
        return Column(expr.dtype, data=add_interval_tz(xp, _micros(xp, col), count * months, count * days_n,
                                                       count * micros, zone),
                      validity=and_valid(xp, col.validity, n.validity))
    days, tod = _split(xp, _micros(xp, col))
    if months:
        days = _add_months(xp, days, count * months)
    data = ((days + count * days_n) * US_DAY + tod + count * micros).astype(xp.int64)
    return Column(expr.dtype, data=data, validity=and_valid(xp, col.validity, n.validity))


def _strftime(value, fmt: str, zone: str | None = None) -> str:
    if zone is not None:  # a TIMESTAMPTZ: wall time in the session's zone, %Z its name, %z as +02
        value = value.astimezone(Z.zone(zone))
        offset = value.utcoffset() // dt.timedelta(microseconds=1)
        fmt = fmt.replace("%Z", zone).replace("%z", Z.offset_text(offset))
    return TF.strftime(value, fmt)


def _tz_cast(ev, expr: Call, batch: Batch) -> Column:
    """DATE/TIMESTAMP/VARCHAR <-> TIMESTAMPTZ with wall times in the zone argument."""
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    zone = expr.args[1].value
    src, dst = col.dtype, expr.dtype
    if src.kind == "string" or dst.kind == "string":
        return _tz_text(ev, expr, batch, zone)
    us = _micros(xp, col)
    us = Z.to_local(xp, us, zone) if src.tz else Z.to_utc(xp, us, zone)
    data = xp.floor_divide(us, US_DAY).astype(xp.int32) if dst.kind == "date" else us.astype(xp.int64)
    return Column(dst, data=data, validity=col.validity)


def _tz_text(ev, expr: Call, batch: Batch, zone: str) -> Column:
    """TIMESTAMPTZ <-> VARCHAR on the host, once per distinct value."""
    note_host_step(ev.backend, f"cast {expr.args[0].dtype} -> {expr.dtype} (host)")
    arr = column_to_host(ev.backend, ev.evaluate(expr.args[0], batch)).to_arrow()
    if expr.dtype.kind == "string":
        arr = arr.cast(pa.int64())
        fn, out_type = (lambda v: Z.format_tz(v, zone)), pa.string()
    else:
        fn, out_type = (lambda v: Z.parse_tz(v, zone)), pa.int64()
    enc = pc.dictionary_encode(arr)
    values = pa.array([None if v is None else fn(v) for v in enc.dictionary.to_pylist()], type=out_type)
    out = pc.take(values, enc.indices)
    if expr.dtype.kind != "string":
        out = out.cast(pa.timestamp("us", tz="UTC"))
    return column_to_device(ev.backend, Column.from_arrow(out, expr.dtype))




def _strptime(s: str, fmt: str) -> dt.datetime:
    try:
        return dt.datetime.strptime(*TF.week_day(s, TF.strptime_format(fmt)))
    except ValueError as e:
        raise HetdbError(f"strptime: could not parse {s!r} with format {fmt!r}: {e}") from None


def _try_strptime(s: str, fmt: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(*TF.week_day(s, TF.strptime_format(fmt)))
    except ValueError:
        return None


FUNCTIONS = {
    "date_part": _date_part, "date_trunc": _date_trunc, "date_diff": _date_diff, "date_sub": _date_sub,
    "date_minus_date": _date_minus_date, "make_date": _make_date, "make_timestamp": _make_date,
    "epoch_ms": _from_epoch, "epoch_us_to_timestamp": _from_epoch, "to_timestamp": _from_epoch, "epoch": _epoch,
    "add_interval": _add_interval,
    "add_interval_n": _add_interval_n,
    "strftime": python_function(_strftime, pa.string()), "tz_cast": _tz_cast,
    "strptime": python_function(_strptime, pa.timestamp("us")),
    "strptime_tz": python_function(_strptime, pa.timestamp("us", tz="UTC")),
    "try_strptime": python_function(_try_strptime, pa.timestamp("us")),
    "try_strptime_tz": python_function(_try_strptime, pa.timestamp("us", tz="UTC")),
}
