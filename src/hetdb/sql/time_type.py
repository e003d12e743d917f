"""TIME (a time of day, microseconds since midnight in an int64, as DuckDB's): ``TIME '12:34:56'``,
casts from and to VARCHAR and from TIMESTAMP, EXTRACT/date_part/hour()/minute()/second() of hour,
minute, second, millisecond, microsecond and epoch, ``make_time(h, m, s)``, DATE + TIME (a TIMESTAMP),
TIME ± INTERVAL (wrapping around midnight; months and days ignored, as DuckDB), comparisons, ORDER BY,
min/max, GROUP BY. Exec: exec/functions_time.py. Plans with TIME values run on the CPU.
"""

from __future__ import annotations

import re

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import typing as TY

US_PER_DAY = 86_400_000_000
PARTS = ("hour", "minute", "second", "millisecond", "microsecond", "epoch")
_TEXT = re.compile(r"\s*(?:\d{4,}-\d{1,2}-\d{1,2}[ T])?(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6})\d*)?)?\s*")


def parse_time(text: str) -> int | None:
    """Microseconds since midnight of DuckDB's TIME text (``[YYYY-MM-DD ]HH:MM[:SS[.ffffff]]``;
    24:00:00 is the end of the day); None when it is not one."""
    m = _TEXT.fullmatch(text)
    if not m:
        return None
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    frac = int((m.group(4) or "").ljust(6, "0") or 0)
    if mi > 59 or s > 59 or h > 24 or (h == 24 and (mi or s or frac)):
        return None
    return ((h * 60 + mi) * 60 + s) * 1_000_000 + frac


def format_time(us: int) -> str:
    """DuckDB's text of a TIME: fractional seconds without trailing zeros, none when zero."""
    s, frac = divmod(us, 1_000_000)
    h, rest = divmod(s, 3600)
    text = f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return text + (f".{frac:06d}".rstrip("0") if frac else "")


def cast_literal(lit: Literal, to: T.DataType) -> Literal:
    """A constant cast to or from TIME, folded."""
    v, fr = lit.value, lit.dtype
    if v is None or fr == to:
        return Literal(to, v)
    if to.kind == "time":
        if fr.kind == "string":
            us = parse_time(v)
            if us is None:
                raise SqlError(f"Conversion Error: invalid TIME '{v}' (expected format [YYYY-MM-DD ]HH:MM:SS[.MS])")
            return Literal(to, us)
        if fr.kind == "timestamp" and not fr.tz:
            return Literal(to, v % US_PER_DAY)
    elif fr.kind == "time" and to.kind == "string":
        return Literal(to, format_time(v))
    raise SqlError(f"Conversion Error: Unimplemented type for cast ({fr} -> {to})")


def cast(x: Expr, to: T.DataType) -> Expr:
    """CAST to or from TIME: VARCHAR <-> TIME, TIMESTAMP -> TIME."""
    if TY.is_null_literal(x) or x.dtype == to:
        return Literal(to, None) if TY.is_null_literal(x) else x
    if isinstance(x, Literal):
        return cast_literal(x, to)
    if to.kind == "time" and x.dtype.kind == "string":
        return Call(T.TIME, "time_from_text", (x,))
    if to.kind == "time" and x.dtype.kind == "timestamp" and not x.dtype.tz:
        return Call(T.TIME, "time_of_timestamp", (x,))
    if x.dtype.kind == "time" and to.kind == "string":
        return Call(T.STRING, "time_to_text", (x,))
    raise SqlError(f"Conversion Error: Unimplemented type for cast ({x.dtype} -> {to})")


def part(p: str, x: Expr, what: str) -> Expr:
    """EXTRACT(p FROM time): BIGINT parts (seconds with milli/microseconds counted in), epoch DOUBLE."""
    if p not in PARTS:
        raise SqlError(f'{what}: "time" units "{p.upper()}" not recognized (TIME has '
                       f"{', '.join(PARTS)})")
    return Call(T.FLOAT64 if p == "epoch" else T.INT64, "time_part", (Literal(T.STRING, p), x))


def make_time(h: Expr, m: Expr, s: Expr) -> Expr:
    for e, what in ((h, "hour"), (m, "minute")):
        if not (TY.is_null_literal(e) or (e.dtype.is_integer and e.dtype.kind != "int128")):
            raise SqlError(f"make_time needs an integer {what}, got {e.dtype}")
    if not (TY.is_null_literal(s) or s.dtype.is_numeric):
        raise SqlError(f"make_time needs a number of seconds, got {s.dtype}")
    return Call(T.TIME, "make_time", (TY.cast_to(h, T.INT64), TY.cast_to(m, T.INT64), TY.cast_to(s, T.FLOAT64)))


def date_plus_time(d: Expr, t: Expr) -> Expr:
    """DATE + TIME: the TIMESTAMP of that day at that time."""
    return Call(T.TIMESTAMP, "date_plus_time", (TY.cast_to(d, T.DATE), TY.cast_to(t, T.TIME)))


def plus_interval(t: Expr, iv: Expr, sign: int) -> Expr:
    """TIME ± INTERVAL: the interval's microseconds move the time around the clock (DuckDB ignores
    its months and days)."""
    if iv.dtype.kind != "interval":
        raise UnsupportedError(f"TIME {'+' if sign > 0 else '-'} {iv.dtype} (TIME ± INTERVAL and DATE + TIME "
                               "are supported)")
    return Call(T.TIME, "time_plus_interval", (t, iv, Literal(T.INT64, sign)))
