"""build_side: in an inner join the right input is the hash table's build side, so put the input
with fewer estimated rows there. Left/semi/anti/mark/single joins keep their sides (their semantics
are not symmetric)."""

from __future__ import annotations

import dataclasses

from hetdb.plan.logical import Join, Node
from hetdb.plan.rewrite import bottom_up

NAME = "build_side"


def run(plan: Node, ctx) -> Node:
    est = ctx.estimator()

    def fix(node: Node) -> Node:
        if isinstance(node, Join) and node.kind in ("inner", "cross") \
                and est.rows(node.left) < est.rows(node.right):
            return dataclasses.replace(node, left=node.right, right=node.left,
                                       left_keys=node.right_keys, right_keys=node.left_keys)
        return node

    return bottom_up(plan, fix)
