"""bushy_joins: on the CPU, re-plan each tree of inner joins that join_order left deep as a bushy
tree when that makes fewer intermediate rows.

join_order grows one chain from the most selective relation, so a filtered dimension that hangs off
another relation of the chain joins only when the chain reaches it: in TPC-H Q7 the customers of
two nations (120k of 1.5M at SF 10) join after lineitem and orders, so 1.45M lineitem rows were
materialized into a hash build and 1.45M joined rows into a second one. Here every relation starts
as its own tree and the two connected trees whose join makes the fewest estimated rows join first
(greedy operator ordering, Fegaras 1998): customer joins its nation, orders joins that, and the
lineitem pipeline probes the orders build. Columns equal through the conditions form classes, so
two trees join on a pair no condition names (q09's part and partsupp, both equal to l_partkey)
and a join keeps no key its inputs' joins imply. The bushy tree replaces the chain only when the sum of
its joins' estimated rows is lower (a chain, as a star's is, stays join_order's).

GPU plans keep join_order's chains (the fused GPU pipelines are tuned on them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hetdb import types as T
from hetdb.plan.expr import Call, ColumnRef, Expr
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


def _column_pair(p: Expr) -> tuple[str, str] | None:
    """(cid, cid) of an equality between two columns of one type, else None."""
    if isinstance(p, Call) and p.op == "eq" and len(p.args) == 2:
        a, b = p.args
        if isinstance(a, ColumnRef) and isinstance(b, ColumnRef) and a.dtype == b.dtype:
            return a.cid, b.cid
    return None


class _Classes:
    """Columns equal through the region's equalities between columns (l_partkey = p_partkey and
    l_partkey = ps_partkey put p_partkey and ps_partkey in one class): trees holding two columns
    of a class can join on them though no condition names that pair (TPC-H q09's part and partsupp)."""

    def __init__(self, preds: list[Expr]) -> None:
        self.parent: dict[str, str] = {}
        self.refs: dict[str, ColumnRef] = {}
        for p in preds:
            pair = _column_pair(p)
            if pair is not None:
                for ref in p.args:
                    self.refs[ref.cid] = ref
                self.union(*pair)

    def find(self, c: str) -> str:
        while self.parent.get(c, c) != c:
            c = self.parent[c]
        return c

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def shared(self, ca: frozenset[str], cb: frozenset[str]) -> dict[str, tuple[str, str]]:
        """Per class with columns on both sides: one column of each side."""
        left = {self.find(c): c for c in sorted(ca) if c in self.refs}
        right = {self.find(c): c for c in sorted(cb) if c in self.refs}
        return {k: (left[k], right[k]) for k in left if k in right}


@dataclass
class _Tree:
    node: Node
    equal: dict[str, str] = field(default_factory=dict)  # union-find of the columns its joins equate

    def find(self, c: str) -> str:
        while self.equal.get(c, c) != c:
            c = self.equal[c]
        return c


def _join(a: _Tree, b: _Tree, pending: list[Expr], classes: _Classes) -> tuple[_Tree, list[Expr]]:
    """The join of two trees on every condition that spans them, less the equalities their own
    joins already imply, plus one equality per class of equal columns no kept condition joins."""
    ca, cb = _cids(a.node), _cids(b.node)
    spanning = [p for p in pending if p.columns() <= (ca | cb) and p.columns() & ca and p.columns() & cb]
    rest = [p for p in pending if not any(p is s for s in spanning)]
    kept: list[Expr] = []
    linked: set[tuple[str, str]] = set()
    pairs: list[tuple[str, str]] = []
    for p in spanning:
        pair = _column_pair(p)
        if pair is not None:
            x, y = pair if pair[0] in ca else (pair[1], pair[0])
            key = (a.find(x), b.find(y))
            if key in linked:
                continue  # x = x', y = y' inside the trees and x' = y' kept: x = y holds
            linked.add(key)
            pairs.append((x, y))
        kept.append(p)
    covered = {classes.find(x) for x, _ in pairs}
    for cls, (x, y) in classes.shared(ca, cb).items():
        if cls not in covered:
            kept.append(Call(T.BOOL, "eq", (classes.refs[x], classes.refs[y])))
            pairs.append((x, y))
    lk, rk, residual, _ = split_join_condition(kept, ca, cb)
    kind = "inner" if (lk or residual) else "cross"
    equal = {**a.equal, **b.equal}
    tree = _Tree(Join(a.node, b.node, kind, tuple(lk), tuple(rk), and_all(residual)), equal)
    for x, y in pairs:
        rx, ry = tree.find(x), tree.find(y)
        if rx != ry:
            equal[rx] = ry
    return tree, rest


def _connected(a: _Tree, b: _Tree, pending: list[Expr], classes: _Classes) -> bool:
    ca, cb = _cids(a.node), _cids(b.node)
    return any(eq_sides(p, ca, cb) is not None for p in pending) or bool(classes.shared(ca, cb))


def _greedy_operator_order(leaves: list[Node], preds: list[Expr], est) -> Node | None:
    """The bushy tree: join the connected pair of trees with the fewest estimated rows until one
    is left; None when some tree has no equality to any other (cross joins stay join_order's)."""
    trees = [_Tree(leaf) for leaf in leaves]
    pending = list(preds)
    classes = _Classes(preds)
    while len(trees) > 1:
        best = None
        for i in range(len(trees)):
            for j in range(i + 1, len(trees)):
                if not _connected(trees[i], trees[j], pending, classes):
                    continue
                joined, _ = _join(trees[i], trees[j], pending, classes)
                rows = est.rows(joined.node)
                if best is None or rows < best[0]:
                    best = (rows, i, j)
        if best is None:
            return None
        _, i, j = best
        joined, pending = _join(trees[i], trees[j], pending, classes)
        trees = [t for k, t in enumerate(trees) if k not in (i, j)] + [joined]
    top = trees[0].node
    return Filter(top, and_all(pending)) if pending else top


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


# Off by default: on the H100's 16 cores (TPC-H SF 10, session 11, scripts/cpu_switches_ab.py in one
# process) the plans with this pass were 11% slower in geomean than without (q02 120 vs 85 ms, q08 160
# vs 99 ms; q09 427 vs 496 ms the other way), although at 1 thread on 2 cores it cut q07's CPU time
# 1.54x and q05's 1.34x. True: CPU plans take the bushy order (tests, A/B runs).
ENABLED = False


def run(plan: Node, ctx) -> Node:
    if not ENABLED or getattr(ctx.options, "device", "cpu") == "gpu":
        return plan
    return _rebuild(plan, ctx.estimator())
