"""Bind window functions (``f(...) OVER (PARTITION BY ... ORDER BY ... frame)``) and QUALIFY.

A window call met while binding the SELECT list, QUALIFY or ORDER BY becomes a reference to a column
of a ``Window`` node; calls with the same PARTITION BY / ORDER BY share one node. The nodes go above
the aggregation (and HAVING), so window arguments may be aggregates (``sum(sum(x)) OVER ()``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Field, Literal, SortKey
from hetdb.plan.logical import Node
from hetdb.plan.window import WHOLE_PARTITION, Frame, Window, WindowCall
from hetdb.sql import typing as TY
from hetdb.sql.names import function_name

_RANKING = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
            exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist"}
_VALUES = {exp.FirstValue: "first_value", exp.LastValue: "last_value", exp.First: "first_value",
           exp.Last: "last_value"}  # DuckDB's first(x)/last(x) OVER w are first_value/last_value
_AGGS = {exp.Sum: "sum", exp.Count: "count", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
WINDOW_FUNCS: tuple[type, ...] = (*_RANKING, *_VALUES, *_AGGS, exp.Ntile, exp.Lag, exp.Lead,
                                  exp.NthValue)  # plus sql/holistic.py's HOLISTIC over whole partitions


@dataclass
class WindowState:
    """Window calls of one SELECT, grouped by (PARTITION BY, ORDER BY)."""

    specs: dict[tuple, list[tuple[Field, WindowCall]]] = field(default_factory=dict)

    def add(self, partition: tuple[Expr, ...], order: tuple[SortKey, ...], call: WindowCall,
            name: str, new_cid) -> ColumnRef:
        funcs = self.specs.setdefault((partition, order), [])
        for f, c in funcs:
            if c == call:
                return ColumnRef(f.dtype, f.cid, f.nullable)
        f = Field(new_cid(call.op), name, call.dtype, call.op not in ("row_number", "rank", "dense_rank",
                                                                       "percent_rank", "cume_dist",
                                                                       "count", "count_star"))
        funcs.append((f, call))
        return ColumnRef(f.dtype, f.cid, f.nullable)

    def apply(self, plan: Node) -> Node:
        for (partition, order), funcs in self.specs.items():
            plan = Window(plan, partition, order, tuple(funcs))
        return plan


def window_operands(node: exp.Window) -> list[exp.Expression]:
    """What a window call evaluates per row: its function's arguments, a FILTER condition, the
    PARTITION BY and ORDER BY expressions (not the window function itself)."""
    func = node.this
    out: list[exp.Expression] = []
    while isinstance(func, (exp.IgnoreNulls, exp.RespectNulls, exp.Filter)):
        if isinstance(func, exp.Filter):
            out.append(func.expression)
        func = func.this
    out.extend(func.iter_expressions())
    out.extend(node.args.get("partition_by") or [])
    if node.args.get("order") is not None:
        out.append(node.args["order"])
    return out


def contains_window(node: exp.Expression | None) -> bool:
    return node is not None and node.find(exp.Window) is not None


def resolve_named_windows(tree: exp.Expression) -> exp.Expression:
    """Inline ``WINDOW w AS (...)`` definitions into the ``OVER w`` / ``OVER (w ORDER BY ...)`` calls
    of their SELECT; the call may add an ORDER BY or frame the definition lacks (DuckDB's rules)."""
    for select in list(tree.find_all(exp.Select)):
        defs = {w.this.name.lower(): w for w in select.args.get("windows") or []}
        if not defs:
            continue
        for call in select.find_all(exp.Window):
            if call.parent_select is not select or call.args.get("alias") is None:
                continue
            name = call.args["alias"].name.lower()
            if name not in defs:
                raise SqlError(f"window '{call.args['alias'].name}' is not defined (WINDOW {name} AS (...))")
            base = defs[name]
            for key, what in (("partition_by", "PARTITION BY"), ("order", "ORDER BY")):
                if call.args.get(key) and base.args.get(key):
                    raise SqlError(f"cannot override the {what} clause of window '{name}'")
            for key in ("partition_by", "order", "spec"):
                if not call.args.get(key) and base.args.get(key):
                    call.set(key, base.args[key].copy() if isinstance(base.args[key], exp.Expression)
                             else [e.copy() for e in base.args[key]])
            call.set("alias", None)
        select.set("windows", None)
    return tree


def bind_window(node: exp.Window, ctx, bind) -> Expr:
    """The column a window call yields; ``bind(n)`` binds a sub-expression in ``ctx``."""
    state: WindowState | None = getattr(ctx, "window", None)
    if state is None:
        raise SqlError(f"window functions are not allowed in {ctx.clause}")
    if node.args.get("alias") is not None or node.args.get("first") is not None:
        raise UnsupportedError("named windows (OVER w / WINDOW clause)")
    func = node.this
    ignore_nulls = isinstance(func, exp.IgnoreNulls)
    if isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
        func = func.this
    if isinstance(func, exp.AnyValue):  # any_value OVER: the frame's first non-NULL value (DuckDB)
        func, ignore_nulls = exp.FirstValue(this=func.this.copy()), True
    if contains_window(func):
        raise SqlError("window functions cannot be nested")
    if isinstance(func, exp.Filter):
        from hetdb.sql.rewrites import filter_as_case

        func = filter_as_case(func)
    if isinstance(func, exp.CountIf):  # DuckDB's count_if(c) is sum(CAST(c AS INTEGER)): a HUGEINT, NULL for none
        func = exp.Sum(this=exp.Cast(this=func.this.copy(), to=exp.DataType.build("INT")))
    if isinstance(func, exp.ApproxDistinct):  # exact, as hetdb's approx_count_distinct aggregate
        func = exp.Count(this=exp.Distinct(expressions=[func.this.copy()]))
    to_bool = isinstance(func, exp.LogicalAnd | exp.LogicalOr) or (
        isinstance(func, exp.Min | exp.Max) and _is_bool(func.this, bind))
    if to_bool:  # bool_and/bool_or (min/max of BOOLEANs) OVER (...): min/max of the condition as 0/1
        flag = exp.Cast(this=func.this.copy(), to=exp.DataType.build("INT"))
        func = exp.Min(this=flag) if isinstance(func, exp.LogicalAnd | exp.Min) else exp.Max(this=flag)
    partition = tuple(bind(p) for p in node.args.get("partition_by") or [])
    order_node = node.args.get("order")
    order = tuple(SortKey(bind(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
                  for o in (order_node.expressions if order_node is not None else []))
    if isinstance(func, exp.PercentileCont | exp.PercentileDisc | exp.Quantile) \
            and isinstance(func.expression, exp.Array) and not ignore_nulls:
        # quantile_cont/quantile_disc(x, [q1, ...]) OVER w: the LIST of each quantile's window call
        from hetdb.sql.list_funcs import quantile_list

        parts = []
        for q in func.expression.expressions:
            one = node.copy()
            one.this.set("expression", q.copy())
            parts.append(bind_window(one, ctx, bind))
        return quantile_list(parts)
    temporal = _temporal_quantile(func, bind)
    if temporal is not None:  # median/quantile_cont of DATE/TIMESTAMP: of the microseconds, an instant again
        call = _call(temporal[0], order, node.args.get("spec"), bind)
        ref = state.add(partition, order, call, node.sql(dialect="duckdb"), ctx.binder.new_cid)
        return Call(temporal[1], "timestamp_from_micros", (ref,))
    call = _call(func, order, node.args.get("spec"), bind)
    if ignore_nulls:
        if call.op not in ("lag", "lead", "first_value", "last_value", "nth_value"):
            raise UnsupportedError(f"IGNORE NULLS with {call.op} (lag, lead, first_value, last_value and "
                                   "nth_value take it)")
        call = WindowCall(call.dtype, call.op + "_ignore_nulls", call.args, call.frame)
    ref = state.add(partition, order, call, node.sql(dialect="duckdb"), ctx.binder.new_cid)
    return TY.cast_to(ref, T.BOOL) if to_bool else ref


def _temporal_quantile(func: exp.Expression, bind) -> tuple[exp.Expression, T.DataType] | None:
    """median/quantile_cont of DATE/TIMESTAMP values: the same call of their microseconds (a DOUBLE
    quantile, rounded back to an instant as DuckDB), and the instant's type; None for other calls."""
    if not isinstance(func, exp.Median | exp.PercentileCont) or isinstance(func.this, exp.Distinct):
        return None
    x = bind(func.this)
    if x.dtype.kind not in ("date", "timestamp"):
        return None
    micros = exp.Anonymous(this="epoch_us", expressions=[exp.Cast(this=func.this.copy(), to=exp.DataType.build(
        "TIMESTAMPTZ" if x.dtype.tz else "TIMESTAMP"))])
    other = func.copy()
    other.set("this", micros)
    return other, (T.TIMESTAMPTZ if x.dtype.tz else T.TIMESTAMP)


def _is_bool(arg: exp.Expression | None, bind) -> bool:
    return arg is not None and not isinstance(arg, exp.Distinct | exp.Star) and bind(arg).dtype.kind == "bool"


def _const_int(e: Expr, what: str, minimum: int) -> int | None:
    if isinstance(e, Literal) and e.value is None:
        return None
    if not (isinstance(e, Literal) and e.dtype.is_integer and isinstance(e.value, int)):
        raise UnsupportedError(f"{what} that is not a constant integer")
    if e.value < minimum:
        raise SqlError(f"{what} must be at least {minimum}, got {e.value}")
    return e.value


def _call(func: exp.Expression, order: tuple[SortKey, ...], spec, bind) -> WindowCall:
    name = function_name(func) if isinstance(func, exp.Func) else type(func).__name__
    if type(func) in _RANKING:
        op = _RANKING[type(func)]
        t = T.FLOAT64 if op in ("percent_rank", "cume_dist") else T.INT64
        return WindowCall(t, op)
    if isinstance(func, exp.Ntile):
        n = _const_int(bind(func.this), "the argument of ntile", 1) if func.this is not None else None
        if func.this is None:
            raise SqlError("ntile needs the number of buckets: ntile(n)")
        return WindowCall(T.INT64, "ntile", (Literal(T.INT64, n),))
    if isinstance(func, (exp.Lag, exp.Lead)):
        x = bind(func.this)
        off = func.args.get("offset")
        n = 1 if off is None else _const_int(bind(off), f"the offset of {name}", 0)
        args: list[Expr] = [x, Literal(T.INT64, n)]
        if func.args.get("default") is not None:
            d = bind(func.args["default"])
            t = TY.common_type(x, d, name)
            args = [TY.cast_to(x, t), Literal(T.INT64, n), TY.cast_to(d, t)]
        return WindowCall(args[0].dtype, "lag" if isinstance(func, exp.Lag) else "lead", tuple(args))
    frame = _frame(spec, order)
    if type(func) in _VALUES:
        x = bind(func.this)
        return WindowCall(x.dtype, _VALUES[type(func)], (x,), frame)
    if isinstance(func, exp.NthValue):
        x = bind(func.this)
        n = _const_int(bind(func.args["offset"]), "the position of nth_value", 1)
        return WindowCall(x.dtype, "nth_value", (x, Literal(T.INT64, n)), frame)
    if type(func) in _AGGS:
        return _aggregate(func, frame, bind)
    from hetdb.sql import holistic as HL

    if isinstance(func, HL.HOLISTIC):
        framed = frame != WHOLE_PARTITION
        if framed and (isinstance(func, exp.Median | exp.PercentileCont | exp.Mode | exp.ArgMax | exp.ArgMin)
                       or type(func) in HL.STATS_OPS or HL.FRAMED_HOST_AGGS.get(type(func))) \
                and not isinstance(func.this, exp.Distinct):
            call = HL.statistic_call(func, name, bind)  # over the frame: host loops (window_holistic)
            return WindowCall(call.dtype, call.op, call.args, frame)
        if framed and isinstance(func, exp.GroupConcat | exp.ArrayAgg):
            if isinstance(func, exp.GroupConcat):
                call = HL.string_agg_call(func, bind)
            else:
                from hetdb.sql.lists import array_agg_call

                call = array_agg_call(func, name, bind)
            if call.op.endswith("_distinct"):  # DuckDB's element order over frames is its hash table's
                raise UnsupportedError(f"{name}(DISTINCT ...) OVER a window with ORDER BY or a frame")
            return WindowCall(call.dtype, call.op, call.args, frame)
        if framed:
            raise UnsupportedError(f"{name} OVER a window with ORDER BY or a frame (median, quantile_cont, mode, "
                                   "stddev, variance, arg_max/arg_min, string_agg, array_agg, product and fsum take frames; "
                                   "the other holistic aggregates only whole partitions)")
        if isinstance(func.this, exp.Distinct):
            raise UnsupportedError(f"{name}(DISTINCT ...) OVER a window")
        if isinstance(func, exp.GroupConcat):
            return HL.string_agg_call(func, bind)
        if isinstance(func, exp.ArrayAgg):
            from hetdb.sql.lists import array_agg_call

            return array_agg_call(func, name, bind)
        return HL.statistic_call(func, name, bind)
    from hetdb.sql import bit_aggs as BA
    from hetdb.sql import holistic_stats as HS

    if isinstance(func, (*HS.PAIRED, exp.Kurtosis, exp.Skewness)) and not isinstance(func.this, exp.Distinct):
        args = [func.this] + ([func.expression] if isinstance(func, HS.PAIRED) else [])
        bound = [Literal(T.FLOAT64, None) if TY.is_null_literal(a) else a for a in (bind(e) for e in args)]
        if any(not a.dtype.is_numeric for a in bound):
            raise SqlError(f"{name} needs numbers")
        op = name.lower()
        return WindowCall(T.INT64 if op == "regr_count" else T.FLOAT64, op,
                          tuple(TY.cast_to(a, T.FLOAT64) for a in bound), frame)  # host (window_moments)

    if type(func) in BA.NODES and not isinstance(func.this, exp.Distinct):  # bit_and/or/xor: host loop
        x = bind(func.this)
        x = Literal(T.INT32, None) if TY.is_null_literal(x) else x
        if x.dtype.kind not in ("int32", "int64"):
            raise SqlError(f"{name} needs an INTEGER or BIGINT, got {x.dtype}")
        return WindowCall(x.dtype, {"min": "bit_and", "max": "bit_or", "sum": "bit_xor"}[BA.NODES[type(func)]],
                          (x,), frame)
    if isinstance(func, exp.PercentileDisc | exp.Quantile) and not isinstance(func.expression, exp.Array) \
            and not isinstance(func.this, exp.Distinct):
        x = bind(func.this)
        q = HL._quantile(bind(func.expression), name)
        if TY.is_null_literal(x) or x.dtype.kind in ("bool", "interval", "list"):
            raise UnsupportedError(f"{name} of {x.dtype} values OVER a window")
        return WindowCall(x.dtype, "quantile_disc", (x, Literal(T.FLOAT64, q)), frame)  # host (window_holistic)
    raise UnsupportedError(f"{name} as a window function")


def _aggregate(func: exp.Expression, frame: Frame, bind) -> WindowCall:
    op = _AGGS[type(func)]
    arg = func.this
    if isinstance(arg, exp.Distinct):
        if op not in ("count", "sum", "avg") or len(arg.expressions) != 1:
            raise UnsupportedError(f"{op}(DISTINCT ...) OVER a window (count, sum and avg take DISTINCT)")
        x = bind(arg.expressions[0])
        if op == "count":
            return WindowCall(T.INT64, "count_distinct", (x,), frame)
        if TY.is_null_literal(x):
            x = Literal(T.INT32, None)
        if not x.dtype.is_numeric or x.dtype.is_wide:
            raise UnsupportedError(f"{op}(DISTINCT ...) of {x.dtype} values OVER a window")
        if op == "avg":
            return WindowCall(T.FLOAT64, "avg_distinct", (x,), frame)
        rt = T.FLOAT64 if x.dtype.kind == "float64" else T.INT128 if x.dtype.is_integer else \
            T.wide_decimal(T.MAX_WIDE_PRECISION, x.dtype.scale)
        return WindowCall(rt, "sum_distinct", (x,), frame)
    if isinstance(func, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
        return WindowCall(T.INT64, "count_star", (), frame)
    x = bind(arg)
    t = x.dtype
    if op == "count":
        return WindowCall(T.INT64, "count", (x,), frame)
    if op in ("min", "max"):
        if t.kind == "bool":
            raise UnsupportedError(f"{op} of BOOLEAN values OVER a window")
        return WindowCall(t, op, (x,), frame)
    if TY.is_null_literal(x):
        x, t = Literal(T.INT32, None), T.INT32  # DuckDB: sum(NULL) is a HUGEINT, avg(NULL) a DOUBLE
    if not t.is_numeric:
        raise SqlError(f"{op.upper()} needs a number, got {t}")
    if op == "avg":
        return WindowCall(T.FLOAT64, "avg", (x,), frame)
    # DuckDB's SUM types: HUGEINT of integers, DECIMAL(38, s) of decimals (exec/operators/window_sums.py)
    rt = {"int32": T.INT128, "int64": T.INT128, "int128": T.INT128, "float64": T.FLOAT64}.get(t.kind) \
        or T.wide_decimal(T.MAX_WIDE_PRECISION, t.scale)
    return WindowCall(rt, "sum", (x,), frame)


_EXCLUDES = {"": None, "NO OTHERS": None, "CURRENT ROW": "current_row", "GROUP": "group", "TIES": "ties"}
_SIDES = {("UNBOUNDED", "preceding"): "unbounded_preceding", ("UNBOUNDED", "following"): "unbounded_following"}


def _frame(spec, order: tuple[SortKey, ...]) -> Frame:
    if spec is None:
        return Frame() if order else WHOLE_PARTITION
    kind = str(spec.args.get("kind") or "").lower()
    if kind not in ("rows", "range", "groups"):
        raise UnsupportedError(f"{kind.upper()} window frames (ROWS, RANGE and GROUPS are supported)")
    exclude = str(spec.args["exclude"].name if spec.args.get("exclude") is not None else "").upper()
    if exclude not in _EXCLUDES:
        raise UnsupportedError(f"EXCLUDE {exclude} in a window frame")
    start, start_n = _bound(spec.args.get("start"), spec.args.get("start_side"), kind, order)
    end, end_n = _bound(spec.args.get("end") or "CURRENT ROW", spec.args.get("end_side"), kind, order)
    rank = ["unbounded_preceding", "preceding", "current", "following", "unbounded_following"]
    if start == "unbounded_following" or end == "unbounded_preceding" or rank.index(start) > rank.index(end):
        raise SqlError("window frame start cannot come after its end")
    return Frame(kind, start, end, start_n, end_n, _EXCLUDES[exclude])


def _bound(value, side, kind: str, order: tuple[SortKey, ...]) -> tuple[str, object]:
    side = str(side or "").lower()
    if isinstance(value, str):
        v = value.upper()
        if v == "CURRENT ROW":
            return "current", None
        if v == "UNBOUNDED":
            return _SIDES[(v, side or "preceding")], None
        raise UnsupportedError(f"window frame bound {value}")
    if kind in ("rows", "groups"):
        if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
            raise UnsupportedError(f"a {kind.upper()} frame offset that is not a constant non-negative integer")
        return side, int(value.this)
    if len(order) != 1:
        raise SqlError("a RANGE frame with an offset needs exactly one ORDER BY expression")
    key_t = order[0].expr.dtype
    if isinstance(value, exp.Interval):
        from hetdb.sql.functions_ext import interval_parts

        months, days, micros = interval_parts(value)
        # the key's microseconds; over a TIMESTAMPTZ a day is a calendar day in the session's zone
        # (DuckDB's ICU arithmetic), not 24 hours: only hours and smaller there
        if key_t.kind == "timestamp" and not months and not (key_t.tz and days):
            if days * 86_400_000_000 + micros < 0:
                raise SqlError("a RANGE frame offset must be a non-negative constant")
            return side, days * 86_400_000_000 + micros
        if months or micros or key_t.kind != "date":
            raise UnsupportedError("a RANGE frame INTERVAL offset with months, or other than whole days over a "
                                   "DATE (days, hours ... microseconds over a TIMESTAMP, hours ... over a "
                                   "TIMESTAMPTZ are supported)")
        return side, days
    if not (isinstance(value, exp.Literal) and not value.is_string):
        raise UnsupportedError("a RANGE frame offset that is not a constant number")
    lit = TY.number_literal(value.this)
    if key_t.kind == "date":
        if not lit.dtype.is_integer:
            raise SqlError("a RANGE offset over a DATE must be a whole number of days")
        return side, lit.value
    if not key_t.is_numeric:
        raise SqlError(f"a RANGE frame with an offset needs a numeric or DATE ORDER BY, got {key_t}")
    cast = TY.cast_to(lit, key_t)
    if not isinstance(cast, Literal) or cast.value is None or cast.value < 0:
        raise SqlError("a RANGE frame offset must be a non-negative constant")
    return side, cast.value
