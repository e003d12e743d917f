"""LIST values as keys and in comparisons, by their order-preserving text (exec/list_keys.py):
``GROUP BY l``, ``SELECT DISTINCT l``, UNION / INTERSECT / EXCEPT over lists, ``PARTITION BY l``,
``ORDER BY l``, joins on lists, ``count(DISTINCT l)`` and ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, IS [NOT] DISTINCT
FROM between lists, with DuckDB's semantics (NULL elements equal and last, shorter prefixes first).

``key_rewrite(plan)`` runs after binding: a Sort/TopN/Window/Join key that is a LIST becomes its
key text; an Aggregate grouping by a LIST groups by its key text and returns the list itself as
``any(l)`` of the group (a Project restores the column order)."""

from __future__ import annotations

import dataclasses

from hetdb import types as T
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Field, Literal, SortKey
from hetdb.plan.logical import Aggregate, Join, Node, Project, Sort, TopN
from hetdb.plan.rewrite import bottom_up
from hetdb.plan.window import Window


def sort_key(e: Expr) -> Expr:
    return Call(T.STRING, "list_sort_key", (e,)) if e.dtype.kind == "list" else e


def compare(op: str, a: Expr, b: Expr) -> Expr:
    """``a <op> b`` for LIST operands (cast to their common LIST type first)."""
    from hetdb.sql import typing as TY
    from hetdb.sql.list_funcs import cast_list, common_type, list_arg

    if any(TY.is_null_literal(x) and x.dtype.kind != "list" for x in (a, b)):
        return Literal(T.BOOL, None)
    a, b = list_arg(a, "a comparison"), list_arg(b, "a comparison")
    t = common_type([a.dtype, b.dtype], "a comparison")
    return Call(T.BOOL, op, (sort_key(cast_list(a, t)), sort_key(cast_list(b, t))))


def _sort_keys(keys: tuple[SortKey, ...]) -> tuple[SortKey, ...]:
    return tuple(dataclasses.replace(k, expr=sort_key(k.expr)) for k in keys)


def _aggregate(node: Aggregate) -> Node:
    # count(DISTINCT l) counts the distinct key texts
    node = dataclasses.replace(node, aggs=tuple(
        (f, dataclasses.replace(a, arg=sort_key(a.arg)) if a.distinct and a.op == "count" and a.arg is not None else a)
        for f, a in node.aggs))
    if not any(e.dtype.kind == "list" for _, e in node.keys):
        return node
    keys, picks = [], []
    for f, e in node.keys:
        if e.dtype.kind == "list":
            keys.append((Field(f"{f.cid}~key", f.name, T.STRING, f.nullable), sort_key(e)))
            picks.append((f, AggCall(f.dtype, "any", e)))
        else:
            keys.append((f, e))
    grouped = Aggregate(node.input, tuple(keys), tuple(picks) + node.aggs)
    return Project(grouped, tuple((f, ColumnRef(f.dtype, f.cid, f.nullable)) for f in node.schema))


def _node(node: Node) -> Node:
    if isinstance(node, Aggregate):
        return _aggregate(node)
    if isinstance(node, Sort | TopN):
        return dataclasses.replace(node, keys=_sort_keys(node.keys))
    if isinstance(node, Window):
        return dataclasses.replace(node, partition=tuple(sort_key(e) for e in node.partition),
                                   order=_sort_keys(node.order))
    if isinstance(node, Join):
        return dataclasses.replace(node, left_keys=tuple(sort_key(e) for e in node.left_keys),
                                   right_keys=tuple(sort_key(e) for e in node.right_keys))
    return node


def key_rewrite(plan: Node) -> Node:
    return bottom_up(plan, _node)
