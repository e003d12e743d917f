"""``unnest(list)`` in a SELECT list and ``FROM unnest(list)``, as DuckDB runs them.

In the SELECT list each ``unnest(...)`` becomes a column of an ``Unnest`` node (plan/unnest.py) placed
after aggregation, HAVING, windows and QUALIFY, and before the projection: the other select items
are repeated per element, several unnests are zipped (NULL past a shorter list's end), rows whose
lists are all NULL or empty disappear. ``FROM unnest(x) [t(c)]`` is ``(SELECT unnest(x) AS unnest)``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import ColumnRef, Expr, Field
from hetdb.plan.logical import Node
from hetdb.plan.unnest import Unnest


class UnnestState:
    """The unnest() calls of one SELECT list."""

    def __init__(self, new_cid: Callable[[str], str]) -> None:
        self.new_cid = new_cid
        self.lists: list[tuple[Field, Expr]] = []

    def add(self, node: exp.Explode, b: Callable[[exp.Expression], Expr]) -> ColumnRef:
        if any(isinstance(n, exp.Explode) for n in node.this.walk()):
            raise UnsupportedError("unnest() inside unnest()")
        if node.expressions or node.args.get("expression") is not None:
            raise UnsupportedError("unnest() with options (recursive := / max_depth :=)")
        x = b(node.this)
        if x.dtype.kind != "list":
            raise SqlError(f"unnest() needs a LIST, got {x.dtype}")
        for f, e in self.lists:
            if e == x:
                return ColumnRef(f.dtype, f.cid, True)
        f = Field(self.new_cid("unnest"), "unnest", x.dtype.elem, True)
        self.lists.append((f, x))
        return ColumnRef(f.dtype, f.cid, True)

    def apply(self, plan: Node) -> Node:
        return Unnest(plan, tuple(self.lists)) if self.lists else plan


def from_unnest(node: exp.Unnest) -> exp.Select:
    """``FROM unnest(x)`` as the query ``SELECT unnest(x) AS unnest``."""
    if len(node.expressions) != 1 or node.args.get("offset"):
        raise UnsupportedError("FROM unnest() of several lists or WITH OFFSET")
    return exp.select(exp.alias_(exp.Explode(this=node.expressions[0].copy()), "unnest"))
