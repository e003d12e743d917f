"""Scalar functions of the expression evaluator: math, strings and dates.

Dates are int32 days since 1970-01-01; year/month/day come from a vectorized civil-from-days
conversion (Howard Hinnant's algorithm), so no per-row Python runs. String functions without a
backend kernel (upper, lower, trim, concat, casts to/from text) run through pyarrow on the host.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import UnsupportedError
from hetdb.exec.columns import and_valid
from hetdb.exec.conversions import convert, quiet, round_div
from hetdb.exec.expressions import ExprEvaluator
from hetdb.exec.hostutil import arrow_string_transform, column_to_device, column_to_host, note_host_step
from hetdb.plan.expr import Call, Literal
from hetdb.types import DataType

_US_PER_DAY = 86_400_000_000


# ---- math -------------------------------------------------------------------------------------------
def _unary_float(fn_name: str):
    def run(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
        c = ev.evaluate(expr.args[0], batch)
        with quiet(ev.xp):
            data = getattr(ev.xp, fn_name)(ev.numeric(c, T.FLOAT64))
        return Column(T.FLOAT64, data=data, validity=c.validity)
    return run


def _literal_int(expr: Call, i: int, default: int | None) -> int | None:
    if len(expr.args) <= i:
        return default
    a = expr.args[i]
    if not isinstance(a, Literal) or a.value is None:
        raise UnsupportedError(f"{expr.op}() needs a constant integer argument {i + 1}")
    return int(a.value)


def _round(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    c = ev.evaluate(expr.args[0], batch)
    digits = _literal_int(expr, 1, 0)
    rt = expr.dtype
    if c.dtype.kind == "decimal" and rt.kind == "decimal" and digits < 0:
        # round to 10**-digits (half away from zero); the result has scale 0
        step = 10 ** (c.dtype.scale - digits)
        q = round_div(xp, c.data.astype(xp.int64), step) * (10 ** -digits)
        return Column(rt, data=convert(xp, q, DataType("decimal", 18, 0), rt), validity=c.validity)
    if c.dtype.kind == "decimal" and rt.kind == "decimal":
        # rescale to ``digits`` (half away from zero), then to the declared result scale
        mid = DataType("decimal", 18, max(0, min(digits, c.dtype.scale)))
        return Column(rt, data=convert(xp, convert(xp, c.data, c.dtype, mid), mid, rt), validity=c.validity)
    if c.dtype.is_integer and digits >= 0:
        return Column(rt, data=convert(xp, c.data, c.dtype, rt), validity=c.validity)
    x = ev.numeric(c, T.FLOAT64)
    f = 10.0 ** digits
    with quiet(xp):
        data = xp.sign(x) * xp.floor(xp.abs(x) * f + 0.5) / f
        # a value too large to scale has no digits to round away (DuckDB returns it unchanged)
        data = xp.where(xp.isfinite(data) | ~xp.isfinite(x), data, x)
    return Column(rt, data=convert(xp, data, T.FLOAT64, rt), validity=c.validity)


def _floor_ceil(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    c = ev.evaluate(expr.args[0], batch)
    rt = expr.dtype
    if c.dtype.kind == "decimal":
        p = 10 ** c.dtype.scale
        q = xp.floor_divide(c.data, p) if expr.op == "floor" else -xp.floor_divide(-c.data, p)
        return Column(rt, data=convert(xp, q, T.INT64, rt), validity=c.validity)
    if c.dtype.is_integer:
        return Column(rt, data=convert(xp, c.data, c.dtype, rt), validity=c.validity)
    data = xp.floor(ev.numeric(c, T.FLOAT64)) if expr.op == "floor" else xp.ceil(ev.numeric(c, T.FLOAT64))
    return Column(rt, data=convert(xp, data, T.FLOAT64, rt), validity=c.validity)


def _sign(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    c = ev.evaluate(expr.args[0], batch)
    return Column(expr.dtype, data=ev.xp.sign(c.data).astype(expr.dtype.numpy_dtype), validity=c.validity)


def _greatest_least(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    """SQL GREATEST/LEAST as DuckDB computes them: NULL arguments are skipped; NULL only when all
    arguments are NULL."""
    xp = ev.xp
    pick = xp.maximum if expr.op == "greatest" else xp.minimum
    rt = expr.dtype
    data, valid = None, None
    for arg in expr.args:
        c = ev.evaluate(arg, batch)
        x = ev.numeric(c, rt)
        v = c.validity if c.validity is not None else xp.ones(batch.num_rows, dtype=bool)
        if data is None:
            data, valid = x, v
            continue
        both = xp.logical_and(valid, v)
        data = xp.where(both, pick(data, x), xp.where(valid, data, x))
        valid = xp.logical_or(valid, v)
    from hetdb.exec.wide import is_object, narrow

    if rt.is_wide and is_object(data):  # HUGEINT / UBIGINT past 64 bits: exact
        data = narrow(data)
    return Column(rt, data=data if is_object(data) else data.astype(rt.numpy_dtype, copy=False),
                  validity=None if bool(valid.all()) else valid)


# ---- strings ------------------------------------------------------------------------------------------
def _pattern(expr: Call) -> str | None:
    p = expr.args[1]
    if not isinstance(p, Literal):
        raise UnsupportedError(f"{expr.op.upper()} needs a constant pattern")
    return None if p.value is None else str(p.value)


def _like(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    col = ev.evaluate(expr.args[0], batch)
    pattern = _pattern(expr)
    if pattern is None:
        return Column(T.BOOL, data=ev.xp.zeros(batch.num_rows, dtype=bool),
                      validity=ev.xp.zeros(batch.num_rows, dtype=bool))
    ci = expr.op == "ilike"
    res = ev.string_mask(col, ("like", pattern, ci), lambda o, c: ev.backend.like(o, c, pattern, ci))
    if expr.op == "not_like":
        res = Column(T.BOOL, data=ev.xp.logical_not(res.data), validity=res.validity)
    return res


def _affix(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    lit = _pattern(expr)
    if lit is None or "%" in lit or "_" in lit:
        fn = {"starts_with": pc.starts_with, "ends_with": pc.ends_with,
              "contains": pc.match_substring}[expr.op]
        col = ev.evaluate(expr.args[0], batch)
        if lit is None:
            return Column(T.BOOL, data=ev.xp.zeros(batch.num_rows, dtype=bool),
                          validity=ev.xp.zeros(batch.num_rows, dtype=bool))
        note_host_step(ev.backend, f"{expr.op} with a wildcard character (pyarrow)")
        out = column_to_host(ev.backend, col).to_arrow()
        mask = fn(out, pattern=lit)
        return column_to_device(ev.backend, Column.from_arrow(mask, T.BOOL))
    pattern = {"starts_with": lit + "%", "ends_with": "%" + lit, "contains": "%" + lit + "%"}[expr.op]
    return _like(ev, Call(T.BOOL, "like", (expr.args[0], Literal(T.STRING, pattern))), batch)


def _dedupe_dictionary(ev: ExprEvaluator, codes: Any, offsets: Any, chars: Any, validity: Any) -> Column:
    """A dictionary column whose (possibly repeating) dictionary values are made unique, so equal
    strings always have equal codes (joins and GROUP BY rely on that)."""
    ucodes, uoff, uchars = ev.backend.factorize_strings(offsets, chars)
    dictionary = Column(T.STRING, offsets=uoff, chars=uchars)
    data = ev.backend.gather(ucodes, codes.astype(ev.xp.int64)) if int(ucodes.shape[0]) else codes
    return Column(T.STRING, data=data.astype(ev.xp.int32), validity=validity, dictionary=dictionary)


def _substring(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    col = ev.evaluate(expr.args[0], batch)
    start = _literal_int(expr, 1, 1)
    length = _literal_int(expr, 2, None)
    if col.dictionary is not None:
        d = col.dictionary
        res = ev.dict_cached(d, ("substr", start, length),
                             lambda: _dedupe_dictionary(ev, ev.xp.arange(len(d), dtype=ev.xp.int32),
                                                        *ev.backend.substring(d.offsets, d.chars, start, length),
                                                        None))
        data = ev.backend.gather(res.data, col.data.astype(ev.xp.int64)) if len(d) else col.data
        return Column(T.STRING, data=data, validity=col.validity, dictionary=res.dictionary)
    offsets, chars = ev.backend.substring(col.offsets, col.chars, start, length)
    return Column(T.STRING, offsets=offsets, chars=chars, validity=col.validity)


def _length(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)

    def count(offsets, chars):
        starts = ((chars & 0xC0) != 0x80).astype(xp.int64)  # one lead byte per code point
        cs = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(starts)])
        return cs[offsets[1:]] - cs[offsets[:-1]]

    if col.dictionary is not None:
        d = col.dictionary
        per = ev.dict_cached(d, ("length",), lambda: count(d.offsets, d.chars))
        data = ev.backend.gather(per, col.data.astype(xp.int64)) if len(d) else xp.zeros(len(col), xp.int64)
    else:
        data = count(col.offsets, col.chars)
    return Column(expr.dtype, data=data.astype(expr.dtype.numpy_dtype), validity=col.validity)


def _arrow_unary(fn):
    def run(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
        col = ev.evaluate(expr.args[0], batch)
        if col.dictionary is not None:
            d = col.dictionary
            res = ev.dict_cached(d, (expr.op,), lambda: _transform_dictionary(ev, d, fn))
            data = ev.backend.gather(res.data, col.data.astype(ev.xp.int64)) if len(d) else col.data
            return Column(T.STRING, data=data, validity=col.validity, dictionary=res.dictionary)
        return arrow_string_transform(ev.backend, col, fn)
    return run


def _transform_dictionary(ev: ExprEvaluator, d: Column, fn) -> Column:
    out = arrow_string_transform(ev.backend, d, fn)
    return _dedupe_dictionary(ev, ev.xp.arange(len(d), dtype=ev.xp.int32), out.offsets, out.chars, None)


def _concat(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    cols = [ev.cast(ev.evaluate(a, batch), T.STRING) for a in expr.args]
    note_host_step(ev.backend, "string concatenation (pyarrow)")
    arrays = [column_to_host(ev.backend, c).to_arrow() for c in cols]
    if expr.op == "concat_skip":  # concat() skips NULL arguments (DuckDB); || is NULL in, NULL out
        arrays = [a.fill_null("") for a in arrays]
    out = pc.binary_join_element_wise(*arrays, "")
    return column_to_device(ev.backend, Column.from_arrow(out, T.STRING))


def arrow_cast(ev: ExprEvaluator, col: Column, dtype: DataType) -> Column:
    """Casts to or from text, through Arrow on the host (DuckDB's formats for dates and numbers)."""
    note_host_step(ev.backend, f"cast {col.dtype} -> {dtype} (pyarrow)")
    host = column_to_host(ev.backend, col).to_arrow()
    try:
        if dtype.kind == "string" and col.dtype.kind == "float64":
            out = pa.array([None if v is None else repr(v) for v in host.to_pylist()], pa.string())
        elif dtype.kind == "string" and col.dtype.kind == "timestamp":
            # DuckDB prints fractional seconds without trailing zeros (and none when zero)
            text = pc.replace_substring_regex(host.cast(pa.string()), r"(\.\d*[1-9])0+$", r"\1")
            out = _before_christ(pc.replace_substring_regex(text, r"\.0+$", ""))
        elif dtype.kind == "string" and col.dtype.kind == "date":
            out = _before_christ(host.cast(pa.string()))
        elif dtype.kind == "string":
            out = host.cast(pa.string())
        elif dtype.kind == "date":
            out = host.cast(pa.date32())
        else:
            out = host.cast(dtype.to_arrow())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        from hetdb.errors import HetdbError

        raise HetdbError(f"cannot cast {col.dtype} values to {dtype}: {e}") from None
    return column_to_device(ev.backend, Column.from_arrow(out, dtype))


def _before_christ(text: pa.Array) -> pa.Array:
    """Arrow's text of a date or timestamp in year 0 or before (astronomical '-0001-11-28') as DuckDB
    writes it: '0002-11-28 (BC)', the era after the date ('0002-11-28 (BC) 01:30:00')."""
    if not pc.any(pc.match_substring_regex(text, r"^(-|0000-)")).as_py():
        return text

    def one(v: str | None) -> str | None:
        m = re.match(r"^(-?\d+)(-\d\d-\d\d)(.*)$", v or "")
        if m is None or int(m.group(1)) > 0:
            return v
        return f"{1 - int(m.group(1)):04d}{m.group(2)} (BC){m.group(3)}"

    return pa.array([one(v) for v in text.to_pylist()], pa.string())


# ---- dates ------------------------------------------------------------------------------------------------
def civil_from_days(xp, days: Any) -> tuple[Any, Any, Any]:
    """(year, month, day) int64 arrays from days since 1970-01-01 (proleptic Gregorian)."""
    z = days.astype(xp.int64) + 719468
    era = xp.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = xp.where(mp < 10, mp + 3, mp - 9)
    y = yoe + era * 400 + (m <= 2)
    return y, m, d


def days_from_civil(xp, y: Any, m: Any, d: Any) -> Any:
    y = y - (m <= 2)
    era = xp.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _days_and_time(ev: ExprEvaluator, col: Column) -> tuple[Any, Any]:
    if col.dtype.kind == "timestamp":
        days = ev.xp.floor_divide(col.data, _US_PER_DAY)
        return days, col.data - days * _US_PER_DAY
    return col.data.astype(ev.xp.int64), None


def _extract(part: str):
    def run(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
        col = ev.evaluate(expr.args[0], batch)
        days, _ = _days_and_time(ev, col)
        y, m, d = civil_from_days(ev.xp, days)
        data = {"year": y, "month": m, "day": d}[part]
        return Column(expr.dtype, data=data.astype(expr.dtype.numpy_dtype), validity=col.validity)
    return run


def _date_result(ev: ExprEvaluator, days: Any, time: Any, rt: DataType) -> Any:
    if rt.kind == "timestamp":
        out = days.astype(ev.xp.int64) * _US_PER_DAY
        return out if time is None else out + time
    return days.astype(rt.numpy_dtype)


def _date_add_days(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    col, n = (ev.evaluate(a, batch) for a in expr.args)
    days, time = _days_and_time(ev, col)
    days = days + n.data.astype(ev.xp.int64)
    return Column(expr.dtype, data=_date_result(ev, days, time, expr.dtype),
                  validity=and_valid(ev.xp, col.validity, n.validity))


def _date_add_months(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col, n = (ev.evaluate(a, batch) for a in expr.args)
    days, time = _days_and_time(ev, col)
    y, m, d = civil_from_days(xp, days)
    total = y * 12 + (m - 1) + n.data.astype(xp.int64)
    ny, nm = xp.floor_divide(total, 12), total % 12 + 1
    # clamp the day to the target month's length (Jan 31 + 1 month = Feb 28/29, as DuckDB)
    ny2, nm2 = xp.where(nm == 12, ny + 1, ny), xp.where(nm == 12, 1, nm + 1)
    month_len = days_from_civil(xp, ny2, nm2, xp.ones_like(nm2)) - days_from_civil(xp, ny, nm, xp.ones_like(nm))
    out = days_from_civil(xp, ny, nm, xp.minimum(d, month_len))
    return Column(expr.dtype, data=_date_result(ev, out, time, expr.dtype),
                  validity=and_valid(xp, col.validity, n.validity))


def _date_trunc(part: str):
    def run(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
        xp = ev.xp
        col = ev.evaluate(expr.args[0], batch)
        days, _ = _days_and_time(ev, col)
        y, m, _d = civil_from_days(xp, days)
        one = xp.ones_like(y)
        if part == "year":
            out = days_from_civil(xp, y, one, one)
        elif part == "quarter":
            out = days_from_civil(xp, y, (m - 1) // 3 * 3 + 1, one)
        elif part == "month":
            out = days_from_civil(xp, y, m, one)
        else:
            out = days
        return Column(expr.dtype, data=_date_result(ev, out, None, expr.dtype), validity=col.validity)
    return run




FUNCTIONS = {
    "round": _round, "floor": _floor_ceil, "ceil": _floor_ceil, "sign": _sign,
    "greatest": _greatest_least, "least": _greatest_least,
    "sqrt": _unary_float("sqrt"), "ln": _unary_float("log"), "exp": _unary_float("exp"),
    "like": _like, "not_like": _like, "ilike": _like,
    "starts_with": _affix, "ends_with": _affix, "contains": _affix,
    "substring": _substring, "length": _length,
    "upper": _arrow_unary(pc.utf8_upper), "lower": _arrow_unary(pc.utf8_lower),
    "trim": _arrow_unary(lambda a: pc.utf8_trim(a, characters=" ")),
    "concat": _concat, "concat_skip": _concat,
    "extract_year": _extract("year"), "extract_month": _extract("month"), "extract_day": _extract("day"),
    "date_add_days": _date_add_days, "date_add_months": _date_add_months,
    "date_trunc_year": _date_trunc("year"), "date_trunc_quarter": _date_trunc("quarter"),
    "date_trunc_month": _date_trunc("month"), "date_trunc_day": _date_trunc("day"),
}

__all__ = ["FUNCTIONS", "arrow_cast", "civil_from_days", "days_from_civil"]
