"""constant_folding: simplify boolean logic with constant operands (SQL three-valued) and drop
filters that are always TRUE. Arithmetic on literals was already folded by the binder."""

from __future__ import annotations

import dataclasses

from hetdb import types as T
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.plan.exprutil import transform
from hetdb.plan.logical import Filter, Join, Node, Scan
from hetdb.plan.rewrite import bottom_up

NAME = "constant_folding"


def _lit(e: Expr) -> object:
    return e.value if isinstance(e, Literal) and e.dtype == T.BOOL else ...


def _fold_node(e: Expr) -> Expr:
    if not isinstance(e, Call):
        return e
    if e.op == "not" and isinstance(e.args[0], Literal):
        v = e.args[0].value
        return Literal(T.BOOL, None if v is None else not v)
    if e.op in ("and", "or"):
        a, b = e.args
        va, vb = _lit(a), _lit(b)
        absorb, ident = (False, True) if e.op == "and" else (True, False)
        if va is absorb or vb is absorb:
            return Literal(T.BOOL, absorb)
        if va is ident:
            return b
        if vb is ident:
            return a
        if va is None and vb is None:
            return Literal(T.BOOL, None)
    return e


def fold(e: Expr) -> Expr:
    """``e`` with constant boolean sub-expressions simplified (bottom-up)."""
    def go(x: Expr) -> Expr:
        if isinstance(x, Call):
            x = dataclasses.replace(x, args=tuple(go(a) for a in x.args))
            return _fold_node(x)
        return transform(x, lambda y: None if y is x else go(y)) if x.children() else x
    return go(e)


def run(plan: Node, ctx) -> Node:
    def fix(node: Node) -> Node:
        if isinstance(node, Filter):
            p = fold(node.predicate)
            if isinstance(p, Literal) and p.value is True:
                return node.input
            return dataclasses.replace(node, predicate=p)
        if isinstance(node, Join) and node.residual is not None:
            r = fold(node.residual)
            return dataclasses.replace(node, residual=None if isinstance(r, Literal) and r.value is True
                                       else r)
        if isinstance(node, Scan) and node.filters:
            fs = tuple(f for f in (fold(x) for x in node.filters)
                       if not (isinstance(f, Literal) and f.value is True))
            return dataclasses.replace(node, filters=fs)
        return node

    return bottom_up(plan, fix)
