"""UnnestOp: the streaming operator of plan/unnest.py (one output batch per input batch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hetdb.column import Batch
from hetdb.exec.lists import unnest_batch
from hetdb.exec.operators.base import ExecContext, Operator, Timer
from hetdb.plan.expr import Expr, Field


@dataclass(frozen=True)
class UnnestOp(Operator):
    lists: tuple[tuple[Field, Expr], ...] = ()

    def describe(self) -> str:
        return "Unnest " + ", ".join(f"{f.cid}={e}" for f, e in self.lists)

    def execute(self, ctx: ExecContext, batch: Batch, g: Any, l: Any) -> list[Batch]:  # noqa: E741
        with Timer(ctx, self.op_id):
            out = unnest_batch(ctx.evaluator, batch, self.lists)
        ctx.add(self.op_id, rows_in=batch.num_rows, rows_out=out.num_rows)
        return [out] if out.num_rows else []
