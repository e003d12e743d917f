"""A host-tail pipeline over a small earlier result, run without the pipeline driver's machinery.

A hot GPU query's result comes out of two or three pipelines on the host after its fused kernel
(exec/host_tail.py): a sort of the aggregation's few hundred groups, the result's collection. Each
is one morsel per input batch on one worker, yet the driver (exec/pipeline._Run) makes its morsel
list, its enumerated pairs, a lock, its kernel-thread settings three times, a flush with fresh local
states and the sink's row count, for a few dozen microseconds of sorting. ``run_small`` does what
that driver does for such a pipeline — the same calls of the source, operators and sink, in the
same order, with the same morsel keys and statistics — and nothing else; a projection into a sort
or the result's collection of a few thousand rows at most goes straight to the sort (``_direct``).
"""

from __future__ import annotations

from typing import Any

from hetdb.backend.cpu import tuning
from hetdb.column import Batch
from hetdb.exec.columns import concat_batches, take_batch
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.operators.basic import CollectSink, ProjectOp, ResultSource
from hetdb.exec.operators.sort import SortSink, _small_sorted, sort_keys

# a sort or collection of at most this many rows runs without its sink's states (``_direct``)
DIRECT_ROWS = 1 << 12
ENABLED = [True]  # (scripts/gpu_hot_split.py --experiment no_small_tail: the driver runs them, A/B)
# a run that is no replay (a warm query on a fresh connection) runs its small sorts and collections
# ``_direct`` too (0: the driver runs them; scripts/warm_timeline.py smalltail=0, A/B)
WARM_DIRECT = 1


def run_small(ctx: ExecContext, pipe: Any, direct_only: bool = False) -> bool:
    """Run host pipeline ``pipe`` (its source an earlier pipeline's result of whole batches, each one
    morsel: at most ``ctx.batch_rows`` rows and too few to be cut for several workers) as the driver
    would with one worker; False (nothing done) for any other pipeline. ``direct_only``: only the
    projections into a small sort or the result's collection (``_direct``), the tail of a query that
    is no replay (the driver runs the others: they may compile, keep their builds)."""
    src = pipe.source
    if not ENABLED[0] or ctx.device is not None or type(src) is not ResultSource:
        return False
    if direct_only and (not WARM_DIRECT or type(pipe.sink) not in (SortSink, CollectSink)
                        or any(type(op) is not ProjectOp for op in pipe.ops)):
        return False
    batches = ctx.results[src.pipeline_id]
    step, least = ctx.batch_rows, tuning.get("result_morsel_rows")
    for b in batches:
        n = b.num_rows
        if (step and n > step) or n >= 2 * least:
            return False  # (several morsels per batch: the driver cuts it)
    from hetdb.exec.shared_results import reuse

    if reuse(ctx, pipe):
        return True
    sink, ops = pipe.sink, pipe.ops
    if _direct(ctx, pipe, batches):
        return True
    if direct_only:
        return False  # (the driver asks ``reuse`` again: the same answer)
    gsrc = src.init_global(ctx)
    gops = [op.init_global(ctx) for op in ops]
    gsink = sink.init_global(ctx)
    lops = [op.init_local(ctx, g) for op, g in zip(ops, gops)]
    lsink = sink.init_local(ctx, gsink)
    for index in range(len(batches)):
        ctx.set_morsel(index)
        for b in src.read(ctx, (index, 0, batches[index].num_rows), gsrc):
            if b.num_rows:
                _push(ctx, pipe, b, 0, gops, lops, lsink, gsink)
        if any(getattr(g, "done", False) for g in gops):
            break
    sink.combine(ctx, gsink, lsink)
    # (the driver's flush: what operators emit at the end, into fresh local states)
    lops = [op.init_local(ctx, g) for op, g in zip(ops, gops)]
    lsink = sink.init_local(ctx, gsink)
    ctx.set_morsel(len(batches))
    for k, op in enumerate(ops):
        for b in op.finalize(ctx, gops[k]):
            if b.num_rows:
                _push(ctx, pipe, b, k + 1, gops, lops, lsink, gsink)
    sink.combine(ctx, gsink, lsink)
    ctx.results[pipe.pid] = sink.finalize(ctx, gsink)
    return True


def _direct(ctx: ExecContext, pipe: Any, batches: list) -> bool:
    """A pipeline of projections into a sort or the result's collection, over at most DIRECT_ROWS
    rows (in memory): the source's batches through the projections, then the sort's or the
    collection's finalize on them, as the driver would make them, without the sink's states (their
    reservations: a result this small is not worth a spill, and the batches are the ones the
    aggregation already holds) and the morsel keys (one worker: the batches stay in their order).
    False when the pipeline is not one of these."""
    sink = pipe.sink
    kind = type(sink)
    if kind is not SortSink and kind is not CollectSink:
        return False
    rows = 0
    for b in batches:
        if type(b) is not Batch:
            return False  # (a spilled slice)
        rows += b.num_rows
    if rows > DIRECT_ROWS or any(type(op) is not ProjectOp for op in pipe.ops):
        return False
    src_id = pipe.source.op_id
    outs = []
    for b in batches:
        ctx.add(src_id, rows_out=b.num_rows)
        if not b.num_rows:
            continue
        for op in pipe.ops:
            (b,) = op.execute(ctx, b, None, None)
        outs.append(b)
    if kind is CollectSink:
        ctx.add(sink.op_id, rows_in=rows, rows_out=rows)
        ctx.results[pipe.pid] = outs
        return True
    ctx.add(sink.op_id, rows_in=rows)
    if not outs:
        ctx.results[pipe.pid] = []
        return True
    with Timer(ctx, sink.op_id):  # (SortSink.finalize without spilled runs)
        batch = concat_batches(ctx.backend, outs, [f.cid for f in sink.fields])
        out = _small_sorted(ctx, sink.keys, batch, None)
        if out is None:
            arrays, desc = sort_keys(ctx, sink.keys, batch)
            out = take_batch(ctx.backend, batch, ctx.backend.sort_indices(arrays, desc))
        ctx.add(sink.op_id, rows_out=out.num_rows)
    ctx.results[pipe.pid] = [out]
    return True


def _push(ctx: ExecContext, pipe: Any, batch: Any, k: int, gops: list, lops: list, lsink: Any, gsink: Any) -> None:
    if k == len(pipe.ops):
        pipe.sink.sink(ctx, batch, gsink, lsink)
        return
    for out in pipe.ops[k].execute(ctx, batch, gops[k], lops[k]):
        if out.num_rows:
            _push(ctx, pipe, out, k + 1, gops, lops, lsink, gsink)
