"""SampleSource: reads what the previous pipeline collected (in morsel order, so the rows do not
depend on thread timing or batch sizes) and keeps the rows plan/sample.py's Sample chooses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.column import Batch
from hetdb.exec.columns import filter_batch
from hetdb.exec.operators.base import ExecContext, Source
from hetdb.exec.results import loaded


class _Chosen:
    def __init__(self, keep: np.ndarray, starts: list[int]) -> None:
        self.keep = keep        # bool per collected row
        self.starts = starts    # first row of each collected batch


def choose(n: int, percent: float | None, rows: int | None, exact: bool, seed: int | None) -> np.ndarray:
    """Bool mask over ``n`` rows: the sample (seeded: the same mask for the same n)."""
    rng = np.random.default_rng(seed)
    if rows is None and not exact:
        return rng.random(n) < percent / 100.0
    k = min(n, rows if rows is not None else int(round(n * percent / 100.0)))
    keep = np.zeros(n, dtype=bool)
    keep[rng.choice(n, size=k, replace=False)] = True
    return keep


@dataclass(frozen=True)
class SampleSource(Source):
    pipeline_id: int = 0
    percent: float | None = None
    rows: int | None = None
    exact: bool = False
    seed: int | None = None

    def describe(self) -> str:
        size = f"{self.rows} rows" if self.rows is not None else f"{self.percent}%"
        return f"Sample {size} of pipeline {self.pipeline_id}" + ("" if self.seed is None else f" seed {self.seed}")

    def init_global(self, ctx: ExecContext) -> Any:
        sizes = [b.num_rows for b in ctx.results[self.pipeline_id]]
        starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
        return _Chosen(choose(int(starts[-1]), self.percent, self.rows, self.exact, self.seed), starts)

    def morsels(self, ctx: ExecContext, g: _Chosen) -> list:
        return [i for i in range(len(g.starts) - 1) if g.keep[g.starts[i]:g.starts[i + 1]].any()]

    def read(self, ctx: ExecContext, morsel: Any, g: _Chosen) -> list[Batch]:
        b = loaded(ctx.backend, ctx.results[self.pipeline_id][morsel])
        mask = g.keep[g.starts[morsel]:g.starts[morsel + 1]]
        out = filter_batch(ctx.backend, b, ctx.backend.xp.asarray(mask))
        ctx.add(self.op_id, rows_out=out.num_rows)
        return [out] if out.num_rows else []
