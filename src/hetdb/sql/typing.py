"""DuckDB's type rules, as hetdb applies them at bind time.

Checked against DuckDB with ``typeof()``: integer arithmetic keeps the widest integer (int32 + int32 is
int32), ``/`` is DOUBLE, decimal + decimal -> DECIMAL(max integer digits + max scale + 1, max scale),
decimal * decimal -> DECIMAL(p1 + p2, s1 + s2) capped at 18 digits while both inputs have at most 18
(as DuckDB: the product is computed in 64 bits and overflow raises), other precisions capped at 38
(DECIMAL(18,2) + DECIMAL(18,2) is DECIMAL(19,2)); BIGINT takes 19 decimal digits, HUGEINT 38; an
integer literal is INTEGER, BIGINT or HUGEINT by its value (10, 19 or 38 digits);
anything with a DOUBLE is DOUBLE; a remainder of decimals takes no extra integer digit.
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal, InvalidOperation

from hetdb import types as T
from hetdb.errors import OutOfRangeError, SqlError, UnsupportedError
from hetdb.exec.wide import bounds, duck_name, gfmt
from hetdb.plan.expr import Cast, ColumnRef, Expr, Literal
from hetdb.types import DataType

_EPOCH = _dt.date(1970, 1, 1)
MAXP = T.MAX_DECIMAL_PRECISION


def is_null_literal(e: Expr) -> bool:
    return isinstance(e, Literal) and e.value is None


def null_as_string(e: Expr) -> Expr:
    """A NULL (literal, or of the NULL type) where a string is expected: a NULL VARCHAR (DuckDB binds
    upper(NULL), NULL LIKE 'a%' ... as VARCHAR); any other expression unchanged."""
    if is_null_literal(e):
        return Literal(T.STRING, None)
    return cast_to(e, T.STRING) if e.dtype == T.NULL else e


def int_literal_type(v: int) -> DataType:
    if -(2**31) <= v < 2**31:
        return T.INT32
    return T.INT64 if -(2**63) <= v < 2**63 else T.INT128


def as_decimal_type(e: Expr) -> DataType:
    """The decimal type an integer operand takes inside decimal arithmetic (literals: minimal digits)."""
    t = e.dtype
    if t.kind == "decimal":
        return t
    if isinstance(e, Literal) and isinstance(e.value, int) and t.is_integer:
        # DuckDB 2.0.1 types an integer literal INTEGER, BIGINT or HUGEINT by its value, and that type's
        # digits are what it brings to a DECIMAL operation: DECIMAL(5,2) * 3 is DECIMAL(15,2),
        # DECIMAL(5,2) + 3 and coalesce(DECIMAL(5,2), 3) are DECIMAL(13,2)/(12,2) (typeof(), checked)
        v = e.value
        return T.decimal(10, 0) if -2**31 <= v < 2**31 else T.wide_decimal(19, 0) if -2**63 <= v < 2**63 \
            else T.wide_decimal(38, 0)
    return {"int32": T.decimal(10, 0), "int64": T.wide_decimal(19, 0),
            "uint64": T.wide_decimal(20, 0)}.get(t.kind, T.wide_decimal(38, 0))


def _dec(p: int, s: int, cap: int = T.MAX_WIDE_PRECISION) -> DataType:
    if s > cap:
        raise UnsupportedError(f"a decimal result with scale {s} (> {cap}) is not supported; "
                               "CAST an operand to DOUBLE")
    return T.wide_decimal(max(min(p, cap), s, 1), s)


def common_type(a: Expr, b: Expr, what: str = "") -> DataType:
    """The type both sides of a comparison / CASE / COALESCE are cast to."""
    ta, tb = a.dtype, b.dtype
    if is_null_literal(a) or ta == T.NULL:  # a NULL adapts to the other side (NULL with NULL stays NULL)
        return tb
    if is_null_literal(b) or tb == T.NULL:
        return ta
    if ta == tb:
        return ta
    if ta.kind == "list" or tb.kind == "list":  # element by element (sql/list_funcs.py)
        from hetdb.sql.list_funcs import common_type as list_common_type

        return list_common_type([ta, tb], what or "a comparison")
    if ta.is_numeric and tb.is_numeric:
        if "float64" in (ta.kind, tb.kind):
            return T.FLOAT64
        if _stays_ubigint(a, b):
            return T.UBIGINT
        if ta.is_integer and tb.is_integer:
            return T.INT128 if "int128" in (ta.kind, tb.kind) else T.INT64
        da, db = as_decimal_type(a), as_decimal_type(b)
        s = max(da.scale, db.scale)
        return _dec(max(da.precision - da.scale, db.precision - db.scale) + s, s)
    kinds = {ta.kind, tb.kind}
    if kinds <= {"date", "timestamp"}:
        return T.TIMESTAMPTZ if ta.tz or tb.tz else T.TIMESTAMP
    # A string literal next to a date/number is read as that type (DuckDB does the same for literals).
    if ta.kind == "string" and isinstance(a, Literal):
        return tb
    if tb.kind == "string" and isinstance(b, Literal):
        return ta
    raise SqlError(f"cannot compare or combine {ta} and {tb}{' in ' + what if what else ''}; "
                   "add an explicit CAST")


def common_of(exprs: list[Expr], what: str) -> DataType:
    """Common type of several expressions (CASE branches, COALESCE args, IN items); NULLs adapt."""
    rep: Expr | None = None
    for e in exprs:
        if e.dtype == T.NULL:
            continue
        if is_null_literal(e):  # a typed NULL (CAST(NULL AS DECIMAL(5,2))) brings its type, as in DuckDB
            e = ColumnRef(e.dtype, "")
        if rep is None:
            rep = e
            continue
        t = common_type(rep, e, what)
        if rep.dtype != t:
            # A typed stand-in: later operands combine with the type, not with a literal's value.
            rep = e if e.dtype == t and not isinstance(e, Literal) else ColumnRef(t, "")
    return rep.dtype if rep is not None else T.NULL


def _stays_ubigint(a: Expr, b: Expr) -> bool:
    """A UBIGINT (hash()) with another UBIGINT or a non-negative integer constant stays UBIGINT."""
    def fits(e: Expr) -> bool:
        return e.dtype == T.UBIGINT or (isinstance(e, Literal) and e.dtype.is_integer
                                        and isinstance(e.value, int) and 0 <= e.value < 2**64)
    return T.UBIGINT in (a.dtype, b.dtype) and fits(a) and fits(b)


def arith_type(op: str, a: Expr, b: Expr) -> tuple[DataType, DataType, DataType]:
    """(type to cast a to, type to cast b to, result type) for add/sub/mul/div/intdiv/mod."""
    ta, tb = a.dtype, b.dtype
    # a bare NULL takes the other side's type; a typed one (CAST(NULL AS INTEGER)) keeps its own
    bare_a, bare_b = ta == T.NULL, tb == T.NULL
    if bare_a:
        ta = tb
    if bare_b:
        tb = ta
    if not (ta.is_numeric and tb.is_numeric):
        raise SqlError(f"operator {op} needs numbers, got {ta} and {tb}")
    if op == "div":
        return T.FLOAT64, T.FLOAT64, T.FLOAT64
    if "float64" in (ta.kind, tb.kind):
        return T.FLOAT64, T.FLOAT64, T.FLOAT64
    if _stays_ubigint(a, b):  # DuckDB: hash(x) % 10, hash(x) + 1 are UBIGINT (errors past its range)
        return T.UBIGINT, T.UBIGINT, T.UBIGINT
    if ta.is_integer and tb.is_integer:
        kinds = (ta.kind, tb.kind)
        w = T.INT128 if "int128" in kinds else T.INT64 if "int64" in kinds else T.INT32
        return w, w, w
    if op == "intdiv":  # DuckDB: // of DECIMALs divides their DOUBLEs (7.5 // 2 is 3.75)
        return T.FLOAT64, T.FLOAT64, T.FLOAT64
    da = as_decimal_type(a) if not bare_a else as_decimal_type(b)
    db = as_decimal_type(b) if not bare_b else da
    if op == "mul":
        narrow = max(da.precision, db.precision) <= MAXP
        return da, db, _dec(da.precision + db.precision, da.scale + db.scale, MAXP if narrow else T.MAX_WIDE_PRECISION)
    s = max(da.scale, db.scale)
    # DuckDB: a remainder is no wider than its wider operand (DECIMAL(5,2) % DECIMAL(10,0) is
    # DECIMAL(12,2)); a sum or difference takes one more integer digit
    res = _dec(max(da.precision - da.scale, db.precision - db.scale) + s + (op != "mod"), s)
    return res, res, res


# ---- literals and casts ---------------------------------------------------------------------------
def parse_date(text: str) -> int:
    try:
        return (_dt.date.fromisoformat(text.strip()) - _EPOCH).days
    except ValueError:
        raise SqlError(f"invalid date literal '{text}': write DATE 'YYYY-MM-DD'") from None


def days_to_date(days: int) -> _dt.date:
    return _EPOCH + _dt.timedelta(days=days)


def add_months(days: int, months: int) -> int:
    """DuckDB's date + INTERVAL n MONTH: same day of month, clamped to the month's last day."""
    d = days_to_date(days)
    m = d.year * 12 + (d.month - 1) + months
    y, mo = divmod(m, 12)
    mo += 1
    nxt = _dt.date(y + (mo == 12), mo % 12 + 1, 1)
    last = (nxt - _dt.timedelta(days=1)).day
    return (_dt.date(y, mo, min(d.day, last)) - _EPOCH).days


def number_literal(text: str) -> Literal:
    """A numeric literal as DuckDB types it: INTEGER/BIGINT, DECIMAL(p,s) for 1.50, DOUBLE for 1e3."""
    try:
        return _number_literal(text.strip().replace("_", ""))
    except (ValueError, InvalidOperation):
        raise SqlError(f"invalid number '{text}'") from None


def _number_literal(t: str) -> Literal:
    if "e" in t.lower():
        return Literal(T.FLOAT64, float(t))
    if "." not in t:
        v = int(t)
        if not T.INT128_MIN <= v <= T.INT128_MAX:
            return Literal(T.FLOAT64, float(v))
        return Literal(int_literal_type(v), v)
    intpart, frac = t.split(".", 1)
    intdigits = len(intpart.lstrip("+-")) or 1
    scale = len(frac)
    if intdigits + scale > MAXP:
        return Literal(T.FLOAT64, float(t))
    return Literal(T.decimal(max(intdigits + scale, 1), scale), int(Decimal(t).scaleb(scale)))


def cast_literal(lit: Literal, to: DataType) -> Literal:
    """Fold CAST(literal AS to) to a literal of ``to`` (physical value)."""
    v, fr = lit.value, lit.dtype
    if v is None or fr == to:
        return Literal(to, v)
    if fr.tz or to.tz:
        return _cast_tz_literal(lit, to)
    if "time" in (fr.kind, to.kind):
        from hetdb.sql.time_type import cast_literal as time_literal

        return time_literal(lit, to)
    try:
        if to.kind == "string":
            return Literal(to, str(_py_value(lit)))
        if to.kind == "date":
            if fr.kind == "string":
                return Literal(to, parse_date(v))
            if fr.kind == "timestamp":
                return Literal(to, v // 86_400_000_000)
        if to.kind == "timestamp":
            if fr.kind == "date":
                return Literal(to, v * 86_400_000_000)
            if fr.kind == "string":
                # DuckDB reads an offset in TIMESTAMP text and drops it (the wall time stays)
                ts = _dt.datetime.fromisoformat(v.strip()).replace(tzinfo=None)
                return Literal(to, (ts - _dt.datetime(1970, 1, 1)) // _dt.timedelta(microseconds=1))
        if to.kind == "bool":
            if fr.kind == "string":
                s = v.strip().lower()
                if s in ("true", "t", "1", "yes"):
                    return Literal(to, True)
                if s in ("false", "f", "0", "no"):
                    return Literal(to, False)
                raise ValueError(v)
            return Literal(to, bool(v))
        num = Decimal(v) if fr.kind == "string" else _exact(lit)
        if to.is_integer:
            if fr.kind == "float64" and not math.isfinite(v):
                raise OutOfRangeError(f"Conversion Error: Type DOUBLE with value {v} can't be cast because "
                                      f"the value is out of range for the destination type {duck_name(to)}")
            # DuckDB rounds half away from zero when casting decimals to integers, half to even from DOUBLE
            rounding = "ROUND_HALF_EVEN" if fr.kind == "float64" else "ROUND_HALF_UP"
            r = int(num.to_integral_value(rounding=rounding))
            lo, hi = bounds(to)
            if not lo <= r <= hi:
                src = "DOUBLE" if fr.kind == "float64" else duck_name(fr) if fr.is_numeric else fr.sql_name()
                raise OutOfRangeError(f"Conversion Error: Type {src} with value {gfmt(v) if fr.kind == 'float64' else num} "
                                      f"can't be cast because the value is out of range for the destination "
                                      f"type {duck_name(to)}")
            return Literal(to, r)
        if to.kind == "float64":
            return Literal(to, float(num))
        if to.kind == "decimal":
            r = int(num.scaleb(to.scale).to_integral_value(rounding="ROUND_HALF_UP"))
            if abs(r) >= 10**to.precision:
                raise OutOfRangeError(f"Conversion Error: Could not cast value {num} to {to}")
            return Literal(to, r)
    except (ValueError, InvalidOperation):
        raise SqlError(f"cannot cast {lit.value!r} to {to}") from None
    raise SqlError(f"cannot cast {fr} to {to}")


def _cast_tz_literal(lit: Literal, to: DataType) -> Literal:
    """Casts to and from TIMESTAMPTZ, in the session's time zone."""
    import numpy as np

    from hetdb.exec import timezones as Z
    from hetdb.sql.session import time_zone

    v, fr, zone = lit.value, lit.dtype, time_zone()
    if fr.kind == "string":
        return Literal(to, Z.parse_tz(v, zone))
    if to.kind == "string":
        return Literal(to, Z.format_tz(v, zone))
    if fr.kind in ("date", "timestamp") and to.kind in ("date", "timestamp"):
        us = v * 86_400_000_000 if fr.kind == "date" else v
        arr = np.array([us], np.int64)
        out = int((Z.to_local(np, arr, zone) if fr.tz else Z.to_utc(np, arr, zone))[0])
        return Literal(to, out // 86_400_000_000 if to.kind == "date" else out)
    raise SqlError(f"cannot cast {fr} to {to}")


def _exact(lit: Literal) -> Decimal:
    if lit.dtype.kind == "decimal":
        return Decimal(lit.value).scaleb(-lit.dtype.scale)
    if lit.dtype.kind == "float64":
        return Decimal(repr(lit.value))
    return Decimal(int(lit.value))


def _py_value(lit: Literal) -> object:
    k = lit.dtype.kind
    if k == "decimal":
        return _exact(lit)
    if k == "date":
        return days_to_date(lit.value).isoformat()
    if k == "timestamp":
        # DuckDB's text: fractional seconds without trailing zeros, none when zero
        ts = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=lit.value)
        text = ts.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{ts.microsecond:06d}".rstrip("0") if ts.microsecond else "")
    if k == "float64":
        return repr(lit.value)
    if k == "bool":
        return "true" if lit.value else "false"
    return lit.value


def cast_to(e: Expr, to: DataType) -> Expr:
    """``e`` as type ``to``: unchanged when it already is, folded for literals, else a Cast node."""
    if e.dtype == to and not is_null_literal(e):
        return e
    if to.kind == "list" and (e.dtype.kind == "list" or is_null_literal(e)):
        from hetdb.sql.list_funcs import cast_list

        return cast_list(e, to)
    if (e.dtype.tz or to.tz) and not is_null_literal(e):
        return tz_cast(e, to)
    if isinstance(e, Literal):
        try:
            return cast_literal(e, to)
        except (SqlError, OutOfRangeError):
            # DuckDB raises only if a row evaluates it (never over zero rows or in an untaken branch)
            return Cast(to, e)
    return Cast(to, e)


def tz_cast(e: Expr, to: DataType, zone: str | None = None) -> Expr:
    """A cast to or from TIMESTAMPTZ: wall times in ``zone`` (default: the session's time zone)."""
    from hetdb.plan.expr import Call
    from hetdb.sql.session import time_zone

    ok = {"date", "timestamp", "string"}
    if e.dtype.kind not in ok or to.kind not in ok:
        raise SqlError(f"cannot cast {e.dtype} to {to}")
    if isinstance(e, Literal) and zone is None:
        try:
            return cast_literal(e, to)
        except SqlError:
            if e.dtype.kind != "string":
                raise
    return Call(to, "tz_cast", (e, Literal(T.STRING, zone or time_zone())))


_CAST_NAMES = {
    "INT": T.INT32, "INTEGER": T.INT32, "SMALLINT": T.INT32, "TINYINT": T.INT32, "INT4": T.INT32,
    "INT1": T.INT32, "INT2": T.INT32, "SHORT": T.INT32, "UTINYINT": T.INT32, "USMALLINT": T.INT32,
    "UINTEGER": T.INT64, "UINT": T.INT64, "FLOAT4": T.FLOAT64,
    "BIGINT": T.INT64, "INT8": T.INT64, "LONG": T.INT64, "HUGEINT": T.INT128, "INT128": T.INT128,
    "DOUBLE": T.FLOAT64, "FLOAT": T.FLOAT64, "REAL": T.FLOAT64, "DOUBLE PRECISION": T.FLOAT64,
    "DATE": T.DATE, "BOOLEAN": T.BOOL, "BOOL": T.BOOL, "TIMESTAMP": T.TIMESTAMP,
    "TIMESTAMPNTZ": T.TIMESTAMP, "DATETIME": T.TIMESTAMP, "TIMESTAMPTZ": T.TIMESTAMPTZ,
    "TIMESTAMP WITH TIME ZONE": T.TIMESTAMPTZ, "TIME": T.TIME,
    "VARCHAR": T.STRING, "TEXT": T.STRING, "STRING": T.STRING, "CHAR": T.STRING, "NVARCHAR": T.STRING,
}


# Types hetdb stores wider, with the range a CAST to them checks (DuckDB's internal name in messages);
# FLOAT has no integer range: its values round to float32 (exec/functions_narrow.py).
NARROW_TYPES = {
    "TINYINT": (-(2**7), 2**7 - 1, "INT8"), "INT1": (-(2**7), 2**7 - 1, "INT8"),
    "SMALLINT": (-(2**15), 2**15 - 1, "INT16"), "INT2": (-(2**15), 2**15 - 1, "INT16"),
    "SHORT": (-(2**15), 2**15 - 1, "INT16"), "UTINYINT": (0, 2**8 - 1, "UINT8"),
    "USMALLINT": (0, 2**16 - 1, "UINT16"), "UINTEGER": (0, 2**32 - 1, "UINT32"), "UINT": (0, 2**32 - 1, "UINT32"),
    "FLOAT": (None, None, "FLOAT"), "REAL": (None, None, "FLOAT"), "FLOAT4": (None, None, "FLOAT"),
}


def narrow_cast(x: Expr, name: str, to: DataType, soft: bool) -> Expr:
    """CAST (``soft``: TRY_CAST) of ``x`` to the narrow SQL type ``name`` that hetdb holds as ``to``:
    DuckDB's range check (a Conversion Error, or NULL for TRY_CAST) before the widening cast."""
    from hetdb.plan.expr import Call

    lo, hi, dst = NARROW_TYPES[name.upper()]
    if x.dtype.kind in ("string", "bool"):
        wide = T.FLOAT64 if lo is None else T.INT64
        x = Call(wide, "try_cast", (x,)) if soft else cast_to(x, wide)
    if not x.dtype.is_numeric or is_null_literal(x):
        return cast_to(x, to)
    checked = Call(T.FLOAT64 if lo is None else x.dtype, "narrow_check", (x, Literal(T.INT64, lo), Literal(T.INT64, hi),
                                            Literal(T.STRING, duck_name(x.dtype)), Literal(T.STRING, dst),
                                            Literal(T.BOOL, soft)))
    return cast_to(checked, to)


def sql_type(name: str, params: list[int]) -> DataType:
    """A SQL type name (as sqlglot spells it) to a hetdb type."""
    n = name.upper()
    if n in ("DECIMAL", "NUMERIC"):
        p = params[0] if params else 18
        s = params[1] if len(params) > 1 else (0 if params else 3)
        return T.decimal(p, s) if p <= MAXP else T.wide_decimal(p, s)
    if n in _CAST_NAMES:
        return _CAST_NAMES[n]
    raise UnsupportedError(f"type {name} is not supported (supported: INTEGER, BIGINT, DOUBLE, "
                           "DECIMAL(p<=18,s), DATE, TIMESTAMP, TIMESTAMPTZ, BOOLEAN, VARCHAR)")
