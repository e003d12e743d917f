"""semi_build_side: a semi or anti join whose left input is much smaller than its right one hashes
the left input instead and streams the right one through it (``Join.build_left``).

A semi/anti join keeps or drops each left row by whether some right row matches it, so it can be
answered from either side: marking, for every right row, the left rows it matches gives the same
set of matched left rows. Hashing the smaller side keeps the hash table small (TPC-H Q4 and Q21
would otherwise hash millions of lineitem rows to filter tens of thousands of orders), and lets the
scan of the big side drop rows whose key no left row has before it gathers anything.
"""

from __future__ import annotations

import dataclasses

from hetdb.plan.logical import Join, Node
from hetdb.plan.rewrite import bottom_up

NAME = "semi_build_side"

# Swap when the right input is estimated this many times larger than the left and large itself.
RATIO = 4.0
MIN_RIGHT_ROWS = 50_000


def run(plan: Node, ctx) -> Node:
    est = ctx.estimator()

    def fix(node: Node) -> Node:
        if isinstance(node, Join) and node.kind in ("semi", "anti") and node.left_keys \
                and not node.build_left:
            right = est.rows(node.right)
            if right >= MIN_RIGHT_ROWS and right > RATIO * est.rows(node.left):
                return dataclasses.replace(node, build_left=True)
        return node

    return bottom_up(plan, fix)
