"""LIST results: ``array_agg(x [ORDER BY ...])`` (also spelled ``list``) grouped, over the whole
table, and OVER whole partitions.

A LIST value is computed on the host by the window operator (each group's values, NULLs included,
in the ORDER BY given or input order) and taken by the hash aggregation. LIST values (these, list
literals, string_split, ...) can be returned: selected, passed through subqueries and CTEs, next to
ORDER BY/LIMIT on other columns, passed to the list functions of sql/list_funcs.py and unnest, and
compared or used as keys through their key text (sql/list_keys.py, applied before the check). Other
functions and aggregates over LIST values are refused at bind time (``refuse_list_operands``), as
are lists stored by CREATE TABLE.
Queries with LIST values run on the CPU (a GPU connection says so in its statistics).
"""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Lambda, Literal
from hetdb.plan.logical import Aggregate, Filter, Join, Node, Project, Scan, Sort, TopN
from hetdb.plan.window import WHOLE_PARTITION, Window, WindowCall
from hetdb.sql import typing as TY
from hetdb.sql.holistic import order_keys
from hetdb.sql.list_funcs import LIST_OPS

_ONLY = "LIST values can only be returned or passed to list functions"


def array_agg_call(node: exp.ArrayAgg, name: str, b) -> WindowCall:
    """array_agg(x [ORDER BY ...]): args (x, key flags, *keys), the LIST of x's type."""
    arg, keys, flags = order_keys(node.this, b)
    distinct = isinstance(arg, exp.Distinct)
    if distinct:
        if len(arg.expressions) != 1:
            raise UnsupportedError(f"{name}(DISTINCT ...) of several arguments")
        arg = arg.expressions[0]
    x = b(arg)
    if TY.is_null_literal(x):
        raise UnsupportedError(f"{name} of a NULL constant (give it a type: CAST(NULL AS ...))")
    if x.dtype.kind == "list" or x.dtype.tz:
        raise UnsupportedError(f"{name} of {x.dtype} values")
    return WindowCall(T.list_of(x.dtype), "array_agg_distinct" if distinct else "array_agg",
                      (x, Literal(T.STRING, flags), *keys), WHOLE_PARTITION)


def _lists_in(e: Expr | None) -> bool:
    """``e`` computes something from a LIST value other than with the list functions of
    sql/list_funcs.py (a bare column reference only passes it on)."""
    if e is None:
        return False
    for node in _walk(e):
        if isinstance(node, ColumnRef | AggCall | Literal | Lambda) or (isinstance(node, Call) and node.op in LIST_OPS):
            continue
        if node.dtype.kind == "list" or any(c.dtype.kind == "list" for c in node.children()):
            return True
    return False


def _walk(e: Expr):
    """Every node of ``e`` (an explicit stack: nested ``yield from`` costs each node its depth, which
    made a 20,000-term OR chain take 50 s here)."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children())


def refuse_list_operands(node: Node) -> None:
    """Raise UnsupportedError where the plan does more with a LIST value than return it."""
    for k in node.inputs():
        refuse_list_operands(k)
    exprs: list[Expr] = []
    keys: list[Expr] = []
    if isinstance(node, Filter):
        exprs.append(node.predicate)
    elif isinstance(node, Project):
        exprs.extend(e for _, e in node.exprs)
    elif isinstance(node, Aggregate):
        keys.extend(e for _, e in node.keys)
        exprs.extend(a.arg for _, a in node.aggs if a.arg is not None and a.op != "any")
        if any(a.dtype.kind == "list" and a.op != "any" for _, a in node.aggs):
            raise UnsupportedError(f"{_ONLY} (no aggregates over them)")
    elif isinstance(node, Join):
        keys.extend(node.left_keys + node.right_keys)
        exprs.append(node.residual)
    elif isinstance(node, (Sort, TopN)):
        keys.extend(k.expr for k in node.keys)
    elif isinstance(node, Scan):
        exprs.extend(node.filters)
    elif isinstance(node, Window):
        keys.extend(node.partition)
        keys.extend(k.expr for k in node.order)
        exprs.extend(a for _, c in node.funcs if not c.op.startswith("array_agg") for a in c.args)
    if any(k.dtype.kind == "list" for k in keys):
        raise UnsupportedError(f"{_ONLY} (not GROUP BY, ORDER BY, PARTITION BY, DISTINCT or join keys)")
    if any(_lists_in(e) for e in exprs):
        raise UnsupportedError(f"{_ONLY} (no functions, comparisons or casts over them)")
