"""limit_pushdown: Sort followed by LIMIT (possibly through a Project) becomes one TopN, which keeps
only limit + offset rows while it consumes its input."""

from __future__ import annotations

import dataclasses

from hetdb.plan.logical import Limit, Node, Project, Sort, TopN
from hetdb.plan.rewrite import bottom_up

NAME = "limit_pushdown"


def run(plan: Node, ctx) -> Node:
    def fix(node: Node) -> Node:
        if not isinstance(node, Limit) or node.limit is None:
            return node
        child = node.input
        if isinstance(child, Sort):
            return TopN(child.input, child.keys, node.limit, node.offset)
        if isinstance(child, Project) and isinstance(child.input, Sort):
            s = child.input
            return dataclasses.replace(child, input=TopN(s.input, s.keys, node.limit, node.offset))
        return node

    return bottom_up(plan, fix)
