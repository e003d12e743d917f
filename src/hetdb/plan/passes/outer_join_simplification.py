"""outer_join_simplification: an outer join whose NULL-extended rows a filter above removes anyway
becomes the join without them (full -> left/right/inner, left/right -> inner).

A row that an outer join NULL-extends has every column of the other side NULL; a conjunct above that
is NULL or FALSE whenever one of those columns is NULL (``t1.x BETWEEN -10 AND 0``, an inner join's
key ``t0.k = t2.k``) removes it. The filter stays where it is, so the answer is the same; what changes
is that the simplified join can be reordered with the inner joins around it and filters pushed into
both its sides, as DuckDB's plans do. Walking down from the root, the columns such conjuncts reject
pass through filters, projections (of NULL-propagating expressions), sorts, inner joins and the
preserved side of outer, semi, anti and mark joins; anything else (aggregates, limits, windows,
unions) starts afresh.
"""

from __future__ import annotations

import dataclasses

from hetdb.plan.expr import Call, Cast, ColumnRef, Expr, Literal
from hetdb.plan.logical import Filter, Join, Node, Project, Sort
from hetdb.plan.rewrite import with_inputs

NAME = "outer_join_simplification"

# operators that return NULL whenever an argument is NULL
_STRICT_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "add", "sub", "mul", "div", "intdiv",
                         "mod", "neg"})
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _strict_columns(e: Expr) -> frozenset[str] | None:
    """The columns of ``e`` when ``e`` is NULL as soon as any of them is NULL, else None."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Call) and x.op in _STRICT_OPS or isinstance(x, Cast):
            stack.extend(x.children())
        elif not (isinstance(x, ColumnRef) or isinstance(x, Literal) and x.value is not None):
            return None
    return e.columns()


def _rejected(pred: Expr | None) -> frozenset[str]:
    """Columns whose NULL makes ``pred`` NULL or FALSE."""
    if pred is None:
        return frozenset()
    if isinstance(pred, Call) and pred.op == "and":
        return frozenset().union(*(_rejected(a) for a in pred.args))
    if isinstance(pred, Call) and pred.op == "or":
        return frozenset.intersection(*(_rejected(a) for a in pred.args))
    if isinstance(pred, Call) and pred.op in ("not", "is_not_null"):
        return _strict_columns(pred.args[0]) or frozenset()
    if isinstance(pred, Call) and pred.op in _COMPARISONS:
        return _strict_columns(pred) or frozenset()
    return frozenset()


def _cids(node: Node) -> frozenset[str]:
    return frozenset(f.cid for f in node.schema)


def _simplified_kind(node: Join, rejected: frozenset[str]) -> str:
    left_gone = bool(rejected & _cids(node.left))    # rows with the left side NULL-extended go
    right_gone = bool(rejected & _cids(node.right))  # rows with the right side NULL-extended go
    if node.kind == "full":
        return {(True, True): "inner", (True, False): "left", (False, True): "right"}.get(
            (left_gone, right_gone), "full")
    if node.kind == "left" and right_gone or node.kind == "right" and left_gone:
        return "inner"
    return node.kind


def _walk(node: Node, rejected: frozenset[str]) -> Node:
    if isinstance(node, Filter):
        return dataclasses.replace(node, input=_walk(node.input, rejected | _rejected(node.predicate)))
    if isinstance(node, Sort):
        return dataclasses.replace(node, input=_walk(node.input, rejected))
    if isinstance(node, Project):
        down: frozenset[str] = frozenset()
        for f, e in node.exprs:
            cols = _strict_columns(e) if f.cid in rejected else None
            down |= cols or frozenset()
        return dataclasses.replace(node, input=_walk(node.input, down))
    if isinstance(node, Join):
        kind = _simplified_kind(node, rejected)
        if kind in ("inner", "cross"):
            keys = [_strict_columns(k) or frozenset() for k in node.left_keys + node.right_keys]
            both = rejected.union(*keys) | _rejected(node.residual)
            left, right = _walk(node.left, both), _walk(node.right, both)
        elif kind == "right":
            left, right = _walk(node.left, frozenset()), _walk(node.right, rejected)
        elif kind == "full":
            left, right = _walk(node.left, frozenset()), _walk(node.right, frozenset())
        else:  # left, semi, anti, mark, single: the left rows are output as they are
            left, right = _walk(node.left, rejected), _walk(node.right, frozenset())
        return dataclasses.replace(node, left=left, right=right, kind=kind)
    return with_inputs(node, tuple(_walk(k, frozenset()) for k in node.inputs()))


def run(plan: Node, ctx) -> Node:
    return _walk(plan, frozenset())
