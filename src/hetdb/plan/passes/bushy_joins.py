"""bushy_joins: on the CPU, re-plan each tree of inner joins that join_order left deep as a bushy
tree when that makes fewer intermediate rows.

join_order grows one chain from the most selective relation, so a filtered dimension that hangs off
another relation of the chain joins only when the chain reaches it: in TPC-H Q7 the customers of
two nations (120k of 1.5M at SF 10) join after lineitem and orders, so 1.45M lineitem rows were
materialized into a hash build and 1.45M joined rows into a second one. Here every relation starts
as its own tree and the two connected trees whose join makes the fewest estimated rows join first
(greedy operator ordering, Fegaras 1998): customer joins its nation, orders joins that, and the
lineitem pipeline probes the orders build. The bushy tree replaces the chain only when the sum of
its joins' estimated rows is lower (a chain, as a star's is, stays join_order's).

GPU plans keep join_order's chains (the fused GPU pipelines are tuned on them).
"""

from __future__ import annotations

from hetdb.plan.expr import Expr
from hetdb.plan.exprutil import and_all, eq_sides, split_join_condition
from hetdb.plan.logical import Filter, Join, Node
from hetdb.plan.passes.join_order import _cids, _flatten, _is_region
from hetdb.plan.rewrite import with_inputs

NAME = "bushy_joins"
# regions with more relations keep their chain (the pair search is cubic in the relations)
_MAX_RELATIONS = 10


def _intermediate_rows(node: Node, est) -> float:
    """Estimated rows summed over the joins of a region's tree (its leaves excluded)."""
    if not _is_region(node):
        return 0.0
    return float(est.rows(node)) + _intermediate_rows(node.left, est) + _intermediate_rows(node.right, est)


def _join(a: Node, b: Node, pending: list[Expr]) -> tuple[Join, list[Expr]]:
    ca, cb = _cids(a), _cids(b)
    spanning = [p for p in pending if p.columns() <= (ca | cb) and p.columns() & ca and p.columns() & cb]
    rest = [p for p in pending if not any(p is s for s in spanning)]
    lk, rk, residual, _ = split_join_condition(spanning, ca, cb)
    kind = "inner" if (lk or residual) else "cross"
    return Join(a, b, kind, tuple(lk), tuple(rk), and_all(residual)), rest


def _greedy_operator_order(leaves: list[Node], preds: list[Expr], est) -> Node | None:
    """The bushy tree: join the connected pair of trees with the fewest estimated rows until one
    is left; None when some tree has no equality to any other (cross joins stay join_order's)."""
    trees = list(leaves)
    pending = list(preds)
    while len(trees) > 1:
        best = None
        for i in range(len(trees)):
            for j in range(i + 1, len(trees)):
                ci, cj = _cids(trees[i]), _cids(trees[j])
                if not any(eq_sides(p, ci, cj) is not None for p in pending):
                    continue
                joined, _ = _join(trees[i], trees[j], pending)
                rows = est.rows(joined)
                if best is None or rows < best[0]:
                    best = (rows, i, j)
        if best is None:
            return None
        _, i, j = best
        joined, pending = _join(trees[i], trees[j], pending)
        trees = [t for k, t in enumerate(trees) if k not in (i, j)] + [joined]
    return Filter(trees[0], and_all(pending)) if pending else trees[0]


def _rebuild(node: Node, est) -> Node:
    if not _is_region(node):
        return with_inputs(node, tuple(_rebuild(k, est) for k in node.inputs()))
    leaves: list[Node] = []
    preds: list[Expr] = []
    _flatten(node, leaves, preds)
    leaves = [_rebuild(leaf, est) for leaf in leaves]
    chain = _relink(node, leaves)
    if len(leaves) < 4 or len(leaves) > _MAX_RELATIONS:
        return chain
    bushy = _greedy_operator_order(leaves, preds, est)
    if bushy is None:
        return chain
    top = bushy.input if isinstance(bushy, Filter) else bushy
    if _is_bushy(top) and _intermediate_rows(top, est) < _intermediate_rows(chain, est):
        return bushy
    return chain


def _is_bushy(node: Node) -> bool:
    """Some join of the region has joins on both sides (else it is a chain: join_order's stays)."""
    if not _is_region(node):
        return False
    if _is_region(node.left) and _is_region(node.right):
        return True
    return _is_bushy(node.left) or _is_bushy(node.right)


def _relink(node: Node, leaves: list[Node]) -> Node:
    """``node``'s region with its leaves replaced, in order, by ``leaves``."""
    it = iter(leaves)

    def go(n: Node) -> Node:
        if not _is_region(n):
            return next(it)
        left = go(n.left)
        right = go(n.right)
        return with_inputs(n, (left, right))

    return go(node)


def run(plan: Node, ctx) -> Node:
    if getattr(ctx.options, "device", "cpu") == "gpu":
        return plan
    return _rebuild(plan, ctx.estimator())
