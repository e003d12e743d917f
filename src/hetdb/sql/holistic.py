"""Aggregates the hash aggregation has no state for — median, quantile_cont, stddev/var (sample and
population), arg_max/arg_min, string_agg, mode — computed per group by the window operator (PARTITION BY the GROUP BY
keys, the whole group as frame) before the aggregation, which then takes the group's (single) value.
median of DATE/TIMESTAMP[TZ] values is the median of their microseconds (exact: a half at most),
rounded half away from zero to a TIMESTAMP[TZ] as DuckDB.
product/fsum/entropy: sql/host_aggs.py; array_agg/list: sql/lists.py.
bool_and/bool_or become min/max of a 0/1 CASE; approx_count_distinct is the exact count(DISTINCT).
"""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Field, Literal
from hetdb.plan.window import WHOLE_PARTITION, WindowCall
from hetdb.sql import host_aggs as HA
from hetdb.sql import typing as TY

_STATS = {exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
          exp.Variance: "var_samp", exp.VariancePop: "var_pop"}
STATS_OPS = tuple(_STATS)  # stddev/variance: their window calls take frames
FRAMED_HOST_AGGS = {HA.Product: True, HA.Fsum: True}  # product/fsum over frames too (not entropy)
HOLISTIC = (exp.Median, exp.PercentileCont, exp.ArgMax, exp.ArgMin, exp.GroupConcat, exp.Mode, *_STATS,
            *HA.NODES, exp.ArrayAgg)
REWRITTEN = (exp.LogicalAnd, exp.LogicalOr, exp.ApproxDistinct)


def rewrite(node: exp.Expression) -> exp.Expression:
    """bool_and/bool_or/approx_count_distinct as aggregates the hash aggregation computes."""
    if isinstance(node, exp.ApproxDistinct):
        return exp.Count(this=exp.Distinct(expressions=[node.this.copy()]))
    b = node.this.copy()
    flag = exp.Case(ifs=[exp.If(this=b, true=exp.Literal.number(1)),
                         exp.If(this=exp.Not(this=b.copy()), true=exp.Literal.number(0))])
    agg = exp.Min(this=flag) if isinstance(node, exp.LogicalAnd) else exp.Max(this=flag)
    return exp.EQ(this=agg, expression=exp.Literal.number(1))


def _numeric(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.FLOAT64, None)
    if not e.dtype.is_numeric:
        raise SqlError(f"{what} needs a number, got {e.dtype}")
    return TY.cast_to(e, T.FLOAT64)


def bind_holistic(node: exp.Expression, ctx) -> Expr:
    """The aggregate output column of one HOLISTIC call in aggregate mode."""
    from hetdb.sql.exprs import ExprContext, bind_expr
    from hetdb.sql.names import function_name

    agg = ctx.agg
    name = function_name(node)
    if isinstance(node.this, exp.Distinct) and not isinstance(node, exp.ArrayAgg | exp.GroupConcat):  # (sql/lists.py)
        raise UnsupportedError(f"{name}(DISTINCT ...)")
    inner = ExprContext(agg.pre_scope, ctx.binder, f"the argument of {name}")

    def b(n: exp.Expression) -> Expr:
        return bind_expr(n, inner)

    if isinstance(node, exp.PercentileCont | exp.PercentileDisc) and isinstance(node.expression, exp.Array):
        # quantile_cont(x, [q1, q2]): the LIST of each quantile
        from hetdb.sql.list_funcs import quantile_list

        parts = []
        for q in node.expression.expressions:
            one = node.copy()
            one.set("expression", q.copy())
            parts.append(bind_holistic(one, ctx))
        return quantile_list(parts)
    temporal = None
    if isinstance(node, exp.Median | exp.PercentileCont):
        x = b(node.this)
        if x.dtype.kind in ("date", "timestamp"):  # DuckDB: the interpolated instant (TIMESTAMP[TZ])
            temporal = T.TIMESTAMPTZ if x.dtype.tz else T.TIMESTAMP
            micros = TY.cast_to(Call(T.INT64, "epoch_units", (x, Literal(T.INT64, 1))), T.FLOAT64)
            q = 0.5 if isinstance(node, exp.Median) else _quantile(b(node.expression), name)
            if node.meta.get("desc"):  # (rounded to microseconds: 1 - q ascending is the same instant)
                q = 1.0 - q
            call = WindowCall(T.FLOAT64, "quantile_cont", (micros, Literal(T.FLOAT64, q)), WHOLE_PARTITION)
    if isinstance(node, exp.ArrayAgg):
        from hetdb.sql.lists import array_agg_call

        call = array_agg_call(node, name, b)
    elif temporal is None:
        call = string_agg_call(node, b) if isinstance(node, exp.GroupConcat) else statistic_call(node, name, b)
    for f, existing in agg.pre_windows:
        if existing == call:
            wf = f
            break
    else:
        wf = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
        agg.pre_windows.append((wf, call))
    # every row of a group holds the group's value: max picks it (any, for LIST values that do not order)
    picked = AggCall(call.dtype, "any" if call.dtype.kind == "list" else "max", ColumnRef(wf.dtype, wf.cid, True))
    f = next((f for f, existing in agg.aggs if existing == picked), None)
    if f is None:
        f = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
        agg.aggs.append((f, picked))
    ref = ColumnRef(f.dtype, f.cid, True)
    if call.op == "entropy":  # 0.0 over no rows too (the aggregation's max of no row is NULL)
        return Call(T.FLOAT64, "coalesce", (ref, Literal(T.FLOAT64, 0.0)))
    # a median of instants: the interpolated microseconds rounded half away from zero, as DuckDB
    return ref if temporal is None else Call(temporal, "timestamp_from_micros", (ref,))


def _quantile(qe: Expr, name: str) -> float:
    if not (isinstance(qe, Literal) and qe.dtype.is_numeric and qe.value is not None):
        raise UnsupportedError(f"{name} with a quantile that is not a constant number")
    q = float(TY.cast_to(qe, T.FLOAT64).value)
    if not 0 <= q <= 1:
        raise SqlError(f"{name}: the quantile must be between 0 and 1, got {q}")
    return q


def statistic_call(node: exp.Expression, name: str, b) -> WindowCall:
    x = b(node.this)
    if type(node) in HA.OPS:
        op = HA.OPS[type(node)]
        if op == "entropy":
            if x.dtype.kind == "interval":
                raise UnsupportedError(f"{name} of INTERVAL values")
            return WindowCall(T.FLOAT64, op, (Literal(T.INT32, None) if TY.is_null_literal(x) else x,),
                              WHOLE_PARTITION)
        return WindowCall(T.FLOAT64, op, (_numeric(x, name),), WHOLE_PARTITION)
    if isinstance(node, exp.Median | exp.PercentileCont):
        q = 0.5
        if isinstance(node, exp.PercentileCont):
            q = _quantile(b(node.expression), name)
        # WITHIN GROUP (ORDER BY x DESC): positions counted from the largest value and interpolated
        # from it, as DuckDB does (1 - q ascending differs in the interpolation's last bits)
        desc = (Literal(T.BOOL, True),) if node.meta.get("desc") else ()
        if x.dtype.kind == "decimal":
            # DuckDB: a DECIMAL of the argument's type (the interpolation truncated toward zero)
            return WindowCall(x.dtype, "quantile_cont", (x, Literal(T.FLOAT64, q), *desc), WHOLE_PARTITION)
        return WindowCall(T.FLOAT64, "quantile_cont", (_numeric(x, name), Literal(T.FLOAT64, q), *desc),
                          WHOLE_PARTITION)
    if isinstance(node, exp.Mode):
        if x.dtype.kind == "bool" or TY.is_null_literal(x):
            raise UnsupportedError(f"{name} of BOOLEAN or NULL values")
        return WindowCall(x.dtype, "mode", (x,), WHOLE_PARTITION)
    if type(node) in _STATS:
        return WindowCall(T.FLOAT64, _STATS[type(node)], (_numeric(x, name),), WHOLE_PARTITION)
    by = b(node.expression)
    if by.dtype.kind == "bool" or TY.is_null_literal(by):
        raise UnsupportedError(f"{name} by a BOOLEAN or NULL value")
    return WindowCall(x.dtype, "arg_max" if isinstance(node, exp.ArgMax) else "arg_min", (x, by),
                      WHOLE_PARTITION)


def order_keys(arg: exp.Expression, b) -> tuple[exp.Expression, list[Expr], str]:
    """``x ORDER BY k1 [DESC] [NULLS FIRST], ...`` inside an aggregate call: (x, bound keys, flags:
    'd'/'a' and 'f'/'l' per key)."""
    keys: list[Expr] = []
    flags = ""
    if isinstance(arg, exp.Order):
        for o in arg.expressions:
            keys.append(b(o.this))
            flags += ("d" if o.args.get("desc") else "a") + ("f" if o.args.get("nulls_first") else "l")
        arg = arg.this
    return arg, keys, flags


def string_agg_call(node: exp.GroupConcat, b) -> WindowCall:
    """string_agg(x[, sep] [ORDER BY ...]): args (x, sep, key flags, *keys); flags holds 'd'/'a' and
    'f'/'l' (NULLS FIRST/LAST) per ORDER BY key."""
    distinct = isinstance(node.this, exp.Distinct) or (isinstance(node.this, exp.Order)
                                                        and isinstance(node.this.this, exp.Distinct))
    arg, keys, flags = order_keys(node.this, b)
    if isinstance(arg, exp.Distinct):
        if len(arg.expressions) != 1:
            raise UnsupportedError("string_agg(DISTINCT ...) of several expressions")
        arg = arg.expressions[0]
        if any(k != b(arg) for k in keys):
            raise SqlError("In a DISTINCT aggregate, ORDER BY expressions must appear in the argument list")
    x = TY.cast_to(b(arg), T.STRING)
    sep = node.args.get("separator")
    sep_e = b(sep) if sep is not None else Literal(T.STRING, ",")
    if not (isinstance(sep_e, Literal) and isinstance(sep_e.value, str)):
        raise UnsupportedError("string_agg with a separator that is not a constant string")
    op = "string_agg_distinct" if distinct else "string_agg"
    return WindowCall(T.STRING, op, (x, sep_e, Literal(T.STRING, flags), *keys), WHOLE_PARTITION)
