"""Logical nodes of WITH RECURSIVE: the CTE itself and the scan of its previous iteration's rows.

``RecursiveCTE`` is a leaf to the optimizer of the query around it: its anchor and recursive term
are whole plans (bound and optimized on their own) that the executor runs, the recursive term once
per iteration with ``WorkingScan`` reading the rows the iteration before produced."""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.expr import Field
from hetdb.plan.logical import Node, Output


@dataclass(frozen=True)
class WorkingScan(Node):
    """The rows of recursive CTE ``key``'s previous iteration, as ``fields`` (by position)."""

    key: str
    fields: tuple[Field, ...]

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        return f"WorkingTable {self.key} [{', '.join(f.cid for f in self.fields)}]"


@dataclass(frozen=True)
class RecursiveCTE(Node):
    """``anchor UNION [ALL] step`` repeated until ``step`` adds no rows; with ``distinct`` (UNION)
    only rows not produced before count as new (DuckDB's semantics)."""

    key: str
    anchor: Output
    step: Output
    fields: tuple[Field, ...]
    distinct: bool

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        kind = "UNION" if self.distinct else "UNION ALL"
        return (f"RecursiveCTE {self.key} {kind} [{', '.join(f.cid for f in self.fields)}] "
                f"anchor=[{self.anchor.canonical()}] step=[{self.step.canonical()}]")
