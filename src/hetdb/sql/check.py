"""Refuse early: walk the whole sqlglot tree once and name every construct hetdb does not support.

The walk uses a whitelist of sqlglot node types, so anything new or exotic is refused rather than
silently mis-bound; the error lists every offending construct of the query at once.
"""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import UnsupportedError
from hetdb.sql import first_last as FL
from hetdb.sql import functions_ext as FX
from hetdb.sql import list_funcs as LF
from hetdb.sql import list_lambdas as LL
from hetdb.sql import list_more as LM
from hetdb.sql.bit_aggs import NODES as BIT_AGGS
from hetdb.sql.holistic import HOLISTIC, REWRITTEN
from hetdb.sql.holistic_stats import STATS
from hetdb.sql.names import function_name
from hetdb.sql.window import WINDOW_FUNCS

_SUPPORTED: tuple[type, ...] = (
    exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered,
    exp.Limit, exp.Offset, exp.With, exp.CTE, exp.TableAlias, exp.Table, exp.Identifier, exp.Column,
    exp.Star, exp.Alias, exp.Subquery, exp.Paren, exp.Literal, exp.Null, exp.Boolean, exp.Cast,
    exp.DataType, exp.DataTypeParam, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg,
    exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.And, exp.Or, exp.Not, exp.Is, exp.Between,
    exp.In, exp.Like, exp.ILike, exp.Escape, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Substring,
    exp.Extract, exp.Var, exp.Year, exp.Month, exp.Day, exp.Interval, exp.Sum, exp.Count, exp.Avg,
    exp.Min, exp.Max, exp.Distinct, exp.Exists, exp.Abs, exp.Upper, exp.Lower, exp.Length,
    exp.DPipe, exp.Concat, exp.Sqrt, exp.Ln, exp.Exp, exp.Pow, exp.Round, exp.Floor, exp.Ceil,
    exp.Greatest, exp.Least, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Tuple,
    exp.NullSafeEQ, exp.NullSafeNEQ, exp.Filter, exp.Window, exp.WindowSpec, exp.Qualify, exp.RespectNulls,
    exp.Explode, exp.Unnest, exp.Slice, exp.TimeFromParts, exp.TableSample, exp.Lambda, exp.Columns, exp.Pivot, exp.UnpivotColumns, *LL.NODES, *LM.NODES, *LF.NODES, *WINDOW_FUNCS, *FX.NODES, *HOLISTIC, *STATS, *REWRITTEN, *FL.NODES, *BIT_AGGS, exp.TryCast, exp.Rollup, exp.Cube, exp.GroupingSets, exp.Grouping, exp.GroupingId,
)

# Friendly names for constructs users write often.
_NAMES: dict[type, str] = {
    exp.Lateral: "LATERAL",
    exp.Struct: "struct literals",
    exp.Insert: "INSERT", exp.Create: "CREATE", exp.Delete: "DELETE", exp.Update: "UPDATE",
    exp.Drop: "DROP", exp.RegexpLike: "regular expressions", exp.SimilarTo: "SIMILAR TO",
}


def _describe(node: exp.Expression, sql: str = "") -> str:
    """The construct as the user wrote it: a function by the name used in ``sql`` (sqlglot reads
    several spellings into one node: array_agg and list, range and generate_series), an operator
    or clause by its SQL text."""
    for cls, name in _NAMES.items():
        if isinstance(node, cls):
            return name
    if isinstance(node, exp.Func):
        return f"function {_written_name(node, sql)}()"
    text = node.sql(dialect="duckdb")
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _written_name(node: exp.Func, sql: str) -> str:
    import re

    known = function_name(node)
    try:
        spellings = [n.lower() for n in type(node).sql_names()]
    except Exception:  # noqa: BLE001 - a node class without names of its own
        spellings = []
    low = sql.lower()
    for name in [known, *spellings]:
        if re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", low):
            return name
    return known


def _inside(node: exp.Expression, refused: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if id(parent) in refused:
            return True
        parent = parent.parent
    return False


def unsupported_constructs(tree: exp.Expression, sql: str = "") -> list[str]:
    """Every unsupported construct of ``tree`` (deduplicated, in order of appearance); ``sql`` is
    the text it was parsed from (to name functions as written)."""
    found: list[str] = []

    def add(what: str) -> None:
        if what not in found:
            found.append(what)

    if not isinstance(tree, (exp.Select, exp.Subquery, exp.SetOperation, exp.Values, exp.Pivot)):
        add(f"{_describe(tree, sql)} statements (only SELECT queries are supported)")
    refused: set[int] = set()
    for node in tree.walk():
        if isinstance(node, exp.Anonymous) and (FX.handles(node) or LF.handles(node)) or isinstance(node, exp.IgnoreNulls) and FL.handles(node):
            continue
        if isinstance(node, exp.IgnoreNulls) and isinstance(node.parent, exp.Window):
            continue  # lag/lead/first/last/nth_value(... IGNORE NULLS) OVER (sql/window.py)
        if not isinstance(node, _SUPPORTED):
            if not _inside(node, refused):  # the parts of a refused construct are not named again
                add(_describe(node, sql))
            refused.add(id(node))
            continue
        elif isinstance(node, exp.Join):
            side = (node.side or "").upper()
            kind = (node.kind or "").upper()
            if kind not in ("", "INNER", "OUTER", "CROSS"):
                add(f"{kind} JOIN")
            if side in ("RIGHT", "FULL") and node.args.get("using"):
                # DuckDB's merged USING column is COALESCE(left, right): not modelled for these.
                add(f"{side} JOIN ... USING")
            if node.args.get("method") and str(node.args["method"]).upper() not in ("POSITIONAL", "ASOF"):
                add(f"{node.args['method']} JOIN")
        elif isinstance(node, exp.Like | exp.ILike) and node.args.get("escape") is not None:
            add("LIKE ... ESCAPE")
        elif isinstance(node, exp.Between) and node.args.get("symmetric"):
            add("BETWEEN SYMMETRIC")
        elif isinstance(node, exp.Min | exp.Max | exp.ArgMin | exp.ArgMax) and node.args.get("count") is not None:
            # DuckDB's top-n forms return a LIST of the n smallest/largest values (or their args)
            add(f"{_written_name(node, sql)}(..., n) (the LIST of the top n; use ORDER BY ... LIMIT n or "
                "row_number() OVER (...) <= n)")
    return found


def check_supported(tree: exp.Expression, sql: str = "") -> None:
    """Raise one UnsupportedError naming every unsupported construct of ``tree`` (parsed from ``sql``)."""
    found = unsupported_constructs(tree, sql)
    if found:
        raise UnsupportedError("hetdb does not support: " + "; ".join(found))
