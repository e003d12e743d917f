"""predicate_pushdown: move filter conjuncts as close to the data as their semantics allow.

Through Project (substituting the projected expressions), Sort, and Aggregate (conjuncts over group
keys only); into both sides of inner joins, where an equality between the sides becomes a join key
(a cross join with such a predicate becomes an inner join) and other two-sided conjuncts the residual;
into the preserved side of left/right/semi/anti/mark/single joins (none of a full join); finally into ``Scan.filters`` where
zone maps prune pages. Never below a Limit/TopN (that would change which rows are kept).
"""

from __future__ import annotations

import dataclasses

from hetdb.plan.expr import Expr
from hetdb.plan.exprutil import and_all, conjuncts, factor_or, split_join_condition, substitute
from hetdb.plan.logical import Aggregate, Filter, Join, Node, Project, Scan, Sort
from hetdb.plan.rewrite import with_inputs

NAME = "predicate_pushdown"


def _cids(node: Node) -> frozenset[str]:
    return frozenset(f.cid for f in node.schema)


def _wrap(node: Node, preds: list[Expr]) -> Node:
    return Filter(node, and_all(preds)) if preds else node


def _push(node: Node, preds: list[Expr]) -> Node:
    if isinstance(node, Filter):
        return _push(node.input, preds + conjuncts(factor_or(node.predicate)))
    if isinstance(node, Scan):
        const = [p for p in preds if not p.columns()]
        mine = [p for p in preds if p.columns()]
        new = tuple(node.filters) + tuple(p for p in mine if p not in node.filters)
        return _wrap(dataclasses.replace(node, filters=new), const)
    if isinstance(node, Project):
        mapping = {f.cid: e for f, e in node.exprs}
        down = [substitute(p, mapping) for p in preds]
        return dataclasses.replace(node, input=_push(node.input, down))
    if isinstance(node, Sort):
        return dataclasses.replace(node, input=_push(node.input, preds))
    if isinstance(node, Aggregate):
        keys = {f.cid: e for f, e in node.keys}
        # A constant conjunct over a global aggregate must stay above it (it filters the one row).
        down = [p for p in preds if p.columns() and p.columns() <= keys.keys()]
        up = [p for p in preds if not any(p is d for d in down)]
        new = dataclasses.replace(node, input=_push(node.input, [substitute(p, keys) for p in down]))
        return _wrap(new, up)
    if isinstance(node, Join):
        return _push_join(node, preds)
    kids = tuple(_push(k, []) for k in node.inputs())
    return _wrap(with_inputs(node, kids), preds)


def _push_join(node: Join, preds: list[Expr]) -> Node:
    lc, rc = _cids(node.left), _cids(node.right)
    left_p: list[Expr] = []
    right_p: list[Expr] = []
    up: list[Expr] = []
    if node.kind in ("inner", "cross"):
        lk, rk = list(node.left_keys), list(node.right_keys)
        residual: list[Expr] = []
        for p in preds + conjuncts(node.residual):
            cols = p.columns()
            if cols and cols <= lc:
                left_p.append(p)
            elif cols and cols <= rc:
                right_p.append(p)
            elif cols and cols <= (lc | rc):
                k1, k2, res, _ = split_join_condition([p], lc, rc)
                lk += k1
                rk += k2
                residual += res
            else:
                up.append(p)
        kind = "inner" if (lk or residual) else "cross"
        new = dataclasses.replace(node, left=_push(node.left, left_p), right=_push(node.right, right_p),
                                  kind=kind, left_keys=tuple(lk), right_keys=tuple(rk),
                                  residual=and_all(residual))
        return _wrap(new, up)
    # Outer-ish joins: only a preserved side takes filters from above (a full join has none: its
    # NULL-extended rows of either side must meet the filter too); a residual conjunct over the
    # non-preserved side alone filters that side's input.
    for p in preds:
        cols = p.columns()
        if node.kind == "right":
            (right_p if cols and cols <= rc else up).append(p)
        elif node.kind == "full":
            up.append(p)
        else:
            (left_p if cols and cols <= lc else up).append(p)
    residual = []
    if node.mark_by_residual:
        residual = conjuncts(node.residual)  # its residual decides the mark's NULLs: nothing moves
    elif node.kind in ("left", "semi", "anti", "mark", "single"):
        for p in conjuncts(node.residual):
            cols = p.columns()
            (right_p if cols and cols <= rc else residual).append(p)
    elif node.kind == "right":
        for p in conjuncts(node.residual):
            cols = p.columns()
            (left_p if cols and cols <= lc else residual).append(p)
    else:
        residual = conjuncts(node.residual)
    new = dataclasses.replace(node, left=_push(node.left, left_p), right=_push(node.right, right_p),
                              residual=and_all(residual))
    return _wrap(new, up)


def push(node: Node, preds: list[Expr]) -> Node:
    """``node`` filtered by the conjuncts ``preds``, each moved as far down as this pass moves it."""
    return _push(node, preds)


def run(plan: Node, ctx) -> Node:
    return _push(plan, [])

