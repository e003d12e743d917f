"""corr, covar_pop, covar_samp, regr_slope, regr_intercept, regr_r2 (y, x) and quantile_disc(x, q),
built from what the window operator and the hash aggregation already compute (no new kernels):

- the paired statistics take the rows where x and y are both non-NULL; each group's means come from
  window averages over the group (PARTITION BY the GROUP BY keys), then the aggregation sums the
  centred products (two passes, as stable as DuckDB's streaming co-moments). A constant x or y is
  detected exactly by min = max, so DuckDB's NaN / NULL / 1.0 edge results come out exactly.
- min/max of INTERVAL values pick the fields of the row with the extreme normalised value.
- quantile_disc(x, q) is DuckDB's discrete quantile: the value at 0-based position
  max(0, ceil(n * q) - 1) of the group's sorted non-NULL values, read through row_number() over the
  group ordered by x (a Window of its own below the aggregation).
"""

from __future__ import annotations

import math

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import AggCall, Call, Case, ColumnRef, Expr, Field, Literal, SortKey
from hetdb.plan.window import WHOLE_PARTITION, WindowCall
from hetdb.sql import typing as TY

PAIRED = (exp.Corr, exp.CovarPop, exp.CovarSamp, exp.RegrSlope, exp.RegrIntercept, exp.RegrR2)
STATS = (*PAIRED, exp.PercentileDisc)

_F = T.FLOAT64
_NAN = Literal(_F, math.nan)
_NULL = Literal(_F, None)


def _call(op: str, *args: Expr, dtype=_F) -> Expr:
    return Call(dtype, op, args)


def _cmp(op: str, a: Expr, b: Expr) -> Expr:
    return Call(T.BOOL, op, (a, b))


def _agg(ctx, call: AggCall, name: str) -> ColumnRef:
    agg = ctx.agg
    for f, existing in agg.aggs:
        if existing == call:
            return ColumnRef(f.dtype, f.cid, f.nullable)
    f = Field(ctx.binder.new_cid(call.op), name, call.dtype, call.op != "count")
    agg.aggs.append((f, call))
    return ColumnRef(f.dtype, f.cid, f.nullable)


def _window(ctx, call: WindowCall, name: str) -> ColumnRef:
    agg = ctx.agg
    for f, existing in agg.pre_windows:
        if existing == call:
            return ColumnRef(f.dtype, f.cid, True)
    f = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
    agg.pre_windows.append((f, call))
    return ColumnRef(f.dtype, f.cid, True)


def _number(e: Expr, name: str) -> Expr:
    if TY.is_null_literal(e):
        return _NULL
    if not e.dtype.is_numeric:
        raise SqlError(f"{name} needs numbers, got {e.dtype}")
    return TY.cast_to(e, _F)


def bind_stat(node: exp.Expression, ctx, name: str) -> Expr:
    """The value (over the aggregated rows) of one STATS call in aggregate mode."""
    from hetdb.sql.exprs import ExprContext, bind_expr

    if isinstance(node.this, exp.Distinct):
        raise UnsupportedError(f"{name}(DISTINCT ...)")
    inner = ExprContext(ctx.agg.pre_scope, ctx.binder, f"the argument of {name}")

    def b(n: exp.Expression) -> Expr:
        return bind_expr(n, inner)

    if isinstance(node, exp.PercentileDisc):
        return _quantile_disc(ctx, name, b(node.this), b(node.expression))
    return _paired(ctx, node, name, _number(b(node.this), name), _number(b(node.expression), name))


def _paired(ctx, node: exp.Expression, name: str, y: Expr, x: Expr) -> Expr:
    both = _cmp("and", Call(T.BOOL, "is_not_null", (x,)), Call(T.BOOL, "is_not_null", (y,)))
    xs, ys = Case(_F, ((both, x),)), Case(_F, ((both, y),))
    mx = _window(ctx, WindowCall(_F, "avg", (xs,), WHOLE_PARTITION), "avg_x")
    my = _window(ctx, WindowCall(_F, "avg", (ys,), WHOLE_PARTITION), "avg_y")
    dx, dy = _call("sub", xs, mx), _call("sub", ys, my)
    n = _agg(ctx, AggCall(T.INT64, "count", xs), "n")
    sxy = _agg(ctx, AggCall(_F, "sum", _call("mul", dx, dy)), "sxy")
    sxx = _agg(ctx, AggCall(_F, "sum", _call("mul", dx, dx)), "sxx")
    syy = _agg(ctx, AggCall(_F, "sum", _call("mul", dy, dy)), "syy")
    x_const = _cmp("eq", _agg(ctx, AggCall(_F, "min", xs), "min_x"), _agg(ctx, AggCall(_F, "max", xs), "max_x"))
    y_const = _cmp("eq", _agg(ctx, AggCall(_F, "min", ys), "min_y"), _agg(ctx, AggCall(_F, "max", ys), "max_y"))
    nf = TY.cast_to(n, _F)
    empty = _cmp("eq", n, Literal(T.INT64, 0))
    slope = _call("div", sxy, sxx)
    if isinstance(node, exp.CovarPop):
        return Case(_F, ((empty, _NULL),), _call("div", sxy, nf))
    if isinstance(node, exp.CovarSamp):
        return Case(_F, ((_cmp("lt", n, Literal(T.INT64, 2)), _NULL),),
                    _call("div", sxy, _call("sub", nf, Literal(_F, 1.0))))
    corr = _call("div", sxy, _call("sqrt", _call("mul", sxx, syy)))
    if isinstance(node, exp.Corr):
        return Case(_F, ((empty, _NULL), (_cmp("or", x_const, y_const), _NAN)), corr)
    if isinstance(node, exp.RegrSlope):
        return Case(_F, ((empty, _NULL), (x_const, _NAN)), slope)
    if isinstance(node, exp.RegrIntercept):
        mean_x, mean_y = _call("div", _agg(ctx, AggCall(_F, "sum", xs), "sum_x"), nf), \
            _call("div", _agg(ctx, AggCall(_F, "sum", ys), "sum_y"), nf)
        return Case(_F, ((empty, _NULL), (x_const, _NULL)), _call("sub", mean_y, _call("mul", slope, mean_x)))
    return Case(_F, ((empty, _NULL), (x_const, _NULL), (y_const, Literal(_F, 1.0))), _call("mul", corr, corr))


def _quantile_disc(ctx, name: str, x: Expr, q_e: Expr) -> Expr:
    if not (isinstance(q_e, Literal) and q_e.dtype.is_numeric and q_e.value is not None):
        raise UnsupportedError(f"{name} with a quantile that is not a constant number")
    q = float(TY.cast_to(q_e, _F).value)
    if not 0 <= q <= 1:
        raise SqlError(f"{name}: the quantile must be between 0 and 1, got {q}")
    if TY.is_null_literal(x) or x.dtype.kind in ("bool", "interval"):
        raise UnsupportedError(f"{name} of {x.dtype} values")
    funcs = (WindowCall(T.INT64, "row_number", (), WHOLE_PARTITION),
             WindowCall(T.INT64, "count", (x,), WHOLE_PARTITION))
    order = (SortKey(x, False, False),)
    for o, fields in ctx.agg.ordered_windows:
        if o == order:
            rn, cnt = (ColumnRef(f.dtype, f.cid, True) for f, _ in fields)
            break
    else:
        fields = [(Field(ctx.binder.new_cid(c.op), c.op, c.dtype, True), c) for c in funcs]
        ctx.agg.ordered_windows.append((order, fields))
        rn, cnt = (ColumnRef(f.dtype, f.cid, True) for f, _ in fields)
    k = _call("ceil", _call("mul", TY.cast_to(cnt, _F), Literal(_F, q)))
    idx = _call("greatest", _call("sub", k, Literal(_F, 1.0)), Literal(_F, 0.0))
    pick = _cmp("eq", TY.cast_to(_call("sub", rn, Literal(T.INT64, 1), dtype=T.INT64), _F), idx)
    return _agg(ctx, AggCall(x.dtype, "max", Case(x.dtype, ((pick, x),))), name)


def interval_extreme(ctx, name: str, x: Expr, smallest: bool) -> Expr:
    """min/max of INTERVAL values: the months, days and microseconds of the row whose normalised
    value (sql/interval.py key) is extreme, each picked by arg_min/arg_max over the group (the three
    picks take the same row: same key, same NULLs) and put together again after the aggregation."""
    from hetdb.sql import interval as IV

    op = "arg_min" if smallest else "arg_max"
    parts = []
    for field in ("months", "days", "micros"):
        comp = Call(T.INT64, "interval_field", (Literal(T.STRING, field), x))
        ref = _window(ctx, WindowCall(T.INT64, op, (comp, IV.key(x)), WHOLE_PARTITION), f"{op}_{field}")
        parts.append(_agg(ctx, AggCall(T.INT64, "max", ref), f"{name}_{field}"))
    return Call(T.INTERVAL, "interval_make", tuple(parts))
