"""Generic plan rewriting: rebuild a node with new inputs, walk bottom-up."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hetdb.plan.logical import Join, Node, Union


def with_inputs(node: Node, inputs: tuple[Node, ...]) -> Node:
    """``node`` with its inputs replaced (same order as ``node.inputs()``)."""
    if inputs == node.inputs():
        return node
    if isinstance(node, Join):
        return dataclasses.replace(node, left=inputs[0], right=inputs[1])
    if isinstance(node, Union):
        return dataclasses.replace(node, children=tuple(inputs))
    if not inputs:
        return node
    return dataclasses.replace(node, input=inputs[0])


def bottom_up(node: Node, fn: Callable[[Node], Node]) -> Node:
    """Apply ``fn`` to every node, children first."""
    kids = tuple(bottom_up(k, fn) for k in node.inputs())
    return fn(with_inputs(node, kids))
