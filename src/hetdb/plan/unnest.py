"""The ``Unnest`` node: ``unnest(list)`` in a SELECT list (sql/unnest.py).

Each input row is repeated once per element of the longest of its lists (no row where every list is
NULL or empty) and every list's elements become a new column (NULL past a shorter list's end), as in
DuckDB. The input's columns pass on unchanged; the row count changes, so no filter or limit moves
through the node.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.expr import Expr, Field
from hetdb.plan.logical import Node, OneInput


@dataclass(frozen=True)
class Unnest(OneInput):
    input: Node
    lists: tuple[tuple[Field, Expr], ...]  # (element column, LIST expression over the input)

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.input.schema + tuple(f for f, _ in self.lists)

    def reads(self) -> set[str]:
        return set().union(*(e.columns() for _, e in self.lists))

    def label(self) -> str:
        return "Unnest " + ", ".join(f"{f.cid}={e}" for f, e in self.lists)

