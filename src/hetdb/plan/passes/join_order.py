"""join_order: reorder each tree of inner/cross joins greedily on cardinality estimates.

Start from the relation with the fewest (estimated, filtered) rows — the most selective — then
repeatedly join the connected relation that gives the smallest intermediate result; a relation with
no join condition to what is joined so far comes only when nothing connected is left (cross join).
"""

from __future__ import annotations

from hetdb import types as T
from hetdb.plan.expr import Call, Expr
from hetdb.plan.exprutil import and_all, conjuncts, disjuncts, eq_sides, split_join_condition
from hetdb.plan.logical import Filter, Join, Node
from hetdb.plan.passes.predicate_pushdown import push
from hetdb.plan.rewrite import with_inputs

NAME = "join_order"


def _is_region(node: Node) -> bool:
    return isinstance(node, Join) and node.kind in ("inner", "cross")


def _flatten(node: Node, leaves: list[Node], preds: list[Expr]) -> None:
    if _is_region(node):
        _flatten(node.left, leaves, preds)
        _flatten(node.right, leaves, preds)
        preds.extend(Call(T.BOOL, "eq", (a, b)) for a, b in zip(node.left_keys, node.right_keys))
        preds.extend(conjuncts(node.residual))
    else:
        leaves.append(node)


def _cids(node: Node) -> frozenset[str]:
    return frozenset(f.cid for f in node.schema)


def _implied(pred: Expr, cids: frozenset[str]) -> Expr | None:
    """The condition on ``cids`` alone that ``pred`` (an OR spanning relations) implies, or None."""
    if not (isinstance(pred, Call) and pred.op == "or") or pred.columns() <= cids:
        return None
    parts = []
    for d in disjuncts(pred):  # flattened: TPC-H Q19's three branches nest as or(or(a, b), c)
        mine = [c for c in conjuncts(d) if c.columns() and c.columns() <= cids]
        if not mine:
            return None
        parts.append(and_all(mine))
    return Call(T.BOOL, "or", tuple(parts))


def _reorder(node: Node, est) -> Node:
    if not _is_region(node):
        return with_inputs(node, tuple(_reorder(k, est) for k in node.inputs()))
    leaves: list[Node] = []
    preds: list[Expr] = []
    _flatten(node, leaves, preds)
    leaves = [_reorder(leaf, est) for leaf in leaves]
    # Conditions over one relation only (rare after pushdown) filter that relation first.
    single: list[Expr] = []
    for i, leaf in enumerate(leaves):
        mine = [p for p in preds if p.columns() and p.columns() <= _cids(leaf)]
        if mine:
            leaves[i] = Filter(leaf, and_all(mine))
            single.extend(mine)
    pending = [p for p in preds if not any(p is s for s in single)]
    # An OR over several relations implies, per relation, the OR of each disjunct's conditions on
    # that relation alone (when every disjunct has some): filtering by it first keeps every row the
    # OR could accept (TPC-H Q7: n1.name = 'FRANCE' AND n2.name = 'GERMANY' OR ... ).
    for p in pending:
        for i, leaf in enumerate(leaves):
            implied = _implied(p, _cids(leaf))
            if implied is not None:  # down to the scan: zone maps and the scan's filters see it
                leaves[i] = push(leaves[i], [implied])
    todo = sorted(range(len(leaves)), key=lambda i: (est.rows(leaves[i]), i))
    cur = leaves[todo.pop(0)]
    while todo:
        cc = _cids(cur)
        best, best_rows = None, None
        for i in todo:
            lc = _cids(leaves[i])
            keys = [p for p in pending if eq_sides(p, cc, lc) is not None]
            if not keys:
                continue
            lk, rk, _, _ = split_join_condition(keys, cc, lc)
            rows = est.rows(Join(cur, leaves[i], "inner", tuple(lk), tuple(rk)))
            if best_rows is None or rows < best_rows:
                best, best_rows = i, rows
        if best is None:
            best = todo[0]
        todo.remove(best)
        nxt = leaves[best]
        nc = _cids(nxt)
        spanning = [p for p in pending if p.columns() <= (cc | nc) and p.columns() & cc and p.columns() & nc]
        pending = [p for p in pending if not any(p is s for s in spanning)]
        lk, rk, residual, _ = split_join_condition(spanning, cc, nc)
        kind = "inner" if (lk or residual) else "cross"
        cur = Join(cur, nxt, kind, tuple(lk), tuple(rk), and_all(residual))
    return Filter(cur, and_all(pending)) if pending else cur


def run(plan: Node, ctx) -> Node:
    return _reorder(plan, ctx.estimator())
