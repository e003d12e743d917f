"""EXPLAIN text of a logical plan: one line per node, children indented (deterministic)."""

from __future__ import annotations

from hetdb.plan.logical import Node


def format_plan(node: Node, indent: str = "  ") -> str:
    """The plan as an indented tree, root first; the same plan always gives the same text."""
    lines: list[str] = []

    def walk(n: Node, depth: int) -> None:
        lines.append(f"{indent * depth}{n.label()}")
        for child in n.inputs():
            walk(child, depth + 1)

    walk(node, 0)
    return "\n".join(lines)
