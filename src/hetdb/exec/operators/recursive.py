"""WITH RECURSIVE at run time: the anchor's pipelines run once, the recursive term's pipelines once
per iteration over the rows the previous iteration added (``WorkingSource``), until an iteration adds
nothing; more than the option ``recursion_limit`` iterations that add rows is a RecursionLimitError. With UNION
(not ALL) a row counts as new only if no earlier iteration (or the anchor) produced it."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb.column import Batch
from hetdb.errors import RecursionLimitError
from hetdb.exec.columns import concat_batches, filter_batch, slice_batch
from hetdb.exec.hostutil import batch_to_host
from hetdb.exec.operators.base import ExecContext, Source
from hetdb.exec.results import loaded
from hetdb.plan.expr import Field


def _working_key(key: str) -> tuple[str, str]:
    return ("recursive working table", key)


def _renamed(batch: Batch, src: tuple[Field, ...], dst: tuple[Field, ...]) -> Batch:
    return Batch({d.cid: batch.columns[s.cid] for s, d in zip(src, dst)}, batch.num_rows)


@dataclass(frozen=True)
class WorkingSource(Source):
    """The rows the previous iteration of recursive CTE ``key`` added, as ``fields``."""

    key: str = ""
    fields: tuple[Field, ...] = ()

    def describe(self) -> str:
        return f"WorkingTableScan {self.key}"

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        return list(range(len(ctx.results[_working_key(self.key)])))

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        held = ctx.results[_working_key(self.key)][morsel]  # the CTE's columns, in order
        b = Batch(dict(zip((f.cid for f in self.fields), held.columns.values())), held.num_rows)
        ctx.add(self.op_id, rows_out=b.num_rows)
        return [b] if b.num_rows else []


@dataclass(frozen=True)
class RecursiveSource(Source):
    """Runs recursive CTE ``key`` (anchor and step: physical plans of their own) and emits its rows."""

    key: str = ""
    fields: tuple[Field, ...] = ()
    distinct: bool = False
    anchor: Any = field(default=None, compare=False)  # PhysicalPlan
    step: Any = field(default=None, compare=False)    # PhysicalPlan

    def describe(self) -> str:
        kind = "UNION" if self.distinct else "UNION ALL"
        return (f"RecursiveCTE {self.key} {kind} (anchor: {len(self.anchor.pipelines)} pipelines, "
                f"recursive term: {len(self.step.pipelines)} pipelines per iteration)")

    def _run(self, ctx: ExecContext, plan: Any, working: list[Batch] | None) -> Batch | None:
        """Run ``plan``'s pipelines; its rows as ``fields``. They run in a copy of the query's context
        with results of their own (their pipeline ids restart at 0, and per-context state of the GPU
        pipeline compiler, such as deferred hash builds, or the pipelines the outer plan hands over on
        the host, must not meet the outer plan's); operator statistics and clean-up stay shared."""
        from hetdb.exec.pipeline import run_pipeline

        sub = copy.copy(ctx)
        sub.results = dict(ctx.results)
        # the outer plan's host tail names ITS pipeline ids: none of them is one of these pipelines
        # (a fused aggregation of the anchor finishing on the host left host arrays for the GPU)
        sub.host_sinks, sub.made_on_host = frozenset(), set()
        if working is not None:
            sub.results[_working_key(self.key)] = working
        for pipe in plan.pipelines:
            run_pipeline(sub, pipe, None, 1)
        batches = [loaded(ctx.backend, b) for b in sub.results[plan.result_pipeline]]
        batches = [_renamed(b, plan.output.fields, self.fields) for b in batches if b.num_rows]
        return concat_batches(ctx.backend, batches) if batches else None

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        limit = int(getattr(ctx.options, "recursion_limit", 10_000))
        seen: set[tuple] = set()
        new = self._new_rows(ctx, self._run(ctx, self.anchor, None), seen)
        out = [new] if new is not None else []
        iterations = 0  # iterations of the recursive query that added rows
        while new is not None:
            new = self._new_rows(ctx, self._run(ctx, self.step, [new]), seen)
            if new is None:
                break
            iterations += 1
            if iterations > limit:
                raise RecursionLimitError(
                    f"WITH RECURSIVE {self.key.split('#')[0]} did not finish within {limit:,} iterations "
                    f"(connection option recursion_limit): check the recursive query's stop condition, "
                    f"or allow more with SET recursion_limit = {limit * 10}")
            out.append(new)
        ctx.results[_working_key(self.key) + ("result",)] = out
        step = ctx.batch_rows
        return [(i, lo, min(lo + step, b.num_rows) if step else b.num_rows)
                for i, b in enumerate(out) for lo in range(0, b.num_rows, step or b.num_rows)]

    def _new_rows(self, ctx: ExecContext, batch: Batch | None, seen: set[tuple]) -> Batch | None:
        """``batch`` less, for UNION, the rows produced before (and repeats within it); None if empty."""
        if batch is None or batch.num_rows == 0:
            return None
        if not self.distinct:
            return batch
        host = batch_to_host(ctx.backend, batch)
        columns = [host.columns[f.cid].to_arrow().to_pylist() for f in self.fields]
        keep = np.zeros(batch.num_rows, dtype=bool)
        for i, row in enumerate(zip(*columns)):
            if row not in seen:
                seen.add(row)
                keep[i] = True
        if not keep.any():
            return None
        return filter_batch(ctx.backend, batch, ctx.backend.asarray(keep))

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        i, lo, hi = morsel
        b = ctx.results[_working_key(self.key) + ("result",)][i]
        out = b if lo == 0 and hi == b.num_rows else slice_batch(ctx.backend, b, lo, hi)
        ctx.add(self.op_id, rows_out=out.num_rows)
        return [out] if out.num_rows else []
