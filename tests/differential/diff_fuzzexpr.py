"""More expression and literal forms for the fuzz generator (``diff_fuzzgen.FuzzGen``).

- literals at the edges: NaN, ±inf and -0.0 as DOUBLE constants, BIGINT and INTEGER limits, DECIMALs
  of 18 digits and DECIMAL(38) zeros, the first and last DATE, TIMESTAMPs around 1970 and near the
  nanosecond limit;
- casts between the numeric types, to DECIMAL(38,s) and to text (DuckDB's number and timestamp
  formats), of doubles that are inf or NaN to integers (both engines must raise), TRY_CAST of text;
- DECIMAL(38) arithmetic (a DECIMAL(38,4) times an 18-digit DECIMAL: 36 digits), round();
- timestamps and dates: date_trunc, + INTERVAL, DATE + days, casts between them, EXTRACT (epoch,
  hour, day of week), datediff;
- text functions with NULL arguments: concat() skips them, concat_ws() skips them (a row of NULL parts
  is ''), || is NULL;
- (``diff_fuzzfuncs``) issue 14's string, regular-expression, date/time and math functions.

Every draw that decides the shape uses ``gen.r`` and every constant ``gen.v`` (see diff_fuzzgen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from diff_fuzzgen import BIG, DATE, DBL, DEC, INT, STR, TSTAMP, E

if TYPE_CHECKING:
    from diff_fuzzgen import Col, FuzzGen, Scope

EDGE_LITERALS: dict[str, list[str]] = {
    DBL: ["'nan'::DOUBLE", "'inf'::DOUBLE", "'-inf'::DOUBLE", "CAST('-0.0' AS DOUBLE)", "0.0", "1e308"],
    BIG: ["9223372036854775807", "(-9223372036854775808)", "9223372036854775806", "(-9223372036854775807)",
          "4611686018427387904"],
    INT: ["2147483647", "(-2147483648)", "0", "(-1)"],
    DEC: ["99999999999999.9999", "(-99999999999999.9999)", "0.0001", "CAST(0 AS DECIMAL(38,10))",
          "(-0.0)"],
    DATE: ["DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1970-01-01'", "DATE '1969-12-31'"],
    TSTAMP: ["TIMESTAMP '1969-12-31 23:59:59.999999'", "TIMESTAMP '1970-01-01 00:00:00'",
             "TIMESTAMP '2262-04-11 23:47:16'", "TIMESTAMP '1900-01-01 00:00:00.000001'",
             "TIMESTAMP '2000-02-29 12:00:00.25'"],
    STR: ["''", "'%'", "'é'", "'a_b'", "' '"],
}


def edge_literal(gen: FuzzGen, kind: str) -> str | None:
    """A constant of ``kind`` at the edge of its type (None: no such constants for it). Drawn from the
    shape stream: the constants are spelled differently ('nan'::DOUBLE, 1e308, CAST(...)), and the
    cases of a family must share their shape."""
    values = EDGE_LITERALS.get(kind)
    return gen.pick(values) if values else None


# (target type SQL, result kind) of casts from numbers
_NUMERIC_CASTS = [("BIGINT", BIG), ("INTEGER", INT), ("DOUBLE", DBL), ("DECIMAL(18,2)", DEC),
                  ("DECIMAL(38,6)", DEC), ("VARCHAR", STR)]


def more_expr(gen: FuzzGen, scope: Scope, base: E, table: str, col: Col, depth: int) -> E | None:
    """One of the forms above over ``base`` (a column reference of ``col``), or None."""
    k = base.kind
    if gen.chance(0.5):  # issue 14's functions (diff_fuzzfuncs)
        from diff_fuzzfuncs import surface_expr

        e = surface_expr(gen, scope, base, depth)
        if e is not None:
            return e
    form = gen.r.randrange(4)
    if k in (INT, BIG, DEC, DBL):
        if form == 0:
            target, kind = gen.pick(_NUMERIC_CASTS)
            if k == DBL and kind in (BIG, INT) and not gen.chance(0.3):
                target, kind = "DOUBLE", DBL  # inf and NaN raise: keep most of these cases answering
            tags = base.tags | ({"wide"} if target == "DECIMAL(38,6)" else set())
            return E(f"CAST({base.sql} AS {target})", kind, frozenset(tags))
        if form == 1 and k == DEC:
            other = gen.expr(scope, [DEC], depth + 1)
            rhs = other.sql if other is not None else base.sql
            return E(f"(CAST({base.sql} AS DECIMAL(38,4)) * {rhs})", DEC, base.tags | {"wide"})
        if form in (1, 2) and k in (DEC, DBL):
            return E(f"round({base.sql}, {gen.value([0, 1, 2, -1])})", k, base.tags)
        if form == 3 and k in (INT, DEC):
            lit = edge_literal(gen, k)
            return E(f"greatest({base.sql}, {lit})", k, base.tags) if gen.chance(0.5) \
                else E(f"least({base.sql}, {gen.lit(table, col)})", k, base.tags)
        return None
    if k == TSTAMP:
        if form == 0:
            return E(f"date_trunc('{gen.pick(['year', 'month', 'day', 'hour'])}', {base.sql})", TSTAMP, base.tags)
        if form == 1:
            unit = gen.pick(["DAY", "HOUR", "MONTH", "MINUTE"])
            return E(f"({base.sql} {gen.pick(['+', '-'])} INTERVAL {gen.value([1, 2, 40])} {unit})", TSTAMP,
                     base.tags)
        if form == 2:
            return E(f"CAST({base.sql} AS DATE)", DATE, base.tags)
        return gen.pick([E(f"EXTRACT(hour FROM {base.sql})", INT, base.tags),
                         E(f"EXTRACT(dow FROM {base.sql})", INT, base.tags),
                         E(f"CAST({base.sql} AS VARCHAR)", STR, base.tags)])
    if k == DATE:
        if form == 0:
            return E(f"({base.sql} + {gen.value([1, 30, -400])})", DATE, base.tags)
        if form == 1:
            return E(f"CAST({base.sql} AS TIMESTAMP)", TSTAMP, base.tags)
        if form == 2:
            other = gen.expr(scope, [TSTAMP, DATE], depth + 1)
            rhs = other.sql if other is not None else base.sql
            return E(f"datediff('{gen.pick(['day', 'month', 'year'])}', {base.sql}, {rhs})", BIG, base.tags)
        return E(f"CAST({base.sql} AS VARCHAR)", STR, base.tags)
    if k == STR:
        other = gen.expr(scope, [STR], depth + 1)
        rhs = other.sql if other is not None else "'x'"
        if form == 0:
            return E(f"concat({base.sql}, NULL, {rhs})", STR, base.tags)
        if form == 1:
            return E(f"concat_ws({gen.pick([repr('-'), repr(''), rhs])}, {base.sql}, NULL, {rhs})", STR, base.tags)
        if form == 2:
            return E(f"({base.sql} || NULL)", STR, base.tags)
        return E(f"TRY_CAST({base.sql} AS INTEGER)", INT, base.tags)
    return None
