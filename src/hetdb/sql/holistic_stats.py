"""corr, covar_pop, covar_samp, regr_slope, regr_intercept, regr_r2, regr_count, regr_avgx,
regr_avgy, regr_sxx, regr_syy, regr_sxy (y, x), skewness, kurtosis, quantile_disc(x, q) (and its
DuckDB alias quantile) and count_if,
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

PAIRED = (exp.Corr, exp.CovarPop, exp.CovarSamp, exp.RegrSlope, exp.RegrIntercept, exp.RegrR2,
          exp.RegrCount, exp.RegrAvgx, exp.RegrAvgy, exp.RegrSxx, exp.RegrSyy, exp.RegrSxy)
STATS = (*PAIRED, exp.PercentileDisc, exp.Quantile, exp.Kurtosis, exp.Skewness, exp.CountIf, exp.WithinGroup)

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

    if isinstance(node, exp.WithinGroup):
        return _within_group(ctx, node, b)

    if isinstance(node, exp.CountIf):  # DuckDB: the SUM of the condition as 0/1 (HUGEINT, NULL over no rows)
        c = node.this.copy()
        flag = exp.Case(ifs=[exp.If(this=c, true=exp.Literal.number(1)),
                             exp.If(this=exp.Not(this=c.copy()), true=exp.Literal.number(0))])
        return bind_expr(exp.Sum(this=flag), ctx)
    if isinstance(node, exp.PercentileDisc | exp.Quantile):  # DuckDB's quantile() is quantile_disc()
        key = "quantile" if isinstance(node, exp.Quantile) else "expression"
        q = node.args.get(key)
        if isinstance(q, exp.Array):  # quantile_disc(x, [q1, q2]): the LIST of each quantile
            from hetdb.sql.list_funcs import quantile_list

            parts = []
            for one_q in q.expressions:
                one = node.copy()
                one.set(key, one_q.copy())
                parts.append(bind_stat(one, ctx, name))
            return quantile_list(parts)
        return _quantile_disc(ctx, name, b(node.this), b(q))
    if isinstance(node, exp.Kurtosis | exp.Skewness):
        return _moments(ctx, isinstance(node, exp.Kurtosis), _number(b(node.this), name))
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
    if isinstance(node, exp.RegrCount):
        return n
    if isinstance(node, exp.RegrAvgx | exp.RegrAvgy):
        total = _agg(ctx, AggCall(_F, "sum", xs if isinstance(node, exp.RegrAvgx) else ys), "sum")
        return Case(_F, ((empty, _NULL),), _call("div", total, nf))
    if isinstance(node, exp.RegrSxx | exp.RegrSyy | exp.RegrSxy):
        total = sxx if isinstance(node, exp.RegrSxx) else syy if isinstance(node, exp.RegrSyy) else sxy
        return Case(_F, ((empty, _NULL),), total)
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


def _moments(ctx, kurtosis: bool, x: Expr) -> Expr:
    """DuckDB's sample skewness sqrt(n(n-1))/(n-2) * m3 / m2^1.5 (NULL for n <= 2) and sample excess
    kurtosis (n-1)((n+1) m4/m2^2 - 3(n-1)) / ((n-2)(n-3)) (NULL for n <= 3), m_k the central moments;
    NULL for constant input."""
    mean = _window(ctx, WindowCall(_F, "avg", (x,), WHOLE_PARTITION), "avg_x")
    d = _call("sub", x, mean)
    n = TY.cast_to(_agg(ctx, AggCall(T.INT64, "count", x), "n"), _F)
    d2 = _call("mul", d, d)
    m2 = _call("div", _agg(ctx, AggCall(_F, "sum", d2), "s2"), n)
    const = _cmp("eq", _agg(ctx, AggCall(_F, "min", x), "min_x"), _agg(ctx, AggCall(_F, "max", x), "max_x"))
    one, two, three = (Literal(_F, v) for v in (1.0, 2.0, 3.0))
    if kurtosis:
        m4 = _call("div", _agg(ctx, AggCall(_F, "sum", _call("mul", d2, d2)), "s4"), n)
        ratio = _call("div", m4, _call("mul", m2, m2))
        n1 = _call("sub", n, one)
        top = _call("mul", n1, _call("sub", _call("mul", _call("add", n, one), ratio), _call("mul", three, n1)))
        value = _call("div", top, _call("mul", _call("sub", n, two), _call("sub", n, three)))
        small = _cmp("le", n, three)
    else:
        m3 = _call("div", _agg(ctx, AggCall(_F, "sum", _call("mul", d2, d)), "s3"), n)
        scale = _call("div", _call("sqrt", _call("mul", n, _call("sub", n, one))), _call("sub", n, two))
        value = _call("mul", scale, _call("div", m3, _call("power", m2, Literal(_F, 1.5))))
        small = _cmp("le", n, two)
    return Case(_F, ((small, _NULL), (const, _NULL)), value)


def _within_group(ctx, node: exp.WithinGroup, b) -> Expr:
    """percentile_cont(q) / percentile_disc(q) WITHIN GROUP (ORDER BY x [DESC]) (SQL standard):
    quantile_cont(x, q) and quantile_disc(x, q) over x in the ORDER BY's direction."""
    from hetdb.sql.exprs import bind_expr

    func, order = node.this, node.expression
    keys = order.expressions if isinstance(order, exp.Order) else []
    if not isinstance(func, exp.PercentileCont | exp.PercentileDisc) or len(keys) != 1:
        raise UnsupportedError("WITHIN GROUP other than percentile_cont/percentile_disc(q) WITHIN GROUP "
                               "(ORDER BY one expression)")
    desc = bool(keys[0].args.get("desc"))
    if isinstance(func, exp.PercentileDisc):
        return _quantile_disc(ctx, "percentile_disc", b(keys[0].this), b(func.this), desc)
    node = exp.PercentileCont(this=keys[0].this.copy(), expression=func.this.copy())
    if desc:  # the values in descending order (holistic.statistic_call: DuckDB interpolates from the top)
        node.meta["desc"] = True
    return bind_expr(node, ctx)


def _quantile_disc(ctx, name: str, x: Expr, q_e: Expr, desc: bool = False) -> Expr:
    if not (isinstance(q_e, Literal) and q_e.dtype.is_numeric and q_e.value is not None):
        raise UnsupportedError(f"{name} with a quantile that is not a constant number")
    q = float(TY.cast_to(q_e, _F).value)
    if not 0 <= q <= 1:
        raise SqlError(f"{name}: the quantile must be between 0 and 1, got {q}")
    if TY.is_null_literal(x) or x.dtype.kind in ("bool", "interval"):
        raise UnsupportedError(f"{name} of {x.dtype} values")
    funcs = (WindowCall(T.INT64, "row_number", (), WHOLE_PARTITION),
             WindowCall(T.INT64, "count", (x,), WHOLE_PARTITION))
    order = (SortKey(x, desc, False),)
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
