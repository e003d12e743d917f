"""semi_join_pushdown: a semi or anti join above an inner join moves to the inner join's input that
holds every column it reads, so it filters rows before they are joined (and before join ordering
sees that input): ``(A JOIN B) SEMI C`` with keys from B becomes ``A JOIN (B SEMI C)``.

Correct because a semi/anti join keeps or drops each left row by a test over that row's own columns
(and C); an inner join only pairs rows, so filtering B's rows before or after pairing keeps the same
pairs. The output columns and their order are unchanged (a semi join outputs its left input's).
Only cheap tests move (no residual, a build side estimated smaller than the input it filters).
"""

from __future__ import annotations

import dataclasses

from hetdb.plan.logical import Join, Node
from hetdb.plan.rewrite import bottom_up

NAME = "semi_join_pushdown"


def _cids(node: Node) -> frozenset[str]:
    return frozenset(f.cid for f in node.schema)


def _reads(join: Join) -> frozenset[str]:
    """Columns of the semi join's left input that it reads (keys and residual)."""
    used: set[str] = set()
    for k in join.left_keys:
        used |= k.columns()
    if join.residual is not None:
        used |= join.residual.columns()
    return frozenset(used - _cids(join.right))


def _push(semi: Join, est) -> Node:
    inner = semi.left
    if not (isinstance(inner, Join) and inner.kind in ("inner", "cross")):
        return semi
    reads = _reads(semi)
    if not reads:
        return semi  # reads no left column (uncorrelated EXISTS): nothing to gain below
    for side in ("left", "right"):
        child = getattr(inner, side)
        # Only a cheap test moves down: no residual (pairs to evaluate) and a hash table smaller
        # than the input it would filter; a costly one stays above, after the joins that shrink
        # its input.
        if reads <= _cids(child) and est.rows(semi.right) <= est.rows(child):
            pushed = _push(dataclasses.replace(semi, left=child), est)
            return dataclasses.replace(inner, **{side: pushed})
    return semi


def run(plan: Node, ctx) -> Node:
    est = ctx.estimator()

    def fix(node: Node) -> Node:
        if isinstance(node, Join) and node.kind in ("semi", "anti") and node.residual is None:
            return _push(node, est)
        return node

    return bottom_up(plan, fix)
