"""Result column names as DuckDB gives them to unaliased select items (its expression printer):
functions lower case (``sum(x)``, ``count_star()``), operators parenthesised (``(a + 1)``), window
specifications and FILTER clauses spelled out. Constructs this printer does not know keep sqlglot's
rendering of what the user wrote."""

from __future__ import annotations

import re

from sqlglot import exp

_BINARY = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.IntDiv: "//", exp.Mod: "%",
           exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
           exp.And: "AND", exp.Or: "OR", exp.DPipe: "||", exp.Like: "~~", exp.ILike: "~~*", exp.Glob: "~~~",
           exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM"}
# Functions sqlglot renders under another name than the one DuckDB users write.
DUCKDB_NAMES = {
    exp.GroupConcat: "string_agg", exp.Median: "median", exp.PercentileCont: "quantile_cont",
    exp.PercentileDisc: "quantile_disc", exp.Stddev: "stddev", exp.StddevSamp: "stddev_samp",
    exp.StddevPop: "stddev_pop", exp.Variance: "var_samp", exp.VariancePop: "var_pop",
    exp.ArgMax: "arg_max", exp.ArgMin: "arg_min", exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or",
    exp.Mode: "mode", exp.ApproxDistinct: "approx_count_distinct", exp.ArrayAgg: "list",
    exp.TimestampTrunc: "date_trunc", exp.RegexpLike: "regexp_matches", exp.TimeToStr: "strftime",
    exp.StrToTime: "strptime", exp.DateFromParts: "make_date", exp.TimestampFromParts: "make_timestamp",
    exp.TimeToUnix: "epoch", exp.StrPosition: "strpos", exp.Rand: "random", exp.Count: "count",
}


# Function names DuckDB's expression printer quotes (they are keywords of its grammar).
_KEYWORD_FUNCTIONS = frozenset((
    "century", "day", "decade", "filter", "first", "hour", "if", "last", "left", "map", "microsecond",
    "millennium", "millisecond", "minute", "mode", "month", "nullif", "overlay", "position", "quarter",
    "range", "replace", "right", "row", "second", "substring", "trim", "week", "year"))
# EXTRACT parts DuckDB's parser reads as keywords (printed upper case, sub-second units plural);
# any other part is printed as written.
_KEYWORD_PARTS = {"year": "YEAR", "month": "MONTH", "day": "DAY", "hour": "HOUR", "minute": "MINUTE",
                  "second": "SECOND", "quarter": "QUARTER", "week": "WEEK", "decade": "DECADE",
                  "century": "CENTURY", "millennium": "MILLENNIUM", "millisecond": "MILLISECONDS",
                  "milliseconds": "MILLISECONDS", "microsecond": "MICROSECONDS", "microseconds": "MICROSECONDS",
                  "years": "YEAR", "months": "MONTH", "days": "DAY", "hours": "HOUR", "minutes": "MINUTE",
                  "seconds": "SECOND"}
# INTERVAL n UNIT as DuckDB's parser rewrites it: to_<units>(CAST(trunc(CAST(n AS DOUBLE)) AS <type>))
_INTERVAL_UNITS = {"year": ("to_years", "INTEGER"), "quarter": ("to_quarters", "INTEGER"),
                   "month": ("to_months", "INTEGER"), "week": ("to_weeks", "INTEGER"),
                   "day": ("to_days", "INTEGER"), "hour": ("to_hours", "BIGINT"),
                   "minute": ("to_minutes", "BIGINT"), "second": ("to_seconds", ""),
                   "millisecond": ("to_milliseconds", ""), "microsecond": ("to_microseconds", "BIGINT")}


def function_name(node: exp.Expression) -> str:
    """The function name as a DuckDB user writes it (``string_agg``, not sqlglot's ``group_concat``;
    the spelling of the query where sql/parse.py recorded it)."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    written = node.meta.get("written", "")
    if written.replace("_", "").isalnum():
        return written.lower()
    for cls, name in DUCKDB_NAMES.items():
        if type(node) is cls:
            return name
    if isinstance(node, exp.Pad):
        return "lpad" if node.args.get("is_left") else "rpad"
    text = node.sql(dialect="duckdb")
    head = text.split("(", 1)[0]
    return head.lower() if head and head.replace("_", "").isalnum() else node.sql_name().lower()


def _args(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    return [v for k, v in node.args.items() if isinstance(v, exp.Expression) and k != "over"] + [
        x for k, v in node.args.items() if isinstance(v, list) for x in v if isinstance(x, exp.Expression)]


def name_of(node: exp.Expression) -> str:  # noqa: C901 - one case per construct
    n = name_of
    if isinstance(node, exp.SHA2) and function_name(node) == "sha256":  # sqlglot adds length=256
        return f"sha256({n(node.this)})"
    if isinstance(node, exp.Paren):
        return n(node.this)
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Literal):
        return f"'{node.this}'" if node.is_string else str(node.this)
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like | exp.ILike):
        like = node.this
        fn = "ilike_escape" if isinstance(like, exp.ILike) else "like_escape"
        text = f"{fn}({n(like.this)}, {n(like.expression)}, {n(node.expression)})"
        return f"(NOT {text})" if like.args.get("negate") else text
    like = node.this if isinstance(node, exp.Not) else node
    if isinstance(like, exp.Like | exp.ILike) and (like is not node or like.args.get("negate")):
        op = "!~~" if isinstance(like, exp.Like) else "!~~*"
        return f"({n(like.this)} {op} {n(like.expression)})"
    if type(node) in _BINARY:
        return f"({n(node.this)} {_BINARY[type(node)]} {n(node.expression)})"
    if isinstance(node, exp.Neg):
        inner = node.this.unnest()
        if isinstance(inner, exp.Literal) and not inner.is_string:  # DuckDB folds -1 into a constant
            return f"-{inner.this}"
        return f"(-({n(node.this)}))"
    if isinstance(node, exp.SimilarTo):
        return f"regexp_full_match({n(node.this)}, {n(node.expression)})"
    if isinstance(node, exp.StrPosition) and "written" not in node.meta:  # POSITION(x IN s)
        return f'"position"({n(node.this)}, {n(node.args["substr"])})'
    if isinstance(node, exp.Not):
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return f"({n(inner.this)} IS NOT NULL)"
        return f"(NOT {n(inner)})"
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return f"({n(node.this)} IS NULL)"
    if isinstance(node, exp.Between):
        return f"({n(node.this)} BETWEEN {n(node.args['low'])} AND {n(node.args['high'])})"
    if isinstance(node, exp.In) and node.expressions:
        return f"({n(node.this)} IN ({', '.join(n(x) for x in node.expressions)}))"
    if _is_count_star(node):
        return "count_star()"
    if isinstance(node, exp.Pow) and "operator" in node.meta:
        return f"({n(node.this)} {node.meta['operator']} {n(node.expression)})"
    if isinstance(node, exp.AtTimeZone):
        return f"timezone({n(node.args['zone'])}, {n(node.this)})"
    if isinstance(node, exp.Case):
        return _case(node)
    if isinstance(node, exp.Distinct):
        return "DISTINCT " + ", ".join(n(x) for x in node.expressions)
    if isinstance(node, exp.Filter):
        where = node.expression.this if isinstance(node.expression, exp.Where) else node.expression
        return f"{n(node.this)} FILTER (WHERE {n(where)})"
    if isinstance(node, exp.Window):
        return _window(node)
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.AnyValue):  # sqlglot's any_value
        return n(node.this)
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.parent, exp.Window):  # lag(x, 1 IGNORE NULLS)
        return n(node.this)[:-1] + " IGNORE NULLS)"
    if isinstance(node, exp.Coalesce):
        return f"COALESCE({', '.join(n(x) for x in [node.this, *node.expressions])})"
    if isinstance(node, exp.Cast) and isinstance(node.to, exp.DataType):
        return _cast(node)
    if isinstance(node, exp.Interval):
        return _interval(node)
    if isinstance(node, exp.CurrentDate | exp.CurrentTimestamp) and not node.args:
        if node.meta.get("written", "").lower().startswith("today"):
            return "today()"
        return "current_date" if isinstance(node, exp.CurrentDate) else "current_timestamp"
    if isinstance(node, exp.RegexpExtract | exp.RegexpExtractAll):
        # sqlglot adds the default group 0 (a literal without a position); DuckDB prints what was written
        args = [a for a in _args(node) if not (a is node.args.get("group") and "start" not in a.meta)]
        return f"{function_name(node)}({', '.join(n(a) for a in args)})"
    if isinstance(node, exp.GroupConcat):
        return _string_agg(node)
    if isinstance(node, exp.Log) and function_name(node) in ("log2", "log10"):
        return f"{function_name(node)}({n(node.expression)})"
    if isinstance(node, exp.UnixToTime) and function_name(node) in ("epoch_ms", "epoch_us", "epoch_ns",
                                                                      "make_timestamp"):
        return f"{function_name(node)}({n(node.this)})"  # sqlglot adds the scale as an argument
    if isinstance(node, exp.WithinGroup) and isinstance(node.expression, exp.Order):
        fn = {exp.PercentileCont: "quantile_cont", exp.PercentileDisc: "quantile_disc"}.get(type(node.this))
        keys = [order_key(o) for o in node.expression.expressions]
        if fn is not None:
            return f"{fn}({n(node.this.this)} ORDER BY {', '.join(keys)})"
    if isinstance(node, exp.Grouping | exp.GroupingId):  # DuckDB prints grouping_id() as GROUPING()
        return f"GROUPING({', '.join(n(x) for x in node.expressions)})"
    if isinstance(node, (exp.Subquery, exp.Exists, exp.Star)):
        return node.sql(dialect="duckdb")
    if isinstance(node, exp.Extract):
        part = node.this.name.lower()
        return f"date_part('{_KEYWORD_PARTS.get(part, part)}', {n(node.expression)})"
    if isinstance(node, exp.TimestampTrunc | exp.DateTrunc) and isinstance(node.args.get("unit"), exp.Var):
        return f"date_trunc('{node.args['unit'].name.lower()}', {n(node.this)})"
    if isinstance(node, exp.DateDiff) and isinstance(node.args.get("unit"), exp.Var):
        return f"{function_name(node)}('{node.args['unit'].name.lower()}', {n(node.expression)}, {n(node.this)})"
    if isinstance(node, exp.Array | exp.Explode | exp.Bracket | exp.ArraySort):
        return _list_name(node)
    if isinstance(node, exp.Lambda):
        return f"(lambda {', '.join(i.name for i in node.expressions)}: {n(node.this)})"
    if isinstance(node, exp.Identifier):  # a lambda's parameter in its body
        return node.name
    if isinstance(node, exp.Func):
        name = function_name(node)
        quoted = f'"{name}"' if name in _KEYWORD_FUNCTIONS else name
        return f"{quoted}({', '.join(n(a) for a in _args(node))})"
    return node.sql(dialect="duckdb")


def _list_name(node: exp.Expression) -> str:
    """List constructs as DuckDB prints them: ``list_value(1, 2)``, ``unnest(l)``, ``l[1]``, ``l[1:2]``,
    ``list_sort(l, 'DESC')``."""
    n = name_of
    if isinstance(node, exp.Array):
        return f"list_value({', '.join(n(x) for x in node.expressions)})"
    if isinstance(node, exp.Explode):
        return f"unnest({n(node.this)})"
    if isinstance(node, exp.Bracket):
        sub = node.expressions[0] if len(node.expressions) == 1 else None
        if isinstance(sub, exp.Slice):
            lo, hi = sub.this, sub.args.get("expression")
            return f"{n(node.this)}[{n(lo) if lo is not None else ''}:{n(hi) if hi is not None else ''}]"
        return f"{n(node.this)}[{', '.join(n(x) for x in node.expressions)}]"
    name = function_name(node)
    args = [n(node.this)]
    desc = node.args.get("asc") is not None and not node.args["asc"].this
    if name in ("list_sort", "array_sort") and (desc or node.args["nulls_first"].this):
        args.append("'DESC'" if desc else "'ASC'")
    if node.args["nulls_first"].this:
        args.append("'NULLS FIRST'")
    return f"{name}({', '.join(args)})"


def _cast(node: exp.Cast) -> str:
    kind = "TRY_CAST" if isinstance(node, exp.TryCast) else "CAST"
    to = node.to.sql(dialect="duckdb")
    to = {"INT": "INTEGER", "TEXT": "VARCHAR", "REAL": "FLOAT"}.get(to, to)
    return f"{kind}({name_of(node.this)} AS {to})"


def _interval(node: exp.Interval) -> str:
    value, unit = node.this, node.args.get("unit")
    if unit is None or value is None:
        return f"CAST({name_of(value) if value is not None else 'NULL'} AS INTERVAL)"
    written = value.meta.get("written", "") if isinstance(value, exp.Literal) else ""
    if written.startswith("'") and not written.strip("'").strip().lstrip("-").replace(".", "").isdigit():
        return f"CAST({written} AS INTERVAL)"  # INTERVAL '2 hours', which sqlglot splits
    u = unit.name.lower().rstrip("s")
    if u not in _INTERVAL_UNITS:
        return node.sql(dialect="duckdb")
    fn, int_type = _INTERVAL_UNITS[u]
    # sqlglot turns INTERVAL 1 DAY into INTERVAL '1' DAY: only a literal the user quoted has a text
    v = name_of(value) if not (isinstance(value, exp.Literal) and value.is_string and not written) \
        else str(value.this)
    inner = f"CAST({v} AS DOUBLE)"
    return f"{fn}({inner})" if not int_type else f"{fn}(CAST(trunc({inner}) AS {int_type}))"


def _string_agg(node: exp.GroupConcat) -> str:
    arg, order = node.this, ""
    if isinstance(arg, exp.Order):
        keys = [order_key(o) for o in arg.expressions]
        order, arg = " ORDER BY " + ", ".join(keys), arg.this
    sep = node.args.get("separator")
    written = re.match(r"\s*(\w+)", node.meta.get("written", ""))
    fn = written.group(1).lower() if written else "string_agg"
    return f"{fn}({name_of(arg)}{', ' + name_of(sep) if sep is not None else ''}{order})"


def _window(node: exp.Window) -> str:
    func = node.this
    parts = []
    if node.args.get("partition_by"):
        parts.append("PARTITION BY " + ", ".join(name_of(p) for p in node.args["partition_by"]))
    order = node.args.get("order")
    if order is not None:
        parts.append("ORDER BY " + ", ".join(order_key(o) for o in order.expressions))
    spec = node.args.get("spec")
    if spec is not None:
        parts.append(_frame(spec))
    inner = func.this if isinstance(func, exp.Filter) else func
    text = "count()" if _is_count_star(inner) else name_of(inner)
    if text.startswith('"'):  # DuckDB quotes a keyword function (``"mode"(x)``) but not OVER a window
        text = text[1:].replace('"', "", 1)
    if isinstance(func, exp.Filter):  # DuckDB: count() FILTER (WHERE ...) OVER (...)
        where = func.expression.this if isinstance(func.expression, exp.Where) else func.expression
        text += f" FILTER (WHERE {name_of(where)})"
    return f"{text} OVER ({' '.join(parts)})"


def _is_count_star(node: exp.Expression) -> bool:
    return isinstance(node, exp.Count) and (node.this is None or isinstance(node.this, exp.Star))


def order_key(o: exp.Ordered) -> str:
    """An ORDER BY key as DuckDB prints it: the direction and NULLS order only where written."""
    written = o.meta.get("written_order")
    if written is None:  # not recorded (sql/parse.py): what the flags say
        written = ("DESC" if o.args.get("desc") else "") + (
            " NULLS FIRST" if o.args.get("nulls_first") and not o.args.get("desc") else "")
    return f"{name_of(o.this)} {written.strip()}".rstrip()


def _frame(spec: exp.WindowSpec) -> str:
    """ROWS/RANGE/GROUPS BETWEEN ... AND ... (DuckDB prints RANGE over the whole partition as ROWS)."""
    kind = str(spec.args.get("kind") or "").upper()

    def bound(value, side) -> str:
        if isinstance(value, str):
            return value.upper() + (f" {str(side).upper()}" if value.upper() == "UNBOUNDED" else "")
        return f"{name_of(value)} {str(side).upper()}"
    start = bound(spec.args.get("start"), spec.args.get("start_side"))
    end_value = spec.args.get("end")
    end = bound(end_value, spec.args.get("end_side")) if end_value is not None else "CURRENT ROW"
    if kind == "RANGE" and start == "UNBOUNDED PRECEDING" and end == "UNBOUNDED FOLLOWING":
        kind = "ROWS"
    text = f"{kind} BETWEEN {start} AND {end}"
    exclude = str(spec.args.get("exclude") or "").upper()
    return text + (f" EXCLUDE {exclude}" if exclude and exclude != "NO OTHERS" else "")  # DuckDB omits NO OTHERS


def _case(node: exp.Case) -> str:
    """``CASE  WHEN ((v > 0)) THEN (1) ELSE NULL END``: each condition and result in parentheses."""
    base = node.this
    whens = []
    for w in node.args.get("ifs") or []:
        cond = f"({name_of(base)} = {name_of(w.this)})" if base is not None else name_of(w.this)
        whens.append(f" WHEN ({cond}) THEN ({name_of(w.args['true'])})")
    default = node.args.get("default")
    return f"CASE {''.join(whens)} ELSE {name_of(default) if default is not None else 'NULL'} END"
