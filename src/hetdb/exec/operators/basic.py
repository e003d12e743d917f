"""Streaming operators (filter, project, limit) and simple sources/sinks (values, a previous
pipeline's result, the query result)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from hetdb.backend.cpu import tuning
from hetdb.column import Batch
from hetdb.exec.columns import filter_batch, slice_batch
from hetdb.exec.hostutil import column_from_pylist
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext, Operator, Sink, Source, Timer, in_morsel_order
from hetdb.exec.results import hold, loaded
from hetdb.plan.expr import Expr, Field


@dataclass(frozen=True)
class FilterOp(Operator):
    predicate: Expr = None

    def describe(self) -> str:
        return f"Filter {self.predicate}"

    def execute(self, ctx: ExecContext, batch: Batch, g: Any, l: Any) -> list[Batch]:  # noqa: E741
        with Timer(ctx, self.op_id):
            out = filter_batch(ctx.backend, batch, ctx.evaluator.predicate(self.predicate, batch))
        ctx.add(self.op_id, rows_in=batch.num_rows, rows_out=out.num_rows)
        return [out] if out.num_rows else []


@dataclass(frozen=True)
class ProjectOp(Operator):
    exprs: tuple[tuple[Field, Expr], ...] = ()

    def describe(self) -> str:
        return "Project " + ", ".join(f"{f.cid}={e}" for f, e in self.exprs)

    def execute(self, ctx: ExecContext, batch: Batch, g: Any, l: Any) -> list[Batch]:  # noqa: E741
        with Timer(ctx, self.op_id):
            ev = ctx.evaluator
            cols = {f.cid: ev.cast(ev.evaluate(e, batch), f.dtype) for f, e in self.exprs}
        ctx.add(self.op_id, rows_in=batch.num_rows, rows_out=batch.num_rows)
        return [Batch(cols, batch.num_rows)]


class _LimitState:
    def __init__(self) -> None:
        self.seen = 0
        self.done = False
        self.lock = threading.Lock()


@dataclass(frozen=True)
class LimitOp(Operator):
    """LIMIT/OFFSET over a stream; stops the pipeline's source once enough rows went through."""

    limit: int | None = None
    offset: int = 0

    def describe(self) -> str:
        return f"Limit {self.limit} offset {self.offset}"

    def init_global(self, ctx: ExecContext) -> Any:
        return _LimitState()

    def execute(self, ctx: ExecContext, batch: Batch, g: _LimitState, l: Any) -> list[Batch]:  # noqa: E741
        end = None if self.limit is None else self.offset + self.limit
        with g.lock:
            start = g.seen
            g.seen += batch.num_rows
            if end is not None and g.seen >= end:
                g.done = True
        lo = max(0, self.offset - start)
        hi = batch.num_rows if end is None else max(0, min(batch.num_rows, end - start))
        ctx.add(self.op_id, rows_in=batch.num_rows, rows_out=max(0, hi - lo))
        if hi <= lo:
            return []
        if lo == 0 and hi == batch.num_rows:
            return [batch]
        return [slice_batch(ctx.backend, batch, lo, hi)]


@dataclass(frozen=True)
class ValuesSource(Source):
    fields: tuple[Field, ...] = ()
    rows: tuple[tuple[object, ...], ...] = ()

    def describe(self) -> str:
        return f"Values {len(self.rows)} rows"

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        return [0]

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        cols = {f.cid: column_from_pylist(ctx.backend, [r[i] for r in self.rows], f.dtype)
                for i, f in enumerate(self.fields)}
        ctx.add(self.op_id, rows_out=len(self.rows))
        return [Batch(cols, len(self.rows))]


# result batches of at least twice this many rows are cut into several morsels (ResultSource._pieces): a
# morsel's Python and its GIL hand-overs cost the same whatever its rows, and with 16 workers taking turns
# at the GIL small morsels ran slower than one thread (TPC-H q11's 304k groups cut in 9 morsels of 34k
# rows, operator at a time: ~180 ms of worker time at 16 threads on the H100, 4 ms on one thread);
# backend/cpu/tuning.py: result_morsel_rows, result_share_threads


@dataclass(frozen=True)
class ResultSource(Source):
    """The batches a previous pipeline produced (a sort, an aggregation...), sliced to batch_rows."""

    pipeline_id: int = 0
    label: str = ""
    is_ordered: bool = False

    @property
    def ordered(self) -> bool:  # type: ignore[override]
        return self.is_ordered

    def describe(self) -> str:
        return f"ResultScan {self.label} (pipeline {self.pipeline_id})"

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        out = []
        step = ctx.batch_rows
        batches = ctx.results[self.pipeline_id]
        # the worker threads shared among the batches: a result of many batches (an aggregation's
        # key-run pieces, TPC-H q18's 116 at SF 10) is a morsel per batch already, not 4 each
        threads = int(getattr(ctx.options, "threads", 1) or 1)
        share = -(-threads // max(1, sum(1 for b in batches if b.num_rows))) \
            if tuning.get("result_share_threads") else threads
        for i, b in enumerate(batches):
            if not step or b.num_rows <= step:
                out.extend((i, lo, hi) for lo, hi in self._pieces(ctx, b, share))
            else:
                out.extend((i, s, s + step) for s in range(0, b.num_rows, step))
        return out

    def _pieces(self, ctx: ExecContext, b: Any, share: int | None = None) -> list[tuple[int, int]]:
        """Row ranges of one result batch: a large one in memory is cut into up to ``share`` ranges
        (default: one per worker thread) on the CPU (an aggregation's result is one batch: TPC-H
        q18's 15M groups at SF 10 were filtered by one worker while 15 waited), unless the order of
        its rows matters."""
        n = b.num_rows
        threads = int(getattr(ctx.options, "threads", 1) or 1)
        least = tuning.get("result_morsel_rows")
        if self.ordered or ctx.device is not None or threads < 2 or not isinstance(b, Batch) \
                or n < 2 * least:
            return [(0, n)]
        parts = min(share or threads, n // least)
        return [(n * k // parts, n * (k + 1) // parts) for k in range(parts)]

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        i, lo, hi = morsel
        b = loaded(ctx.backend, ctx.results[self.pipeline_id][i])
        out = b if lo == 0 and hi == b.num_rows else slice_batch(ctx.backend, b, lo, hi)
        ctx.add(self.op_id, rows_out=out.num_rows)
        return [out] if out.num_rows else []


@dataclass(frozen=True)
class UnionSource(Source):
    """UNION ALL: the batches several previous pipelines collected (already renamed to the union's
    columns), one input after the other, sliced to batch_rows."""

    pipeline_ids: tuple[int, ...] = ()

    def describe(self) -> str:
        return f"UnionScan (pipelines {', '.join(map(str, self.pipeline_ids))})"

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        out = []
        step = ctx.batch_rows
        for pid in self.pipeline_ids:
            for i, b in enumerate(ctx.results[pid]):
                if not step or b.num_rows <= step:
                    out.append((pid, i, 0, b.num_rows))
                else:
                    out.extend((pid, i, s, min(s + step, b.num_rows)) for s in range(0, b.num_rows, step))
        return out

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        pid, i, lo, hi = morsel
        b = loaded(ctx.backend, ctx.results[pid][i])
        out = b if lo == 0 and hi == b.num_rows else slice_batch(ctx.backend, b, lo, hi)
        ctx.add(self.op_id, rows_out=out.num_rows)
        return [out] if out.num_rows else []


class _CollectState:
    def __init__(self, ctx: ExecContext) -> None:
        self.batches: list[tuple[Any, Batch]] = []
        self.lock = threading.Lock()
        self.reservation = Reservation(ctx.memory)
        ctx.cleanup.append(self.reservation.close)


class _CollectLocal:
    def __init__(self) -> None:
        self.batches: list[tuple[Any, Batch]] = []


@dataclass(frozen=True)
class CollectSink(Sink):
    """Keeps every batch (the query result, or the input of the next pipeline), reserved; a batch
    the limit refuses is spilled (``exec/results.py``) and read back by the pipeline that reads it."""

    label: str = "Result"

    def describe(self) -> str:
        return f"Collect {self.label}"

    def init_global(self, ctx: ExecContext) -> Any:
        return _CollectState(ctx)

    def init_local(self, ctx: ExecContext, g: Any) -> Any:
        return _CollectLocal()

    def sink(self, ctx: ExecContext, batch: Batch, g: _CollectState, l: _CollectLocal) -> None:  # noqa: E741
        key = ctx.current_morsel_key()
        for i, item in enumerate(hold(ctx, g.reservation, batch)):
            l.batches.append(((*key, i), item))
        ctx.add(self.op_id, rows_in=batch.num_rows, rows_out=batch.num_rows)

    def combine(self, ctx: ExecContext, g: _CollectState, l: _CollectLocal) -> None:  # noqa: E741
        with g.lock:
            g.batches.extend(l.batches)

    def finalize(self, ctx: ExecContext, g: _CollectState) -> list[Batch]:
        return in_morsel_order(g.batches)
