"""sqlglot expression -> typed hetdb expression IR (hetdb.plan.expr), with DuckDB's type rules.

Aggregates are bound in "aggregate mode" (ctx.agg set): an aggregate call becomes a reference to an
output of the Aggregate node, and a sub-expression equal to a GROUP BY key becomes a reference to that
key. Subqueries are handed to the query binder (ctx.subqueries), which joins them into the plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Protocol

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import HetdbError, SqlError, UnsupportedError
from hetdb.plan.expr import AggCall, Call, Case, ColumnRef, Expr, Field, Literal
from hetdb.sql import bit_aggs as BA
from hetdb.sql import first_last as FL
from hetdb.sql import functions_ext as FX
from hetdb.sql import holistic as HL
from hetdb.sql import holistic_stats as HS
from hetdb.sql import interval as IV
from hetdb.sql import list_funcs as LF
from hetdb.sql import time_type as TM
from hetdb.sql import typing as TY
from hetdb.sql.functions import MATH_NODES, bind_math
from hetdb.sql.names import function_name
from hetdb.sql.scope import Scope

_AGGS = (exp.Sum, exp.Count, exp.Avg, exp.Min, exp.Max)
_ALL_AGGS = _AGGS + HL.HOLISTIC + HL.REWRITTEN + HS.STATS + FL.NODES + tuple(BA.NODES)
_CMP = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}
_ARITH = {exp.Add: "add", exp.Sub: "sub", exp.Mul: "mul", exp.Div: "div", exp.IntDiv: "intdiv",
          exp.Mod: "mod"}


class SubqueryBinder(Protocol):
    def subquery_expr(self, node: exp.Expression, ctx: ExprContext) -> Expr: ...

    def new_cid(self, name: str) -> str: ...


@dataclass
class AggState:
    """GROUP BY keys (bound over the pre-aggregation scope) and the aggregates found so far."""

    pre_scope: Scope
    keys: list[tuple[Expr, Field]]
    aggs: list[tuple[Field, AggCall]] = field(default_factory=list)
    grouping: list[tuple[Field, tuple[int, ...]]] = field(default_factory=list)  # GROUPING() calls
    pre_windows: list = field(default_factory=list)  # (Field, WindowCall) of sql/holistic.py aggregates
    ordered_windows: list = field(default_factory=list)  # (ORDER BY keys, [(Field, WindowCall)]): quantile_disc
    aliases: dict = field(default_factory=dict)  # select-list alias (lower case) -> its expression


@dataclass
class PlanHolder:
    """The plan an expression is evaluated over; subqueries join themselves onto ``node``."""

    node: object


@dataclass
class ExprContext:
    scope: Scope
    binder: SubqueryBinder
    clause: str
    holder: PlanHolder | None = None
    agg: AggState | None = None
    window: object = None  # sql.window.WindowState where window functions are allowed
    unnest: object = None  # sql.unnest.UnnestState where unnest() is allowed (the SELECT list)


def _has(node: exp.Expression, kinds: tuple[type, ...]) -> bool:
    return any(isinstance(n, kinds) for n in node.walk())


def bind_expr(node: exp.Expression, ctx: ExprContext) -> Expr:
    """Bind one sqlglot expression in ``ctx``; raises SqlError/CatalogError/UnsupportedError."""
    try:
        if ctx.agg is not None:
            r = _agg_hook(node, ctx)
            if r is not None:
                return r
        elif isinstance(node, _AGGS):
            raise SqlError(f"aggregate {node.sql(dialect='duckdb')} is not allowed in {ctx.clause}")
        return _bind(node, ctx)
    except HetdbError:
        raise
    except RecursionError:
        raise
    except Exception as e:  # noqa: BLE001 - a binder gap must name the construct, not crash
        raise UnsupportedError(f"hetdb cannot bind {_snippet(node)} in {ctx.clause} "
                               f"({type(e).__name__}: {e})") from e


def _snippet(node: exp.Expression) -> str:
    try:
        text = node.sql(dialect="duckdb")
    except Exception:  # noqa: BLE001 - the node may be malformed: name its type then
        return type(node).__name__
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _agg_hook(node: exp.Expression, ctx: ExprContext) -> Expr | None:
    agg = ctx.agg
    if isinstance(node, _AGGS):
        return _bind_aggregate(node, ctx)
    if isinstance(node, HL.HOLISTIC):
        return HL.bind_holistic(node, ctx)
    if isinstance(node, HS.STATS):
        return HS.bind_stat(node, ctx, function_name(node))
    if FL.handles(node):
        return FL.bind_first_last(node, ctx)
    if type(node) in BA.NODES:
        return BA.bind_bit_agg(node, ctx)
    if isinstance(node, HL.REWRITTEN):
        return bind_expr(HL.rewrite(node), ctx)
    if isinstance(node, exp.Grouping | exp.GroupingId):  # grouping_id(...) is DuckDB's alias
        from hetdb.sql.grouping import bind_grouping

        return bind_grouping(node, ctx)
    if isinstance(node, exp.Filter) and FL.handles(node.this):
        return bind_expr(FL.rewrite_filter(node), ctx)
    if isinstance(node, exp.Filter) and isinstance(node.this, _ALL_AGGS):
        from hetdb.sql.rewrites import filter_as_case

        return bind_expr(filter_as_case(node), ctx)
    if _has(node, _ALL_AGGS + (exp.Subquery, exp.Exists, exp.Window, exp.Explode, exp.Grouping, exp.GroupingId)) \
            or isinstance(node, exp.Star):
        return None
    plain = _bind(node, ExprContext(agg.pre_scope, ctx.binder, ctx.clause))
    for kexpr, f in agg.keys:
        if kexpr == plain:
            return ColumnRef(f.dtype, f.cid, f.nullable)
    if not plain.columns():
        return plain
    if isinstance(node, exp.Column):
        raise SqlError(f"column '{node.sql(dialect='duckdb')}' must appear in the GROUP BY clause or be "
                       f"used in an aggregate function (in {ctx.clause})")
    return None


def _bind_aggregate(node: exp.Expression, ctx: ExprContext) -> Expr:
    agg = ctx.agg
    inner = ExprContext(agg.pre_scope, ctx.binder, f"the argument of {type(node).__name__.upper()}")
    arg_node = node.this
    distinct = False
    if isinstance(arg_node, exp.Distinct):
        items = arg_node.expressions
        if len(items) != 1:
            raise UnsupportedError("DISTINCT over several arguments in an aggregate")
        arg_node, distinct = items[0], True
    # subqueries first: an aggregate inside a subquery is not a nested aggregate
    if arg_node is not None and _has(arg_node, (exp.Subquery, exp.Exists)):
        raise UnsupportedError("subqueries inside aggregate arguments")
    if arg_node is not None and _has(arg_node, _AGGS):
        raise SqlError(f"aggregate calls cannot be nested: {node.sql(dialect='duckdb')}")
    if isinstance(node, exp.Count) and (arg_node is None or isinstance(arg_node, exp.Star)):
        call = AggCall(T.INT64, "count_star")
    else:
        arg = _bind(arg_node, inner)
        t = arg.dtype
        if t.kind == "interval" and isinstance(node, exp.Min | exp.Max) and not distinct:
            return HS.interval_extreme(ctx, function_name(node), arg, isinstance(node, exp.Min))
        if t.kind == "interval" and not (isinstance(node, exp.Count) and not distinct):
            raise UnsupportedError(f"{function_name(node)}() of INTERVAL values (aggregate epoch(x) or a part of it)")
        if isinstance(node, exp.Count):
            call = AggCall(T.INT64, "count", arg, distinct)
        elif isinstance(node, (exp.Min, exp.Max)):
            call = AggCall(t, "min" if isinstance(node, exp.Min) else "max", arg, distinct)
        else:
            if isinstance(node, exp.Avg) and t.kind in ("date", "timestamp", "time"):
                from hetdb.sql.temporal_aggs import temporal_avg

                return temporal_avg(ctx, function_name(node), arg, distinct)
            if not t.is_numeric:
                raise SqlError(f"{type(node).__name__.upper()} needs a number, got {t}")
            if isinstance(node, exp.Avg):
                call = AggCall(T.FLOAT64, "avg", arg, distinct)
            else:
                # DuckDB: SUM of integers is HUGEINT, of DECIMAL(p, s) is DECIMAL(38, s)
                rt = T.FLOAT64 if t.kind == "float64" else T.INT128 if t.is_integer \
                    else T.wide_decimal(T.MAX_WIDE_PRECISION, t.scale)
                call = AggCall(rt, "sum", arg, distinct)
    for f, existing in agg.aggs:
        if existing == call:
            return ColumnRef(f.dtype, f.cid, f.nullable)
    f = Field(ctx.binder.new_cid(call.op), node.sql(dialect="duckdb"), call.dtype,
              call.op not in ("count", "count_star"))
    agg.aggs.append((f, call))
    return ColumnRef(f.dtype, f.cid, f.nullable)


def as_condition(e: Expr, what: str) -> Expr:
    """``e`` checked to be a boolean condition (a NULL literal becomes a BOOL NULL)."""
    return _bool(e, what)


def _bool(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.BOOL, None)
    if e.dtype != T.BOOL:
        raise SqlError(f"{what} must be a boolean condition, got {e.dtype}")
    return e


def compare(op: str, a: Expr, b: Expr) -> Expr:
    """Typed comparison: both sides cast to their common type."""
    if IV.is_interval(a) or IV.is_interval(b):
        return IV.compare(op, a, b)
    if LF.is_list(a) or LF.is_list(b):
        from hetdb.sql.list_keys import compare as list_compare

        return list_compare(op, a, b)
    a, b = _midnight_as_date(a, b), _midnight_as_date(b, a)
    t = TY.common_type(a, b, "a comparison")
    return Call(T.BOOL, op, (TY.cast_to(a, t), TY.cast_to(b, t)))


def _midnight_as_date(x: Expr, other: Expr) -> Expr:
    """A TIMESTAMP constant at midnight compared with a DATE compares as that DATE (the same answer
    for every operator): ``d < DATE '1998-12-01' - INTERVAL 90 DAY`` stays a DATE filter that zone
    maps and the GPU kernels take, though DATE - INTERVAL is a TIMESTAMP as in DuckDB."""
    if isinstance(x, Literal) and x.dtype == T.TIMESTAMP and other.dtype.kind == "date" \
            and x.value is not None and x.value % 86_400_000_000 == 0:
        return Literal(T.DATE, x.value // 86_400_000_000)
    return x


def _interval(node: exp.Interval) -> tuple[int, int]:
    """(months, days) of an INTERVAL literal."""
    text = node.this.name if node.this is not None else ""
    unit = node.args.get("unit")
    unit_s = unit.name if unit is not None else ""
    if not unit_s:
        m = re.fullmatch(r"\s*(-?\d+)\s*([A-Za-z]+)\s*", text)
        if not m:
            raise UnsupportedError(f"INTERVAL '{text}' (write INTERVAL 'n' DAY|MONTH|YEAR)")
        text, unit_s = m.group(1), m.group(2)
    try:
        n = int(text)
    except ValueError:
        raise SqlError(f"INTERVAL needs a whole number, got '{text}'") from None
    u = unit_s.upper().rstrip("S")
    if u == "DAY":
        return 0, n
    if u == "WEEK":
        return 0, 7 * n
    if u == "MONTH":
        return n, 0
    if u == "YEAR":
        return 12 * n, 0
    raise UnsupportedError(f"INTERVAL unit {unit_s} (supported: DAY, WEEK, MONTH, YEAR)")


def _date_plus_interval(d: Expr, months: int, days: int) -> Expr:
    if d.dtype.kind != "date":
        raise UnsupportedError(f"adding an INTERVAL to {d.dtype} (only DATE ± INTERVAL is supported)")
    if isinstance(d, Literal):
        if d.value is None:
            return d
        return Literal(T.DATE, TY.add_months(d.value, months) + days)
    out = d
    if months:
        out = Call(T.DATE, "date_add_months", (out, Literal(T.INT32, months)))
    if days:
        out = Call(T.DATE, "date_add_days", (out, Literal(T.INT32, days)))
    return out


def arith(op: str, a: Expr, b: Expr) -> Expr:
    if op in ("add", "sub", "mul", "mod") and T.NULL in (a.dtype, b.dtype) \
            and "decimal" in (a.dtype.kind, b.dtype.kind):  # DuckDB: a bare NULL with a DECIMAL stays NULL
        return Literal(T.NULL, None)
    ta, tb, tr = TY.arith_type(op, a, b)
    a2, b2 = TY.cast_to(a, ta), TY.cast_to(b, tb)
    if isinstance(a2, Literal) and isinstance(b2, Literal) and op in ("add", "sub", "mul") \
            and tr.kind != "float64":
        if a2.value is None or b2.value is None:
            return Literal(tr, None)
        # Physical values: equal scales for add/sub, scales add up for mul - exactly the result's.
        v = {"add": a2.value + b2.value, "sub": a2.value - b2.value, "mul": a2.value * b2.value}[op]
        limit = 2**31 if tr.kind == "int32" else 10**tr.precision if tr.kind == "decimal" else 2**63
        if -limit < v < limit:
            return Literal(tr, v)
    return Call(tr, op, (a2, b2))


def _bind(node: exp.Expression, ctx: ExprContext) -> Expr:  # noqa: C901 - one dispatch table
    b = lambda n: bind_expr(n, ctx)  # noqa: E731
    if isinstance(node, exp.Paren):
        return b(node.this)
    if isinstance(node, exp.Window):
        from hetdb.sql.window import bind_window

        return bind_window(node, ctx, b)
    # columns and literals first: most nodes are, and no function family below takes either
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise SqlError(f"'{node.sql(dialect='duckdb')}' is only allowed in the SELECT list")
        return ctx.scope.resolve(node.table or None, node.name)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal(T.STRING, node.this)
        return TY.number_literal(node.this)
    if FX.handles(node):
        return FX.bind_ext(node, b)
    if LF.handles(node):
        return LF.bind(node, b, ctx)
    if isinstance(node, exp.TimeFromParts):
        return TM.make_time(b(node.args["hour"]), b(node.args["min"]), b(node.args["sec"]))
    if isinstance(node, exp.Explode):
        if ctx.unnest is None:
            raise UnsupportedError(f"unnest() in {ctx.clause} (unnest is supported in the SELECT list and FROM)")
        return ctx.unnest.add(node, b)
    if isinstance(node, exp.Alias):
        return b(node.this)
    if isinstance(node, exp.Null):
        return Literal(T.NULL, None)
    if isinstance(node, exp.Boolean):
        return Literal(T.BOOL, bool(node.this))
    if isinstance(node, exp.Cast) and node.to.this == exp.DataType.Type.INTERVAL:
        return IV.cast(b(node.this), node.this)
    if isinstance(node, exp.Cast):
        to = node.to
        params = [int(p.this.this) for p in to.expressions if isinstance(p.this, exp.Literal)]
        x = b(node.this)
        if LF.is_list(x) or to.this == exp.DataType.Type.ARRAY:
            return LF.cast(x, to)
        t = TY.sql_type(to.this.value, params)
        if "time" in (t.kind, x.dtype.kind):
            return TM.cast(x, t)
        if IV.is_interval(x):
            if t != T.STRING:
                raise UnsupportedError(f"CAST of an INTERVAL to {t} (to VARCHAR is supported)")
            return IV.to_text(x)
        if to.this.value.upper() in TY.NARROW_TYPES:
            return TY.narrow_cast(x, to.this.value, t, soft=False)
        return TY.cast_to(x, t)
    if type(node) in _CMP:
        return compare(_CMP[type(node)], b(node.this), b(node.expression))
    if isinstance(node, exp.NullSafeEQ | exp.NullSafeNEQ):
        from hetdb.sql.rewrites import null_safe_equal

        return null_safe_equal(b(node.this), b(node.expression), isinstance(node, exp.NullSafeNEQ))
    if type(node) in _ARITH:
        op = _ARITH[type(node)]
        if op in ("add", "sub") and FX.is_interval(node.expression):
            left = b(node.this)
            if left.dtype.kind == "time":
                return TM.plus_interval(left, b(node.expression), 1 if op == "add" else -1)
            if not IV.is_interval(left):
                return FX.interval_arith(left, node.expression, 1 if op == "add" else -1, b)
        if op == "add" and FX.is_interval(node.this):
            right = b(node.expression)
            if not IV.is_interval(right):
                return FX.interval_arith(right, node.this, 1, b)
        left, right = b(node.this), b(node.expression)
        if "time" in (left.dtype.kind, right.dtype.kind):
            return _time_arith(op, left, right)
        if IV.is_interval(left) or IV.is_interval(right):
            return IV.arith(op, left, right)
        if op == "sub" and left.dtype.kind == "date" and right.dtype.kind == "date":
            return Call(T.INT64, "date_minus_date", (left, right))
        if op in ("add", "sub") and left.dtype.kind == "date" and right.dtype.is_integer:
            n = right if op == "add" else _negate(right)
            if isinstance(left, Literal) and isinstance(n, Literal):
                return Literal(T.DATE, None if None in (left.value, n.value) else left.value + n.value)
            return Call(T.DATE, "date_add_days", (left, TY.cast_to(n, T.INT32)))
        kinds = {left.dtype.kind, right.dtype.kind}
        if op == "sub" and "timestamp" in kinds and kinds <= {"date", "timestamp"}:
            return IV.timestamp_diff(left, right)
        return arith(op, left, right)
    if isinstance(node, exp.Neg):
        return _negate(b(node.this))
    if isinstance(node, exp.And | exp.Or):
        op = "and" if isinstance(node, exp.And) else "or"
        return Call(T.BOOL, op, (_bool(b(node.this), op.upper()), _bool(b(node.expression), op.upper())))
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return Call(T.BOOL, "is_not_null", (b(inner.this),))
        if isinstance(inner, (exp.In, exp.Exists)) and (inner.args.get("query") is not None
                                                        or isinstance(inner, exp.Exists)):
            return Call(T.BOOL, "not", (ctx.binder.subquery_expr(inner, ctx),))
        return Call(T.BOOL, "not", (_bool(b(inner), "NOT"),))
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise UnsupportedError(f"IS {node.expression.sql(dialect='duckdb')} (only IS [NOT] NULL)")
        return Call(T.BOOL, "is_null", (b(node.this),))
    if isinstance(node, exp.Between):
        x, lo, hi = b(node.this), b(node.args["low"]), b(node.args["high"])
        return Call(T.BOOL, "and", (compare("ge", x, lo), compare("le", x, hi)))
    if isinstance(node, exp.In):
        if node.args.get("query") is not None:
            return ctx.binder.subquery_expr(node, ctx)
        if node.args.get("unnest") is not None or node.args.get("field") is not None:
            raise UnsupportedError("IN over UNNEST / a field")
        if not node.expressions:
            raise SqlError("IN () needs at least one value")
        return in_list(b(node.this), [b(x) for x in node.expressions])
    if isinstance(node, exp.Subquery | exp.Exists):
        return ctx.binder.subquery_expr(node, ctx)
    if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like | exp.ILike):
        from hetdb.sql.rewrites import like_escape

        like = node.this
        return like_escape(b(like.this), b(like.expression), b(node.expression), isinstance(like, exp.ILike),
                           bool(like.args.get("negate")))
    if isinstance(node, exp.Like | exp.ILike):
        s, pat = TY.null_as_string(b(node.this)), b(node.expression)
        if s.dtype.kind != "string":
            raise SqlError(f"LIKE needs a string, got {s.dtype}")
        if not (isinstance(pat, Literal) and (pat.value is None or isinstance(pat.value, str))):
            raise UnsupportedError("LIKE with a pattern that is not a constant string")
        if pat.value is None:
            return Literal(T.BOOL, None)
        if isinstance(node, exp.ILike):
            e = Call(T.BOOL, "ilike", (s, pat))
            return Call(T.BOOL, "not", (e,)) if node.args.get("negate") else e
        return Call(T.BOOL, "not_like" if node.args.get("negate") else "like", (s, pat))
    if isinstance(node, exp.Case):
        return _case(node, ctx)
    if isinstance(node, exp.If):
        return _case_from(([(b(node.this), b(node.args["true"]))]),
                          b(node.args["false"]) if node.args.get("false") is not None else None)
    if isinstance(node, exp.Coalesce):
        args = [b(node.this)] + [b(x) for x in node.expressions]
        return _variadic("coalesce", args)
    if isinstance(node, exp.Nullif):
        x, y = b(node.this), b(node.expression)
        IV.refuse_keys([x, y], "NULLIF")
        t = TY.common_type(x, y, "NULLIF")
        # compared in the common type; the result keeps the first argument's type (DuckDB)
        return Call(t if TY.is_null_literal(x) else x.dtype, "nullif", (TY.cast_to(x, t), TY.cast_to(y, t)))
    if isinstance(node, exp.Substring):
        s = TY.null_as_string(b(node.this))
        if s.dtype.kind != "string":
            raise SqlError(f"SUBSTRING needs a string, got {s.dtype}")
        if node.args.get("start") is None:
            raise SqlError("SUBSTRING needs a start position: substring(s, start[, length])")
        args = [s, TY.cast_to(_int_arg(b(node.args["start"]), "SUBSTRING start"), T.INT64)]
        if node.args.get("length") is not None:
            args.append(TY.cast_to(_int_arg(b(node.args["length"]), "SUBSTRING length"), T.INT64))
        return Call(T.STRING, "substring", tuple(args))
    if isinstance(node, exp.Extract):
        part = node.this.name.upper()
        return _extract(part, b(node.expression))
    if isinstance(node, exp.Year | exp.Month | exp.Day):
        return _extract(type(node).__name__.upper(), b(node.this))
    if isinstance(node, MATH_NODES):
        return bind_math(node, b)
    if isinstance(node, exp.Upper | exp.Lower):
        x = TY.null_as_string(b(node.this))
        if x.dtype.kind != "string":
            raise SqlError(f"{type(node).__name__.upper()} needs a string, got {x.dtype}")
        return Call(T.STRING, type(node).__name__.lower(), (x,))
    if isinstance(node, exp.Length):
        x = b(node.this)
        if LF.is_list(x):
            return LF.length(x)
        x = TY.null_as_string(x)
        if x.dtype.kind != "string":
            raise SqlError(f"LENGTH needs a string, got {x.dtype}")
        return Call(T.INT64, "length", (x,))
    if isinstance(node, exp.DPipe | exp.Concat):
        parts = [node.this, node.expression] if isinstance(node, exp.DPipe) else node.expressions
        op = "concat" if isinstance(node, exp.DPipe) else "concat_skip"  # concat() skips NULLs
        bound = [b(p) for p in parts]
        if op == "concat" and any(e.dtype == T.NULL for e in bound):  # DuckDB: x || NULL has the NULL type
            return Literal(T.NULL, None)
        return Call(T.STRING, op, tuple(TY.cast_to(e, T.STRING) for e in bound))
    if isinstance(node, exp.Interval):
        months, days, micros, count = FX._interval_value(node, b)
        return IV.constant(months, days, micros) if count is None else IV.scaled(months, days, micros, b(count))
    if isinstance(node, exp.Star):
        raise SqlError("'*' is only allowed in the SELECT list or COUNT(*)")
    raise UnsupportedError(f"expression {node.sql(dialect='duckdb')!r} ({type(node).__name__})")


def _time_arith(op: str, a: Expr, b: Expr) -> Expr:
    """DATE + TIME, TIME + DATE, TIME ± INTERVAL, INTERVAL + TIME (DuckDB's only TIME arithmetic)."""
    kinds = (a.dtype.kind, b.dtype.kind)
    if op == "add" and kinds in (("date", "time"), ("time", "date")):
        return TM.date_plus_time(*(a, b) if kinds[0] == "date" else (b, a))
    if op in ("add", "sub") and kinds == ("time", "interval"):
        return TM.plus_interval(a, b, 1 if op == "add" else -1)
    if op == "add" and kinds == ("interval", "time"):
        return TM.plus_interval(b, a, 1)
    raise SqlError(f"no operator {a.dtype} {_ARITH_SQL[op]} {b.dtype} (TIME supports DATE + TIME and "
                   "TIME ± INTERVAL)")


_ARITH_SQL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "intdiv": "//", "mod": "%"}


def _int_arg(e: Expr, what: str) -> Expr:
    if not (e.dtype.is_integer or TY.is_null_literal(e)):
        raise SqlError(f"{what} must be an integer, got {e.dtype}")
    return e


def _negate(x: Expr) -> Expr:
    if IV.is_interval(x):
        return IV.negate(x)
    if not x.dtype.is_numeric:
        raise SqlError(f"cannot negate {x.dtype}")
    if x.dtype == T.NULL:  # DuckDB: -NULL is a BIGINT
        return TY.cast_to(x, T.INT64)
    if isinstance(x, Literal):
        return replace(x, value=None if x.value is None else -x.value)
    return Call(x.dtype, "neg", (x,))


def _extract(part: str, x: Expr) -> Expr:
    if x.dtype.kind == "time":
        return TM.part(part.lower(), x, f"EXTRACT({part})")
    if IV.is_interval(x):
        return FX.date_part(part.lower(), x, f"EXTRACT({part})")
    if x.dtype.kind not in ("date", "timestamp"):
        raise SqlError(f"EXTRACT({part}) needs a DATE or TIMESTAMP, got {x.dtype}")
    if x.dtype.tz:
        return FX.date_part(part.lower(), x, f"EXTRACT({part})")
    if part not in ("YEAR", "MONTH", "DAY"):
        raise UnsupportedError(f"EXTRACT({part}) (supported: YEAR, MONTH, DAY)")
    if isinstance(x, Literal) and x.dtype.kind == "date":
        if x.value is None:
            return Literal(T.INT64, None)
        d = TY.days_to_date(x.value)
        return Literal(T.INT64, {"YEAR": d.year, "MONTH": d.month, "DAY": d.day}[part])
    return Call(T.INT64, f"extract_{part.lower()}", (x,))


def in_list(probe: Expr, items: list[Expr]) -> Expr:
    """``probe IN (items)``: an in_list call over literals, else an OR of equalities."""
    if IV.is_interval(probe) or any(IV.is_interval(it) for it in items) or \
            LF.is_list(probe) or any(LF.is_list(it) for it in items):
        out = compare("eq", probe, items[0])
        for it in items[1:]:
            out = Call(T.BOOL, "or", (out, compare("eq", probe, it)))
        return out
    t = TY.common_of([probe, *items], "IN")
    probe_c = TY.cast_to(probe, t)
    cast_items = [TY.cast_to(it, t) for it in items]
    if all(isinstance(i, Literal) for i in cast_items):
        return Call(T.BOOL, "in_list", (probe_c, *cast_items))
    out: Expr | None = None
    for it in cast_items:
        eq = Call(T.BOOL, "eq", (probe_c, it))
        out = eq if out is None else Call(T.BOOL, "or", (out, eq))
    return out


def _variadic(op: str, args: list[Expr]) -> Expr:
    t = TY.common_of(args, op.upper())
    return Call(t, op, tuple(TY.cast_to(a, t) for a in args))


def _case(node: exp.Case, ctx: ExprContext) -> Expr:
    operand = bind_expr(node.this, ctx) if node.this is not None else None
    whens = []
    for if_node in node.args.get("ifs") or []:
        cond = bind_expr(if_node.this, ctx)
        if operand is not None:
            cond = compare("eq", operand, cond)
        whens.append((_bool(cond, "a CASE WHEN condition"), bind_expr(if_node.args["true"], ctx)))
    default = node.args.get("default")
    return _case_from(whens, bind_expr(default, ctx) if default is not None else None)


def _case_from(whens: list[tuple[Expr, Expr]], otherwise: Expr | None) -> Expr:
    values = [v for _, v in whens] + ([otherwise] if otherwise is not None else [])
    t = TY.common_of(values, "CASE")
    return Case(t, tuple((c, TY.cast_to(v, t)) for c, v in whens),
                None if otherwise is None or TY.is_null_literal(otherwise) else TY.cast_to(otherwise, t))
