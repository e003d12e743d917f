"""The ``Sample`` node: ``USING SAMPLE`` / ``TABLESAMPLE`` (sql/sample.py).

``rows``: a uniform sample of that many rows (all when fewer; DuckDB's reservoir). ``percent`` with
``exact``: round(n * percent / 100) rows chosen uniformly (DuckDB's ``reservoir(p%)``); without:
each row kept with probability percent / 100 (DuckDB's bernoulli; its default system sampling keeps
whole vectors of 2048 rows, hetdb samples rows for it too). ``seed`` (REPEATABLE) makes the choice
a function of the input rows in their order; without one every run draws anew.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.plan.logical import Node, SameSchema


@dataclass(frozen=True)
class Sample(SameSchema):
    input: Node
    percent: float | None = None
    rows: int | None = None
    exact: bool = False
    seed: int | None = None

    def label(self) -> str:
        size = f"{self.rows} rows" if self.rows is not None else f"{self.percent}%"
        how = "reservoir" if self.rows is not None or self.exact else "bernoulli"
        return f"Sample {size} ({how}{'' if self.seed is None else f', seed {self.seed}'})"
