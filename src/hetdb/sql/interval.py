"""INTERVAL values with DuckDB's types and rules (executed by exec/functions_interval.py):

  INTERVAL '1 year 2 hours', INTERVAL 3 DAY, INTERVAL (n) DAY   constants, or a per-row count
  TIMESTAMP - TIMESTAMP (TIMESTAMPTZ too)   -> INTERVAL of days and microseconds
  INTERVAL ± INTERVAL, INTERVAL * integer, -INTERVAL   component-wise
  DATE/TIMESTAMP ± INTERVAL value           -> TIMESTAMP (months first, then days, then time)
  comparisons, ORDER BY                     DuckDB's normalised order (a month is 30 days)
  to_years/to_quarters/to_months/to_weeks/to_days/to_hours/to_minutes/to_seconds/to_milliseconds/
  to_microseconds(n), age(a[, b]), extract/date_part/epoch of an INTERVAL

INTERVAL is a result type only: it cannot be stored, grouped on or aggregated (except count); those
are refused by name.
"""

from __future__ import annotations

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import typing as TY

_US = {"microsecond": 1, "millisecond": 1000, "second": 10**6, "minute": 60 * 10**6, "hour": 3600 * 10**6}
# to_<unit>(n): (months, days, micros) per unit, DuckDB's argument type
TO_UNITS = {"to_years": ((12, 0, 0), T.INT32), "to_quarters": ((3, 0, 0), T.INT32),
            "to_months": ((1, 0, 0), T.INT32), "to_weeks": ((0, 7, 0), T.INT32),
            "to_days": ((0, 1, 0), T.INT32), "to_hours": ((0, 0, _US["hour"]), T.INT64),
            "to_minutes": ((0, 0, _US["minute"]), T.INT64), "to_seconds": ((0, 0, _US["second"]), T.FLOAT64),
            "to_milliseconds": ((0, 0, _US["millisecond"]), T.FLOAT64),
            "to_microseconds": ((0, 0, 1), T.INT64)}
PARTS = ("year", "month", "quarter", "day", "hour", "minute", "second", "millisecond", "microsecond",
         "decade", "century", "millennium", "epoch")


def cast(x: Expr, node) -> Expr:
    """CAST(x AS INTERVAL): a constant string (DuckDB's interval text) or NULL."""
    from sqlglot import exp

    from hetdb.sql.functions_ext import interval_parts

    if is_interval(x) or TY.is_null_literal(x):
        return x if is_interval(x) else Literal(T.INTERVAL, None)
    if isinstance(x, Literal) and isinstance(x.value, str):
        return constant(*interval_parts(exp.Interval(this=exp.Literal.string(x.value))))
    raise UnsupportedError(f"CAST of {x.dtype} values to INTERVAL (a constant string is supported)")


def to_text(x: Expr) -> Expr:
    """CAST(interval AS VARCHAR) as DuckDB prints it."""
    if isinstance(x, Literal):
        from hetdb.exec.functions_interval import interval_text

        return Literal(T.STRING, None if x.value is None else interval_text(*x.value))
    return Call(T.STRING, "interval_text", (x,))


def is_interval(e: Expr) -> bool:
    return e.dtype.kind == "interval"


def constant(months: int, days: int, micros: int) -> Literal:
    return Literal(T.INTERVAL, (months, days, micros))


def scaled(months: int, days: int, micros: int, count: Expr) -> Expr:
    """``INTERVAL (count) unit``: the unit's interval times a per-row integer."""
    return arith("mul", constant(months, days, micros), count)


def to_unit(name: str, arg: Expr) -> Expr:
    (months, days, micros), arg_type = TO_UNITS[name]
    if TY.is_null_literal(arg):
        return Literal(T.INTERVAL, None)
    if not arg.dtype.is_numeric:
        raise SqlError(f"{name}() needs a number, got {arg.dtype}")
    if arg_type == T.FLOAT64:  # fractional seconds/milliseconds: whole microseconds, rounded
        us = Call(T.FLOAT64, "mul", (TY.cast_to(arg, T.FLOAT64), Literal(T.FLOAT64, float(micros))))
        n = TY.cast_to(Call(T.FLOAT64, "round", (us,)), T.INT64)
        return _make(Literal(T.INT64, 0), Literal(T.INT64, 0), n)
    n = TY.cast_to(TY.cast_to(arg, arg_type), T.INT64)
    return arith("mul", constant(months, days, micros), n)


def _make(months: Expr, days: Expr, micros: Expr) -> Expr:
    return Call(T.INTERVAL, "interval_make", (months, days, micros))


def timestamp_diff(a: Expr, b: Expr) -> Expr:
    """``a - b``; for TIMESTAMPTZ (DuckDB's ICU subtraction) the whole days are counted on the
    session zone's calendar and the rest in absolute time."""
    from hetdb.sql.functions_ext import _zone_of

    t = T.TIMESTAMPTZ if a.dtype.tz or b.dtype.tz else T.TIMESTAMP
    a, b = TY.cast_to(a, t), TY.cast_to(b, t)
    return Call(T.INTERVAL, "timestamp_diff", (a, b, *_zone_of(a, b)))


def arith(op: str, a: Expr, b: Expr) -> Expr:
    """``a op b`` where at least one side is an INTERVAL."""
    if TY.is_null_literal(a) or TY.is_null_literal(b):
        other = b if TY.is_null_literal(a) else a
        return Literal(T.TIMESTAMP if other.dtype.kind in ("date", "timestamp") else T.INTERVAL, None)
    ia, ib = is_interval(a), is_interval(b)
    if ia and ib and op in ("add", "sub"):
        return Call(T.INTERVAL, f"interval_{op}", (a, b))
    if op == "mul" and ia != ib:
        iv, n = (a, b) if ia else (b, a)
        if n.dtype.is_integer:
            return Call(T.INTERVAL, "interval_mul", (iv, TY.cast_to(n, T.INT64)))
        if not n.dtype.is_numeric:
            raise SqlError(f"INTERVAL * {n.dtype}: multiply an INTERVAL by a number")
        return Call(T.INTERVAL, "interval_scale", (iv, TY.cast_to(n, T.FLOAT64), Literal(T.BOOL, False)))
    if op == "div" and ia and not ib:
        if not b.dtype.is_numeric:
            raise SqlError(f"INTERVAL / {b.dtype}: divide an INTERVAL by a number")
        return Call(T.INTERVAL, "interval_scale", (a, TY.cast_to(b, T.FLOAT64), Literal(T.BOOL, True)))
    if op in ("add", "sub") and ib and a.dtype.kind in ("date", "timestamp"):
        return add_to(a, b, 1 if op == "add" else -1)
    if op == "add" and ia and b.dtype.kind in ("date", "timestamp"):
        return add_to(b, a, 1)
    symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/", "intdiv": "//", "mod": "%"}.get(op, op)
    raise UnsupportedError(f"{a.dtype} {symbol} {b.dtype}")


def add_to(x: Expr, iv: Expr, sign: int) -> Expr:
    """DATE/TIMESTAMP ± an INTERVAL value -> TIMESTAMP; TIMESTAMPTZ ± an INTERVAL -> TIMESTAMPTZ with
    months and days counted on the session zone's calendar (DuckDB's ICU arithmetic)."""
    from hetdb.sql.functions_ext import _zone_of

    t = T.TIMESTAMPTZ if x.dtype.tz else T.TIMESTAMP
    return Call(t, "timestamp_add_interval", (x, iv, Literal(T.INT32, sign), *_zone_of(x)))


def negate(x: Expr) -> Expr:
    if isinstance(x, Literal):
        return x if x.value is None else constant(*(-v for v in x.value))
    return Call(T.INTERVAL, "interval_neg", (x,))


def key(x: Expr) -> Expr:
    """The INT64 DuckDB orders and compares INTERVALs by (30-day months, 24-hour days)."""
    return Call(T.INT64, "interval_key", (x,))


def sort_key(x: Expr) -> Expr:
    return key(x) if is_interval(x) else x


def compare(op: str, a: Expr, b: Expr) -> Expr:
    for side, other in ((a, b), (b, a)):
        if not (is_interval(side) or TY.is_null_literal(side)):
            raise SqlError(f"cannot compare {side.dtype} with {other.dtype}")
    if TY.is_null_literal(a) or TY.is_null_literal(b):
        return Literal(T.BOOL, None)
    return Call(T.BOOL, op, (key(a), key(b)))


def part(name: str, x: Expr) -> Expr:
    if name not in PARTS:
        raise UnsupportedError(f"the part '{name}' of an INTERVAL (supported: {', '.join(PARTS)})")
    return Call(T.FLOAT64 if name == "epoch" else T.INT64, "interval_part", (Literal(T.STRING, name), x))


def age(a: Expr, b: Expr | None) -> Expr:
    """age(a, b) = a - b in years, months, days and time; age(a) = age(current midnight, a)."""
    from hetdb.sql.functions_ext import _temporal

    if b is None:
        from hetdb.sql.functions_ext import _now

        today = TY.cast_to(TY.cast_to(Literal(T.TIMESTAMPTZ, _now()), T.DATE), T.TIMESTAMP)
        a, b = today, a
    a, b = _temporal(a, "age"), _temporal(b, "age")
    if a.dtype.tz or b.dtype.tz:  # DuckDB: the fields of both as wall times in the session's zone
        a, b = (TY.cast_to(TY.cast_to(x, T.TIMESTAMPTZ), T.TIMESTAMP) for x in (a, b))
    return Call(T.INTERVAL, "age", (TY.cast_to(a, T.TIMESTAMP), TY.cast_to(b, T.TIMESTAMP)))


def refuse_keys(exprs, what: str) -> None:
    """INTERVAL values cannot be hashed as keys (their equality is DuckDB's normalised one)."""
    for e in exprs:
        if is_interval(e):
            raise UnsupportedError(f"{what} on an INTERVAL value (use epoch(x) or a part of it instead)")
