"""Binding of the string, regex, math, date/time and conversion functions beyond the core set, with
DuckDB's argument and result types (checked with ``typeof()``). Each becomes a ``Call`` whose op the
executor implements in ``exec/functions_text.py`` or ``exec/functions_datetime.py``.

Deviation, stated: sign() is INTEGER (DuckDB TINYINT). As DuckDB: to_timestamp(), now() and
current_timestamp are TIMESTAMP WITH TIME ZONE; DATE ± INTERVAL is TIMESTAMP; over a TIMESTAMPTZ the
date functions work in the session's time zone (``SET TimeZone``), passed as a last argument.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import HetdbError, SqlError, UnsupportedError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import functions_math as MATH
from hetdb.sql import functions_more as MORE
from hetdb.sql import functions_strings as STRS
from hetdb.sql import interval as IV
from hetdb.sql import typing as TY

_DATE_PART_ALIASES = {
    "years": "year", "yr": "year", "y": "year", "months": "month", "mon": "month", "days": "day",
    "d": "day", "dayofmonth": "day", "quarters": "quarter", "dayofweek": "dow", "weekday": "dow",
    "dayofyear": "doy", "weeks": "week", "weekofyear": "week", "w": "week", "hours": "hour", "h": "hour",
    "minutes": "minute", "min": "minute", "m": "minute", "seconds": "second", "s": "second",
    "sec": "second", "milliseconds": "millisecond", "ms": "millisecond", "microseconds": "microsecond",
    "us": "microsecond", "decades": "decade", "centuries": "century", "millennia": "millennium",
}
_PART_NODES = {exp.Quarter: "quarter", exp.DayOfWeek: "dow", exp.DayOfYear: "doy", exp.Week: "week",
               exp.Hour: "hour", exp.Minute: "minute", exp.Second: "second", exp.DayOfMonth: "day",
               exp.DayOfWeekIso: "isodow"}
ANONYMOUS = ("printf", "date_part", "datepart", "date_sub", "now", "log2", "ltrim", "rtrim", "timezone",
             "get_current_timestamp", "transaction_timestamp", "age", "datesub", "try_strptime", *IV.TO_UNITS)
NODES: tuple[type, ...] = (
    exp.Trim, exp.Replace, exp.SplitPart, exp.StartsWith, exp.Contains, exp.RegexpLike,
    exp.RegexpReplace, exp.RegexpExtract, exp.Pad, exp.Left, exp.Right, exp.Reverse, exp.Repeat,
    exp.StrPosition, exp.MD5, exp.Format, exp.ConcatWs, exp.Log, exp.Sign, exp.Rand, exp.Pi, exp.Typeof,
    exp.TryCast, exp.TimestampTrunc, exp.DateTrunc, exp.DateDiff, exp.TimeToStr, exp.StrToTime,
    exp.DateFromParts, exp.TimestampFromParts, exp.UnixToTime, exp.TimeToUnix, exp.CurrentDate,
    exp.CurrentTimestamp, exp.DateAdd, exp.AtTimeZone, exp.ToDays, *_PART_NODES, *MORE.NODES, *MATH.NODES,
    *STRS.NODES,
)

def handles(node: exp.Expression) -> bool:
    if MORE.handles(node) or MORE.takes_difference(node) or MATH.handles(node) or STRS.handles(node):
        return True
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    if isinstance(node, exp.Extract):
        return _part_name(node.this.name) not in ("year", "month", "day")
    return isinstance(node, NODES)


def _string(e: Expr, what: str) -> Expr:
    e = TY.null_as_string(e)
    if e.dtype.kind != "string":
        raise SqlError(f"{what} needs a string, got {e.dtype}")
    return e


def _integer(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.INT64, None)
    if not e.dtype.is_integer:
        raise SqlError(f"{what} needs an integer, got {e.dtype}")
    return TY.cast_to(e, T.INT64)


def _temporal(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.TIMESTAMP, None)
    if e.dtype.kind == "string" and isinstance(e, Literal):
        return TY.cast_to(e, T.TIMESTAMP)
    if e.dtype.kind not in ("date", "timestamp"):
        raise SqlError(f"{what} needs a DATE or TIMESTAMP, got {e.dtype}")
    return e


def _regex_options(b, node: exp.Expression, fname: str, arg: str, allow_global: bool = False) -> tuple[Expr, bool]:
    """The pattern of a regexp function with its options argument ``arg`` applied (sql/regex_options)."""
    from hetdb.sql.regex_options import apply_options

    opts = node.args.get(arg)
    return apply_options(_string(b(node.expression), fname), b(opts) if opts is not None else None, fname,
                         allow_global)


def _const_string(e: Expr, what: str) -> str:
    if not (isinstance(e, Literal) and isinstance(e.value, str)):
        raise UnsupportedError(f"{what} that is not a constant string")
    return e.value


def _part_name(text: str) -> str:
    p = text.strip().strip("'").lower()
    return _DATE_PART_ALIASES.get(p, p)


def _part(e: Expr | str, allowed: tuple[str, ...], what: str) -> str:
    p = _part_name(e if isinstance(e, str) else _const_string(e, f"the part of {what}"))
    if p not in allowed:
        raise UnsupportedError(f"{what} of part '{p}' (supported: {', '.join(allowed)})")
    return p


def _zone_of(*xs: Expr) -> tuple[Expr, ...]:
    """The session's time zone as a last argument where an operand is a TIMESTAMPTZ, else nothing."""
    from hetdb.sql.session import time_zone

    return (Literal(T.STRING, time_zone()),) if any(x.dtype.tz for x in xs) else ()


def date_part(part: str, x: Expr, what: str) -> Expr:
    from hetdb.exec.functions_datetime import DATE_PARTS

    p = _part(part, DATE_PARTS, what)
    if x.dtype.kind == "time":
        from hetdb.sql.time_type import part as time_part

        return time_part(p, x, what)
    if IV.is_interval(x):
        return IV.part(p, x)
    x = _temporal(x, what)
    return Call(T.FLOAT64 if p == "epoch" else T.INT64, "date_part", (Literal(T.STRING, p), x, *_zone_of(x)))


def at_time_zone(x: Expr, zone: Expr) -> Expr:
    """``x AT TIME ZONE zone`` / timezone(zone, x): a TIMESTAMP read as wall time in ``zone`` becomes
    a TIMESTAMPTZ; a TIMESTAMPTZ becomes its wall time in ``zone`` (a TIMESTAMP)."""
    from hetdb.exec.timezones import zone as check_zone

    name = _const_string(zone, "AT TIME ZONE with a zone")
    check_zone(name)
    x = _temporal(x, "AT TIME ZONE")
    return TY.tz_cast(x, T.TIMESTAMP if x.dtype.tz else T.TIMESTAMPTZ, name)


def _type_name(e: Expr) -> str:
    if TY.is_null_literal(e) or e.dtype == T.NULL:
        return '"NULL"'
    return str(e.dtype)  # DataType prints DuckDB's type names (HUGEINT, DECIMAL(p,s), VARCHAR, ...)


def _now() -> int:
    from hetdb.sql.session import statement_time

    def clock() -> int:
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        return (now - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)

    return statement_time(clock)


_UNITS_US = {"microsecond": 1, "millisecond": 1000, "second": 10**6, "minute": 60 * 10**6,
             "hour": 3600 * 10**6}


def interval_parts(node: exp.Interval) -> tuple[int, int, int]:
    """(months, days, microseconds) of an INTERVAL literal (several 'n unit' pairs allowed)."""
    text = node.this.name if node.this is not None else ""
    unit = node.args.get("unit")
    spec = f"{text} {unit.name}" if unit is not None else text
    written = node.this.meta.get("written", "") if node.this is not None else ""
    if unit is not None and written.startswith("'") and unit.name.lower() in written.lower():
        spec = written.strip("'")  # sql/parse.py kept the whole literal
    months = days = micros = 0
    clock = re.search(r"([-+]?)(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?", spec)
    if clock:  # '04:05:06.5' (hours:minutes[:seconds]) as in '1 day 04:05:06.5'
        sign = -1 if clock.group(1) == "-" else 1
        h, m, sec = int(clock.group(2)), int(clock.group(3)), float(clock.group(4) or 0)
        micros += sign * (h * 3600 * 10**6 + m * 60 * 10**6 + round(sec * 10**6))
        spec = spec[:clock.start()] + spec[clock.end():]
    pairs = re.findall(r"(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)", spec)
    if (not pairs and not clock) or re.sub(r"(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)", "", spec).strip():
        raise SqlError(f"cannot read INTERVAL '{spec.strip()}' (write e.g. INTERVAL '2 hours 30 minutes')")
    for num, u in pairs:
        name = _part_name(u)
        if name in ("year", "month", "quarter", "decade", "century", "millennium", "week", "day"):
            if "." in num:
                raise UnsupportedError(f"a fractional INTERVAL of {u}")
            n = int(num)
            months += n * {"year": 12, "month": 1, "quarter": 3, "decade": 120, "century": 1200,
                           "millennium": 12000}.get(name, 0)
            days += n * {"week": 7, "day": 1}.get(name, 0)
        elif name in _UNITS_US:
            micros += round(float(num) * _UNITS_US[name])
        else:
            raise UnsupportedError(f"INTERVAL unit {u}")
    return months, days, micros


def is_interval(node: exp.Expression) -> bool:
    """An INTERVAL literal, ``INTERVAL (n) unit``, or an INTERVAL times a number."""
    if isinstance(node, exp.Paren):
        return is_interval(node.this)
    return isinstance(node, exp.Interval) or (
        isinstance(node, exp.Mul) and (isinstance(node.this, exp.Interval) or isinstance(node.expression, exp.Interval)))


def _interval_value(node: exp.Expression, b) -> tuple[int, int, int, exp.Expression | None]:
    """(months, days, microseconds, multiplier) of an interval expression; the multiplier is the
    per-row count of ``INTERVAL (n) unit`` / ``n * INTERVAL ...`` (None for a constant interval)."""
    if isinstance(node, exp.Paren):
        return _interval_value(node.this, b)
    if isinstance(node, exp.Mul):
        iv, n = (node.this, node.expression) if isinstance(node.this, exp.Interval) else (node.expression, node.this)
        months, days, micros, inner = _interval_value(iv, b)
        if inner is not None:
            raise UnsupportedError("an INTERVAL with a computed count times a number")
        return months, days, micros, n
    this = node.this
    if this is None or (isinstance(this, exp.Literal) and this.is_string):
        return (*interval_parts(node), None)
    unit = node.args.get("unit")
    if unit is None:
        raise SqlError(f"INTERVAL ({this.sql(dialect='duckdb')}) needs a unit, e.g. INTERVAL (n) DAY")
    one = exp.Interval(this=exp.Literal.string("1"), unit=unit.copy())
    return (*interval_parts(one), this)


def interval_arith(x: Expr, iv: exp.Expression, sign: int, b=None) -> Expr:
    """``x ± INTERVAL`` with DuckDB's types: TIMESTAMP for a DATE or TIMESTAMP, TIMESTAMPTZ for a
    TIMESTAMPTZ (months and days move its wall clock in the session's zone). ``iv`` may scale the
    interval by a per-row count (``INTERVAL (n) DAY``, ``n * INTERVAL '1 month'``; ``b`` binds it)."""
    months, days, micros, count = _interval_value(iv, b)
    if TY.is_null_literal(x):
        return Literal(T.TIMESTAMP, None)
    if count is not None:
        n = _integer(b(count), "the count of an INTERVAL")
        if not isinstance(n, Literal):
            x = _temporal(x, "INTERVAL arithmetic")
            return Call(T.TIMESTAMPTZ if x.dtype.tz else T.TIMESTAMP, "add_interval_n", (
                x, n, Literal(T.INT64, sign * months), Literal(T.INT64, sign * days), Literal(T.INT64, sign * micros),
                *_zone_of(x)))
        if n.value is None:
            return Literal(T.TIMESTAMP, None)
        months, days, micros = months * n.value, days * n.value, micros * n.value
    if x.dtype.kind == "date" and not micros:
        from hetdb.sql.exprs import _date_plus_interval

        return TY.cast_to(_date_plus_interval(x, sign * months, sign * days), T.TIMESTAMP)
    x = _temporal(x, "INTERVAL arithmetic")
    return Call(T.TIMESTAMPTZ if x.dtype.tz else T.TIMESTAMP, "add_interval", (
        x, Literal(T.INT64, sign * months), Literal(T.INT64, sign * days), Literal(T.INT64, sign * micros),
        *_zone_of(x)))


def bind_ext(node: exp.Expression, b: Callable[[exp.Expression], Expr]) -> Expr:  # noqa: C901
    """Bind one node ``handles`` accepted; ``b`` binds a child expression."""
    if MORE.handles(node):
        return MORE.bind_more(node, b)
    if STRS.handles(node):
        return STRS.bind(node, b)
    if MATH.handles(node):
        return MATH.bind(node, b)
    if MORE.takes_difference(node):
        part = MORE.difference_part(node, b)
        if part is not None:
            return part
        if isinstance(node, exp.Extract) and _part_name(node.this.name) in ("year", "month", "day"):
            from hetdb.sql.exprs import _extract

            return _extract(node.this.name.upper(), b(node.expression))
    if isinstance(node, exp.Anonymous):
        return _anonymous(str(node.this).lower(), [b(a) for a in node.expressions])
    if isinstance(node, exp.Trim):
        s = _string(b(node.this), "trim")
        pos = str(node.args.get("position") or "").upper()
        kind = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(pos, "trim")
        if node.args.get("expression") is None:
            return Call(T.STRING, kind, (s,))
        chars = _const_string(_string(b(node.args["expression"]), kind), f"the characters of {kind}")
        return Call(T.STRING, f"{kind}_chars", (s, Literal(T.STRING, chars)))
    if isinstance(node, exp.Replace):
        return Call(T.STRING, "replace", (_string(b(node.this), "replace"),
                                          _string(b(node.expression), "replace"),
                                          _string(b(node.args["replacement"]), "replace")))
    if isinstance(node, exp.SplitPart):
        return Call(T.STRING, "split_part", (_string(b(node.this), "split_part"),
                                             _string(b(node.args["delimiter"]), "split_part"),
                                             _integer(b(node.args["part_index"]), "split_part")))
    if isinstance(node, exp.StartsWith | exp.Contains):
        op = "starts_with" if isinstance(node, exp.StartsWith) else "contains"
        pat, text = _string(b(node.expression), op), _string(b(node.this), op)
        if TY.is_null_literal(pat):
            return Literal(T.BOOL, None)
        if not isinstance(pat, Literal):  # a pattern per row: on the host, row by row
            return Call(T.BOOL, f"{op}_rows", (text, pat))
        return Call(T.BOOL, op, (text, pat))
    if isinstance(node, exp.RegexpLike):
        pat, _ = _regex_options(b, node, "regexp_matches", "flag")
        return Call(T.BOOL, "regexp_matches", (_string(b(node.this), "regexp_matches"), pat))
    if isinstance(node, exp.RegexpReplace):
        pat, every = _regex_options(b, node, "regexp_replace", "modifiers", allow_global=True)
        return Call(T.STRING, "regexp_replace", (
            _string(b(node.this), "regexp_replace"), pat,
            _string(b(node.args["replacement"]), "regexp_replace"), Literal(T.BOOL, every)))
    if isinstance(node, exp.RegexpExtract):
        g = node.args.get("group")
        pat, _ = _regex_options(b, node, "regexp_extract", "parameters")
        group = _integer(b(g), "regexp_extract") if g is not None else Literal(T.INT64, 0)
        # DuckDB: a constant group in 0..9 (RE2's), checked when the query is bound
        if isinstance(group, Literal) and group.value is not None and not 0 <= group.value <= 9:
            raise SqlError("regexp_extract: group index must be between 0 and 9")
        return Call(T.STRING, "regexp_extract", (_string(b(node.this), "regexp_extract"), pat, group))
    if isinstance(node, exp.Pad):
        op = "lpad" if node.args.get("is_left") else "rpad"
        fill = node.args.get("fill_pattern")
        return Call(T.STRING, op, (_string(b(node.this), op), _integer(b(node.expression), op),
                                   _string(b(fill), op) if fill is not None else Literal(T.STRING, " ")))
    if isinstance(node, exp.Left | exp.Right):
        op = type(node).__name__.lower()
        return Call(T.STRING, op, (_string(b(node.this), op), _integer(b(node.expression), op)))
    if isinstance(node, exp.Reverse):
        return Call(T.STRING, "reverse", (_string(b(node.this), "reverse"),))
    if isinstance(node, exp.Repeat):
        return Call(T.STRING, "repeat", (_string(b(node.this), "repeat"), _integer(b(node.args["times"]), "repeat")))
    if isinstance(node, exp.StrPosition):
        return Call(T.INT64, "strpos", (_string(b(node.this), "strpos"), _string(b(node.args["substr"]), "strpos")))
    if isinstance(node, exp.MD5):
        return Call(T.STRING, "md5", (_string(b(node.this), "md5"),))
    if isinstance(node, exp.Format):
        return Call(T.STRING, "format", (_string(b(node.this), "format"), *[b(a) for a in node.expressions]))
    if isinstance(node, exp.ConcatWs):
        args = [b(a) for a in node.expressions]
        return Call(T.STRING, "concat_ws", tuple(TY.cast_to(a, T.STRING) for a in args))
    if isinstance(node, exp.Log):
        if node.args.get("expression") is None:
            return Call(T.FLOAT64, "log10", (_number(b(node.this), "log"),))
        return Call(T.FLOAT64, "log", (_number(b(node.this), "log"), _number(b(node.expression), "log")))
    if isinstance(node, exp.Sign):
        x = b(node.this)
        if TY.is_null_literal(x):
            return Literal(T.INT32, None)
        if not x.dtype.is_numeric:
            raise SqlError(f"sign needs a number, got {x.dtype}")
        return Call(T.INT32, "sign", (x,))
    if isinstance(node, exp.Rand):
        return Call(T.FLOAT64, "random", ())
    if isinstance(node, exp.Pi):
        return Literal(T.FLOAT64, 3.141592653589793)
    if isinstance(node, exp.Typeof):
        return Literal(T.STRING, _type_name(b(node.this)))
    if isinstance(node, exp.TryCast):
        to = node.to
        params = [int(p.this.this) for p in to.expressions if isinstance(p.this, exp.Literal)]
        t = TY.sql_type(to.this.value, params)
        x = b(node.this)
        if to.this.value.upper() in TY.NARROW_TYPES:
            return TY.narrow_cast(x, to.this.value, t, soft=True)
        if isinstance(x, Literal):
            try:
                folded = TY.cast_to(x, t)
            except HetdbError:
                return Literal(t, None)
            if isinstance(folded, Literal):
                return folded  # a cast that cannot be folded is left to run time, as try_cast below
        return x if x.dtype == t else Call(t, "try_cast", (x,))
    if isinstance(node, exp.Extract):
        return date_part(node.this.name, b(node.expression), "EXTRACT")
    if type(node) in _PART_NODES:
        return date_part(_PART_NODES[type(node)], b(node.this), type(node).__name__.lower())
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        from hetdb.exec.functions_datetime import TRUNC_PARTS

        unit = node.args.get("unit")
        p = _part(unit.name if isinstance(unit, exp.Var) else b(unit), TRUNC_PARTS, "date_trunc")
        x = _temporal(b(node.this), "date_trunc")
        return Call(x.dtype if x.dtype.tz else T.TIMESTAMP, "date_trunc", (Literal(T.STRING, p), x, *_zone_of(x)))
    if isinstance(node, exp.DateDiff):
        return _diff("date_diff", node.args["unit"].name, b(node.expression), b(node.this))
    if isinstance(node, exp.TimeToStr):
        x = _temporal(b(node.this), "strftime")
        return Call(T.STRING, "strftime", (x, _string(b(node.args["format"]), "strftime"), *_zone_of(x)))
    if isinstance(node, exp.StrToTime):
        return _strptime(b(node.this), b(node.args["format"]), "strptime")
    if isinstance(node, exp.DateFromParts):
        return Call(T.DATE, "make_date", tuple(_integer(b(node.args[k]), "make_date")
                                                for k in ("year", "month", "day")))
    if isinstance(node, exp.TimestampFromParts):
        ints = tuple(_integer(b(node.args[k]), "make_timestamp") for k in ("year", "month", "day", "hour", "min"))
        return Call(T.TIMESTAMP, "make_timestamp", ints + (TY.cast_to(_number(b(node.args["sec"]), "make_timestamp"), T.FLOAT64),))
    if isinstance(node, exp.UnixToTime):
        scale = node.args.get("scale")
        x = b(node.this)
        if scale is None:
            return Call(T.TIMESTAMPTZ, "to_timestamp", (_number(x, "to_timestamp"),))
        if str(scale.name) == "6" and x.dtype.kind not in ("date", "timestamp"):  # make_timestamp(µs)
            return Call(T.TIMESTAMP, "epoch_us_to_timestamp", (_integer(x, "make_timestamp"),))
        if str(scale.name) != "3":
            raise UnsupportedError(f"{node.sql(dialect='duckdb')}")
        if x.dtype.kind in ("date", "timestamp"):  # epoch_ms(timestamp): milliseconds since the epoch
            return MORE.epoch_units(x, 1000, "epoch_ms")
        return Call(T.TIMESTAMP, "epoch_ms", (_integer(x, "epoch_ms"),))
    if isinstance(node, exp.TimeToUnix):
        x = b(node.this)
        return IV.part("epoch", x) if IV.is_interval(x) else Call(T.FLOAT64, "epoch", (_temporal(x, "epoch"),))
    if isinstance(node, exp.ToDays):
        return IV.to_unit("to_days", b(node.this))
    if isinstance(node, exp.CurrentDate):
        return TY.cast_to(Literal(T.TIMESTAMPTZ, _now()), T.DATE)  # today in the session's zone
    if isinstance(node, exp.CurrentTimestamp):
        return Literal(T.TIMESTAMPTZ, _now())
    if isinstance(node, exp.AtTimeZone):
        return at_time_zone(b(node.this), b(node.args["zone"]))
    if isinstance(node, exp.DateAdd):
        iv = node.expression
        if not is_interval(iv):
            raise UnsupportedError("date_add with a second argument that is not an INTERVAL")
        return interval_arith(b(node.this), iv, 1, b)
    raise UnsupportedError(f"function {node.sql(dialect='duckdb')!r}")


def _number(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.FLOAT64, None)
    if not e.dtype.is_numeric:
        raise SqlError(f"{what} needs a number, got {e.dtype}")
    return TY.cast_to(e, T.FLOAT64)


def _diff(op: str, part: str, a: Expr, b: Expr) -> Expr:
    from hetdb.exec.functions_datetime import DIFF_PARTS

    name = _part_name(part)  # DuckDB counts dow/isodow/doy in days, yearweek in weeks, epoch in seconds
    p = _part({"dow": "day", "isodow": "day", "doy": "day", "yearweek": "week", "epoch": "second"}.get(name, name),
              DIFF_PARTS, op)
    a, b = _temporal(a, op), _temporal(b, op)
    if a.dtype.tz or b.dtype.tz:
        a, b = TY.cast_to(a, T.TIMESTAMPTZ), TY.cast_to(b, T.TIMESTAMPTZ)
    return Call(T.INT64, op, (Literal(T.STRING, p), a, b, *_zone_of(a, b)))


def _strptime(text: Expr, fmt: Expr, name: str) -> Expr:
    """strptime / try_strptime (NULL where the text does not parse); a format with %z/%Z gives a
    TIMESTAMPTZ."""
    fmt = _string(fmt, name)
    zoned = isinstance(fmt, Literal) and isinstance(fmt.value, str) and ("%z" in fmt.value or "%Z" in fmt.value)
    op = name + ("_tz" if zoned else "")
    return Call(T.TIMESTAMPTZ if zoned else T.TIMESTAMP, op, (_string(text, name), fmt))


def _anonymous(name: str, args: list[Expr]) -> Expr:
    if name == "try_strptime" and len(args) == 2:
        return _strptime(args[0], args[1], "try_strptime")
    if name == "printf":
        if not args:
            raise SqlError("printf needs a format string")
        return Call(T.STRING, "printf", (_string(args[0], "printf"), *args[1:]))
    if name in ("date_part", "datepart"):
        if len(args) != 2:
            raise SqlError("date_part needs (part, value)")
        return date_part(_const_string(args[0], "the part of date_part"), args[1], "date_part")
    if name in ("date_sub", "datesub"):
        if len(args) != 3:
            raise SqlError("date_sub needs (part, start, end)")
        return _diff("date_sub", _const_string(args[0], "the part of date_sub"), args[1], args[2])
    if name in ("now", "get_current_timestamp", "transaction_timestamp"):
        return Literal(T.TIMESTAMPTZ, _now())
    if name == "timezone":
        if len(args) != 2:
            raise SqlError("timezone needs (zone, timestamp)")
        return at_time_zone(args[1], args[0])
    if name == "log2":
        return Call(T.FLOAT64, "log2", (_number(args[0], "log2"),))
    if name in ("ltrim", "rtrim"):
        s = _string(args[0], name)
        if len(args) == 1:
            return Call(T.STRING, name, (s,))
        return Call(T.STRING, f"{name}_chars", (s, Literal(T.STRING, _const_string(args[1], f"the characters of {name}"))))
    if name in IV.TO_UNITS and len(args) == 1:
        return IV.to_unit(name, args[0])
    if name == "age" and len(args) in (1, 2):
        return IV.age(args[0], args[1] if len(args) == 2 else None)
    raise UnsupportedError(f"function {name}() with {len(args)} arguments" if name in ANONYMOUS
                           else f"function {name}()")
