"""single_join_pushdown: a filter on an uncorrelated scalar subquery's value moves, with the single
join that brings the value, below the inner joins to the input whose columns it compares.

``Filter(x = s, (A JOIN B) SINGLE S)`` with ``x`` from A becomes ``(Filter(x = s, A SINGLE S)) JOIN B``:
TPC-H q15 joined all 100k suppliers (and their name, address and phone strings) to the revenue view
and then kept the one supplier with the highest revenue; now one revenue row joins supplier.

Correct because S is a global aggregate (exactly one row, so the single join is a cross join with
one row that never fails) and an inner join only pairs rows: filtering A's rows before pairing
keeps the same pairs. Projections on the way down that only pass columns through are kept; the
conjuncts of the filter that do not read S stay where they are.
"""

from __future__ import annotations

import dataclasses

from hetdb.plan.expr import ColumnRef
from hetdb.plan.exprutil import and_all, conjuncts
from hetdb.plan.logical import Aggregate, Filter, Join, Node, Project
from hetdb.plan.rewrite import bottom_up, with_inputs

NAME = "single_join_pushdown"


def _cids(node: Node) -> frozenset[str]:
    return frozenset(f.cid for f in node.schema)


def _one_row(node: Node) -> bool:
    """The subquery side makes exactly one row (a global aggregate, through projections)."""
    while isinstance(node, Project):
        node = node.input
    return isinstance(node, Aggregate) and not node.keys


def _passes_through(node: Node) -> bool:
    return isinstance(node, Project) and all(isinstance(e, ColumnRef) and e.cid == f.cid for f, e in node.exprs)


def _ref(f) -> ColumnRef:
    return ColumnRef(f.dtype, cid=f.cid, nullable=f.nullable)


def _target(node: Node, needed: frozenset[str]) -> list[int]:
    """The path (input indexes) from ``node`` to the deepest input below inner joins and
    pass-through projections that holds every ``needed`` column."""
    path: list[int] = []
    while True:
        if _passes_through(node):
            path.append(0)
            node = node.input
        elif isinstance(node, Join) and node.kind == "inner" and needed <= _cids(node.left):
            path.append(0)
            node = node.left
        elif isinstance(node, Join) and node.kind == "inner" and needed <= _cids(node.right):
            path.append(1)
            node = node.right
        else:
            return path


def _replace(node: Node, path: list[int], make, carried: tuple) -> Node:
    """``node`` with the input at ``path`` replaced by ``make(input)``; the projections on the way
    pass ``carried`` (the subquery's fields) up as well."""
    if not path:
        return make(node)
    kids = list(node.inputs())
    kids[path[0]] = _replace(kids[path[0]], path[1:], make, carried)
    out = with_inputs(node, tuple(kids))
    if isinstance(out, Project):
        out = dataclasses.replace(out, exprs=out.exprs + tuple((f, _ref(f)) for f in carried))
    return out


def _push(node: Node) -> Node:
    if not (isinstance(node, Filter) and isinstance(node.input, Join)):
        return node
    single = node.input
    if single.kind != "single" or single.left_keys or single.residual is not None or not _one_row(single.right):
        return node
    s_cols = _cids(single.right)
    moving = [c for c in conjuncts(node.predicate) if c.columns() & s_cols]
    staying = [c for c in conjuncts(node.predicate) if not c.columns() & s_cols]
    if not moving:
        return node
    needed = frozenset().union(*(c.columns() for c in moving)) - s_cols
    path = _target(single.left, needed)
    crossed = [n for n in _walk(single.left, path) if isinstance(n, Join)]
    if not crossed:  # (through projections alone nothing is gained)
        return node

    def make(t: Node) -> Node:
        return Filter(dataclasses.replace(single, left=t), and_all(moving))

    pushed = _replace(single.left, path, make, single.right.schema)
    if staying:
        pushed = Filter(pushed, and_all(staying))
    if pushed.schema != single.schema:  # (the same columns, in the single join's order)
        pushed = Project(pushed, tuple((f, _ref(f)) for f in single.schema))
    return pushed


def _walk(node: Node, path: list[int]) -> list[Node]:
    """The nodes on ``path`` from ``node``, the last one's input excluded."""
    out = []
    for i in path:
        out.append(node)
        node = node.inputs()[i]
    return out


def run(plan: Node, ctx) -> Node:
    return bottom_up(plan, _push)
