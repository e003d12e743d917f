"""first(x), last(x) and any_value(x) as DuckDB computes them: the value of the group's first (last)
row in input order, NULL included; any_value the first non-NULL value. ``ORDER BY`` inside the call
orders the group first (``first(x ORDER BY y DESC)``).

Each is a first_value/last_value over the whole group in the window operator below the aggregation
(PARTITION BY the GROUP BY keys), which the aggregation then takes as the group's single value.
Without an order it is computed by the unordered window, which sees the rows in input order; with
one (ORDER BY inside the call; any_value orders by ``x IS NULL`` first so that non-NULL values come
first) by a window ordered by those keys and then by the row's position in its group (row_number()
of the unordered window), so ties keep input order.
"""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Field, SortKey
from hetdb.plan.window import WHOLE_PARTITION, WindowCall

NODES = (exp.First, exp.Last, exp.AnyValue)


def handles(node: exp.Expression) -> bool:
    return isinstance(node, NODES) or (isinstance(node, exp.IgnoreNulls) and isinstance(node.this, NODES))


def bind_first_last(node: exp.Expression, ctx) -> Expr:
    """The aggregate output column of one first/last/any_value call in aggregate mode."""
    from hetdb.sql.exprs import ExprContext, bind_expr
    from hetdb.sql.names import function_name

    skip_nulls = isinstance(node, exp.IgnoreNulls)
    if skip_nulls:
        node = node.this
    skip_nulls = skip_nulls or isinstance(node, exp.AnyValue)
    name = function_name(node)
    arg = node.this
    inner = ExprContext(ctx.agg.pre_scope, ctx.binder, f"the argument of {name}")
    keys: list[SortKey] = []
    if isinstance(arg, exp.Order):
        for o in arg.expressions:
            keys.append(SortKey(bind_expr(o.this, inner), bool(o.args.get("desc")), bool(o.args.get("nulls_first"))))
        arg = arg.this
    if isinstance(arg, exp.Distinct):
        raise UnsupportedError(f"{name}(DISTINCT ...)")
    x = bind_expr(arg, inner)
    if x.dtype.kind == "interval":
        raise UnsupportedError(f"{name}() of INTERVAL values")
    last = isinstance(node, exp.Last)
    if skip_nulls:  # non-NULL rows first (last: NULL rows first)
        keys.insert(0, SortKey(Call(T.BOOL, "is_null", (x,)), last, False))
    if keys:  # ties in input order: the position in the group, from the unordered window below
        keys.append(SortKey(_window(ctx, (), WindowCall(T.INT64, "row_number", (), WHOLE_PARTITION), "row_number")))
    call = WindowCall(x.dtype, "last_value" if last else "first_value", (x,), WHOLE_PARTITION)
    ref = _window(ctx, tuple(keys), call, name)
    picked = AggCall(x.dtype, "max", ref)
    for f, existing in ctx.agg.aggs:
        if existing == picked:
            return ColumnRef(f.dtype, f.cid, f.nullable)
    f = Field(ctx.binder.new_cid(call.op), name, x.dtype, True)
    ctx.agg.aggs.append((f, picked))
    return ColumnRef(f.dtype, f.cid, True)


def _window(ctx, order: tuple[SortKey, ...], call: WindowCall, name: str) -> ColumnRef:
    """The column of ``call`` over the group ordered by ``order`` (a window of its own per order)."""
    agg = ctx.agg
    if not order:
        for f, existing in agg.pre_windows:
            if existing == call:
                return ColumnRef(f.dtype, f.cid, True)
        f = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
        agg.pre_windows.append((f, call))
        return ColumnRef(f.dtype, f.cid, True)
    for o, fields in agg.ordered_windows:
        if o == order:
            for f, existing in fields:
                if existing == call:
                    return ColumnRef(f.dtype, f.cid, True)
            f = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
            fields.append((f, call))
            return ColumnRef(f.dtype, f.cid, True)
    f = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
    agg.ordered_windows.append((order, [(f, call)]))
    return ColumnRef(f.dtype, f.cid, True)


def rewrite_filter(node: exp.Filter) -> exp.Expression:
    """``f(x) FILTER (WHERE c)`` as a call over the rows where c holds: any_value (and IGNORE NULLS)
    of ``CASE WHEN c THEN x END``; first/last of that value ordered by c first, so that the rows
    where c holds come first (last: last) and the value is NULL only when no row qualifies."""
    where = node.expression
    cond = where.this if isinstance(where, exp.Where) else where
    call = node.this.copy()
    target = call.this if isinstance(call, exp.IgnoreNulls) else call
    arg = target.this
    value = arg.this if isinstance(arg, exp.Order) else arg
    when = exp.Case(ifs=[exp.If(this=cond.copy(), true=value.copy())])
    if call is not target or isinstance(target, exp.AnyValue):
        if isinstance(arg, exp.Order):
            arg.set("this", when)
        else:
            target.set("this", when)
        return call
    last = isinstance(target, exp.Last)
    held = exp.Case(ifs=[exp.If(this=cond.copy(), true=exp.Literal.number(1 if last else 0))],
                    default=exp.Literal.number(0 if last else 1))
    keys = [exp.Ordered(this=held, desc=False, nulls_first=False), *(arg.expressions if isinstance(arg, exp.Order) else [])]
    target.set("this", exp.Order(this=when, expressions=keys))
    return call
