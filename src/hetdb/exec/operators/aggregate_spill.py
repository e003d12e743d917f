"""Final groups of a spilled aggregation, one partition at a time in bounded memory.

A partition whose states (or raw rows, for DISTINCT) do not fit ``host_memory_limit`` is split again
by the next four bits of the group-key hash, down to partitions that fit. A partition that cannot be
split (every row has the same key hash: one group) merges its partial states a slice at a time —
they reduce to one row per group — or, holding raw rows for DISTINCT, computes each aggregate on its
own (``aggregate_distinct_spill.py``).
"""

from __future__ import annotations

from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import batch_nbytes, concat_batches
from hetdb.exec.memory import Reservation, release_free_heap
from hetdb.exec.operators.aggregate import _g
from hetdb.exec.operators.aggregate_distinct_spill import one_key_raw
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.spill_partition import NUM_PARTITIONS, partition_ids, spill_partitioned
from hetdb.exec.results import hold, spill_slices

SLICE_ROWS = 1 << 16
MAX_LEVEL = 15  # 4 hash bits a level: 60 bits
# A partition of at most this many rows is finished whatever the limit (the least it takes to make
# progress: the accounted peak may pass the limit by this many rows' states).
MIN_ROWS = 1 << 10
# the most of host_memory_limit a spilled aggregation's finished groups keep in memory
HELD_SHARE = 0.25


def finish_partitions(op: Any, ctx: ExecContext, g: Any) -> tuple[list[Any], int]:
    """The result of a spilled aggregation (``op`` a HashAggregate, ``g`` its state): each spilled
    partition finished in turn and its groups held in ``g.reservation`` (up to ``HELD_SHARE`` of the
    limit) or spilled in slices before the next one starts; (held result entries, rows)."""
    held: list[Any] = []
    rows = 0
    for f in g.parts:
        release_free_heap()  # the last partition's working memory
        for b in finish_partition(op, ctx, g, f, 1):
            if not b.num_rows:
                continue
            rows += b.num_rows
            if g.reservation.nbytes + batch_nbytes(b) <= ctx.memory.limit * HELD_SHARE:
                held.extend(hold(ctx, g.reservation, b))
            else:
                # the partitions still to finish need the rest of the limit
                held.extend(spill_slices(ctx, b))
    release_free_heap()
    if not held:
        # no groups: an aggregate without GROUP BY still has its one row; else an empty batch
        held = hold(ctx, g.reservation, op._final(ctx, g, []))
    return held, rows


def finish_partition(op: Any, ctx: ExecContext, g: Any, f: Any, level: int) -> list[Batch]:
    """Final result batches of spilled partition ``f`` (``op`` a HashAggregate); removes ``f``."""
    try:
        if f.num_rows == 0:
            return []
        res = Reservation(ctx.memory)
        try:
            # the states read back, concatenated, their merged copy and the output columns made from
            # it, and the merge's hash table
            need = 4 * f.nbytes + op.merge_bytes(f.num_rows)
            if res.try_grow(need) or f.num_rows <= MIN_ROWS:
                if not res.nbytes:
                    res.force_grow(need)
                return [op._final(ctx, g, f.read_all(ctx.backend))]
        finally:
            res.close()
        if op.keys and level <= MAX_LEVEL:
            subs = _split(op, ctx, g, f, level)
            if subs is not None:
                out = []
                for sub in subs:
                    out.extend(finish_partition(op, ctx, g, sub, level + 1))
                return out
        if op.raw_mode:
            return [one_key_raw(op, ctx, g, f)]
        return [op._outputs(ctx, _merge_slices(op, ctx, g, f))]
    finally:
        f.remove()


def _split(op: Any, ctx: ExecContext, g: Any, f: Any, level: int) -> list[Any] | None:
    """``f`` split by the hash bits of ``level``; None when every row lands in one part."""
    subs = [ctx.spill_file(op._state_dtypes()) for _ in range(NUM_PARTITIONS)]
    for s in subs:
        ctx.cleanup.append(s.remove)
    for b in f.iter_batches(ctx.backend, SLICE_ROWS):
        keycols = [b.columns[_g(i)] for i in range(len(op.keys))]
        part = partition_ids(ctx, op._key_arrays(ctx, g, keycols, b.num_rows), None, level)
        spill_partitioned(ctx, b, part, subs)
    if sum(1 for s in subs if s.num_rows) <= 1:
        for s in subs:
            s.remove()
        return None
    ctx.add(op.op_id, spilled_partitions=NUM_PARTITIONS)
    return subs


def _merge_slices(op: Any, ctx: ExecContext, g: Any, f: Any) -> Batch:
    """Partial states of one key hash merged a slice at a time (they reduce to few groups)."""
    res = Reservation(ctx.memory)
    try:
        merged = None
        for b in f.iter_batches(ctx.backend, SLICE_ROWS):
            both = b if merged is None else concat_batches(ctx.backend, [merged, b], list(op._state_dtypes()))
            merged = op._merge(ctx, g, both)
            res.close()
            res.force_grow(batch_nbytes(merged))
        return merged
    finally:
        res.close()
