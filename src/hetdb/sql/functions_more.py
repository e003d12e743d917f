"""More everyday functions with DuckDB's types: bitwise operators (& | xor << >> bit_count), GLOB and
SIMILAR TO / regexp_full_match, last_day, dayname, monthname, weekofyear, yearweek, millisecond,
microsecond, epoch_ms/epoch_us of a timestamp, cbrt, ascii, chr, time_bucket (DATE/TIMESTAMP),
current_setting('TimeZone'), factorial() (HUGEINT, at most 33!), hash() (DuckDB's values, UBIGINT), and the parts of a timestamp difference (``extract(epoch FROM a - b)``,
``date_part('hour', a - b)``, ``epoch(a - b)``: DuckDB's INTERVAL of days and microseconds, without an
INTERVAL type). Executed by exec/functions_more.py.

Deviation, stated: bit_count() is INTEGER (DuckDB TINYINT)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import typing as TY

_BITWISE = {exp.BitwiseAnd: "bit_and", exp.BitwiseOr: "bit_or", exp.BitwiseXor: "bit_xor",
            exp.BitwiseLeftShift: "shift_left", exp.BitwiseRightShift: "shift_right"}
NODES: tuple[type, ...] = (*_BITWISE, exp.BitwiseNot, exp.Glob, exp.SimilarTo, exp.RegexpFullMatch,
                           exp.LastDay, exp.Dayname, exp.Monthname, exp.WeekOfYear, exp.Cbrt, exp.Ascii,
                           exp.Chr, exp.DateBin, exp.Factorial)
ANONYMOUS = ("bit_count", "yearweek", "millisecond", "microsecond", "epoch_us", "current_setting", "hash")
_DAY_US = 86_400_000_000
# DuckDB's default time_bucket origins: Monday 2000-01-03 for day/time widths, 2000-01-01 for months
_ORIGIN_US = 10_959 * _DAY_US
_ORIGIN_MONTHS = 2000 * 12


def handles(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    return isinstance(node, NODES)


def _int(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.INT32, None)
    if not e.dtype.is_integer or e.dtype.kind == "int128":
        raise SqlError(f"{what} needs an INTEGER or BIGINT, got {e.dtype}")
    return e


def _str(e: Expr, what: str) -> Expr:
    e = TY.null_as_string(e)
    if e.dtype.kind != "string":
        raise SqlError(f"{what} needs a string, got {e.dtype}")
    return e


def _date(e: Expr, what: str) -> Expr:
    from hetdb.sql.functions_ext import _temporal

    return _temporal(e, what)


def bind_more(node: exp.Expression, b: Callable[[exp.Expression], Expr]) -> Expr:  # noqa: C901
    from hetdb.sql.functions_ext import date_part

    if type(node) in _BITWISE:
        op = _BITWISE[type(node)]
        x, y = _int(b(node.this), op), _int(b(node.expression), op)
        t = x.dtype if op.startswith("shift") else TY.common_type(x, y, op)
        return Call(t, op, (TY.cast_to(x, t), TY.cast_to(y, T.INT64 if op.startswith("shift") else t)))
    if isinstance(node, exp.BitwiseNot):
        x = _int(b(node.this), "~")
        return Call(x.dtype, "bit_not", (x,))
    if isinstance(node, exp.Glob):
        return Call(T.BOOL, "glob", (_str(b(node.this), "GLOB"), _str(b(node.expression), "GLOB")))
    if isinstance(node, exp.SimilarTo | exp.RegexpFullMatch):
        from hetdb.sql.regex_options import apply_options

        what = "SIMILAR TO" if isinstance(node, exp.SimilarTo) else "regexp_full_match"
        opts = node.args.get("options") if isinstance(node, exp.RegexpFullMatch) else None
        pat, _ = apply_options(_str(b(node.expression), what), b(opts) if opts is not None else None, what)
        e = Call(T.BOOL, "regexp_full_match", (_str(b(node.this), what), pat))
        return Call(T.BOOL, "not", (e,)) if node.args.get("negate") else e
    if isinstance(node, exp.LastDay):
        return Call(T.DATE, "last_day", (_date(b(node.this), "last_day"),))
    if isinstance(node, exp.Dayname | exp.Monthname):
        op = type(node).__name__.lower()
        return Call(T.STRING, op, (_date(b(node.this), op),))
    if isinstance(node, exp.WeekOfYear):
        return date_part("week", b(node.this), "weekofyear")
    if isinstance(node, exp.Cbrt):
        x = b(node.this)
        if not (x.dtype.is_numeric or TY.is_null_literal(x)):
            raise SqlError(f"cbrt needs a number, got {x.dtype}")
        return Call(T.FLOAT64, "cbrt", (TY.cast_to(x, T.FLOAT64),))
    if isinstance(node, exp.Ascii):
        return Call(T.INT32, "ascii", (_str(b(node.this), "ascii"),))
    if isinstance(node, exp.Chr):
        (arg,) = node.expressions
        return Call(T.STRING, "chr", (TY.cast_to(_int(b(arg), "chr"), T.INT64),))
    if isinstance(node, exp.DateBin):
        return _time_bucket(node, b)
    if isinstance(node, exp.Factorial):  # DuckDB: factorial(INTEGER) -> HUGEINT
        x = _int(b(node.this), "factorial")
        if x.dtype.kind != "int32" and not TY.is_null_literal(x):
            raise SqlError(f"factorial needs an INTEGER, got {x.dtype}")
        return Call(T.INT128, "factorial", (TY.cast_to(x, T.INT32),))
    name = str(node.this).lower()
    args = [b(a) for a in node.expressions]
    if name == "current_setting":
        return _current_setting(args)
    if name == "hash":
        return _hash(args)
    if len(args) != 1:
        raise SqlError(f"{name}() takes one argument")
    (x,) = args
    if name == "bit_count":
        return Call(T.INT32, "bit_count", (_int(x, name),))
    if name in ("millisecond", "microsecond"):
        return date_part(name, x, name)
    if name == "yearweek":
        return Call(T.INT64, "yearweek", (_date(x, name),))
    return epoch_units(x, 1, name)


def epoch_units(x: Expr, divisor: int, name: str) -> Expr:
    """epoch_us(ts) (divisor 1) / epoch_ms(ts) (1000): microseconds or milliseconds since the epoch."""
    return Call(T.INT64, "epoch_units", (_date(x, name), Literal(T.INT64, divisor)))


def _current_setting(args: list[Expr]) -> Expr:
    from hetdb.errors import UnsupportedError
    from hetdb.sql.session import time_zone

    if len(args) != 1 or not (isinstance(args[0], Literal) and isinstance(args[0].value, str)):
        raise SqlError("current_setting needs a setting name as a constant string")
    if args[0].value.lower() != "timezone":
        raise UnsupportedError(f"current_setting('{args[0].value}') (supported: 'TimeZone')")
    return Literal(T.STRING, time_zone())


def _hash(args: list[Expr]) -> Expr:
    """hash(a, ...): DuckDB's UBIGINT hash of the values combined (exec/functions_hash.py)."""
    from hetdb.errors import UnsupportedError

    if not args:
        raise SqlError("hash() needs at least one argument")
    for a in args:
        if a.dtype.kind == "interval":
            raise UnsupportedError("hash() of an INTERVAL value (DuckDB hashes the normalised months, "
                                   "days and microseconds; hetdb does not): hash its parts instead")
    return Call(T.UBIGINT, "hash", tuple(args))


def _time_bucket(node: exp.DateBin, b: Callable[[exp.Expression], Expr]) -> Expr:
    """time_bucket(width, x[, offset | origin]) over a DATE (DATE result) or TIMESTAMP."""
    from hetdb.errors import UnsupportedError
    from hetdb.sql.functions_ext import _temporal, interval_parts

    if not isinstance(node.this, exp.Interval):
        raise UnsupportedError("time_bucket with a bucket width that is not an INTERVAL constant")
    months, days, micros = interval_parts(node.this)
    if months and (days or micros):
        raise SqlError("time_bucket: month intervals cannot have day or time components")
    if months < 0 or days * _DAY_US + micros < 0 or not (months or days or micros):
        raise SqlError("time_bucket: the bucket width must be positive")
    x = _temporal(b(node.expression), "time_bucket")
    if x.dtype.tz:
        raise UnsupportedError("time_bucket of a TIMESTAMPTZ (cast it to TIMESTAMP, or use date_trunc)")
    origin, offset = (_ORIGIN_MONTHS if months else _ORIGIN_US), 0  # months since year 0, or microseconds
    third = node.args.get("unit")
    as_date = x.dtype.kind == "date"
    if third is not None:
        if isinstance(third, exp.Interval):
            o_months, o_days, o_micros = interval_parts(third)
            if o_months:
                raise UnsupportedError("time_bucket with a month offset")
            offset = o_days * _DAY_US + o_micros
        else:
            given = b(third)
            as_date = as_date and given.dtype.kind == "date"  # DATE with a TIMESTAMP origin: TIMESTAMP
            o = TY.cast_to(given, T.TIMESTAMP)
            if not isinstance(o, Literal) or o.value is None:
                raise UnsupportedError("time_bucket with an origin that is not a constant TIMESTAMP")
            origin = o.value
            if months:
                day = TY.days_to_date(o.value // _DAY_US)
                origin = day.year * 12 + day.month - 1
    width = months if months else days * _DAY_US + micros
    out = Call(T.TIMESTAMP, "time_bucket", (x, Literal(T.INT64, width), Literal(T.BOOL, bool(months)),
                                             Literal(T.INT64, origin), Literal(T.INT64, offset)))
    return TY.cast_to(out, T.DATE) if as_date else out


_INTERVAL_PARTS = ("epoch", "day", "hour", "minute", "second", "millisecond", "microsecond", "month", "year",
                   "quarter", "decade", "century", "millennium")


def _difference(node: exp.Expression) -> exp.Sub | None:
    while isinstance(node, exp.Paren):
        node = node.this
    return node if isinstance(node, exp.Sub) else None


def takes_difference(node: exp.Expression) -> bool:
    """Whether ``node`` reads a part of ``a - b`` (bound by ``difference_part`` when both are timestamps)."""
    if isinstance(node, exp.Extract):
        return _difference(node.expression) is not None
    if isinstance(node, exp.TimeToUnix):
        return _difference(node.this) is not None
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("date_part", "datepart"):
        return len(node.expressions) == 2 and _difference(node.expressions[1]) is not None
    return False


def difference_part(node: exp.Expression, b: Callable[[exp.Expression], Expr]) -> Expr | None:
    """A part of the INTERVAL ``a - b`` where a and b are timestamps (at least one not a DATE), as
    DuckDB normalises it: whole days and the remaining microseconds, truncated toward zero; None
    when the operands are not timestamps (the caller binds the node as usual)."""
    from hetdb.sql.functions_ext import _const_string, _part_name

    if isinstance(node, exp.Extract):
        part, sub = _part_name(node.this.name), _difference(node.expression)
    elif isinstance(node, exp.TimeToUnix):
        part, sub = "epoch", _difference(node.this)
    else:
        part, sub = _part_name(_const_string(b(node.expressions[0]), "the part of date_part")), \
            _difference(node.expressions[1])
    a, c = b(sub.this), b(sub.expression)
    kinds = (a.dtype.kind, c.dtype.kind)
    if not set(kinds) <= {"date", "timestamp"} or kinds == ("date", "date"):
        return None
    if part not in _INTERVAL_PARTS:
        from hetdb.errors import UnsupportedError

        raise UnsupportedError(f"the part '{part}' of a timestamp difference (supported: {', '.join(_INTERVAL_PARTS)})")
    t = T.TIMESTAMPTZ if a.dtype.tz or c.dtype.tz else T.TIMESTAMP
    return Call(T.FLOAT64 if part == "epoch" else T.INT64, "difference_part",
                (Literal(T.STRING, part), TY.cast_to(a, t), TY.cast_to(c, t)))
