"""Window functions over more rows than ``host_memory_limit``: hash partitions on disk, one at a time.

When the window sink's reservation is refused and the window has PARTITION BY keys, the rows it
buffered and every later row go to ``NUM_PARTITIONS`` spill files by the hash of their PARTITION BY
keys (strings through one ``StringKeyEncoder``, -0.0 and NaN canonical), so every window partition
lies whole in one file. ``finalize`` computes the files one at a time; a file that does not fit is
split again by the next four hash bits; a file that cannot be split (one PARTITION BY value larger
than the limit) fails with ``OutOfMemoryError`` naming the operator, as does a window without
PARTITION BY past the limit: one window partition is always computed in memory. On a GPU such a
partition is first tried on the host, within host_memory_limit. Results go to spill
files in slices (``exec/results.py``), leaving the memory to the partitions still to compute.

Every spilled row carries its morsel key and position (hidden columns), and a file's rows are put
back in that order before the window is computed, so peers (ties of the ORDER BY) are numbered
exactly as the in-memory operator numbers them.
"""

from __future__ import annotations

from typing import Any

from hetdb import types as T
from hetdb.column import Batch
from hetdb.errors import OutOfMemoryError
from hetdb.exec.columns import take_batch
from hetdb.exec.keys import StringKeyEncoder, wide_key_parts
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.sort_spill import TIE_COLUMNS, with_ties
from hetdb.exec.operators.spill_partition import NUM_PARTITIONS, partition_ids, spill_partitioned
from hetdb.exec.results import spill_slices
from hetdb.exec.wide import key_value

MAX_LEVEL = 15  # 4 hash bits a level: 60 bits
MIN_ROWS = 1 << 10  # a partition of at most this many rows is computed whatever the limit


def work_bytes(op: Any, nbytes: int, rows: int) -> int:
    """Memory computing a window over ``rows`` rows of ``nbytes`` takes: the rows and their sorted
    copy, per row the sort keys, permutation, partition/peer boundaries (four int64) and flags, and
    each function's output and frame bounds (measured: ~8x the input for two int64 columns)."""
    return 2 * nbytes + rows * (112 + 24 * len(op.funcs))


class SpillState:
    """The spilled part of a window sink's state: partition files and the string key encoder."""

    def __init__(self, ctx: ExecContext, dtypes: dict) -> None:
        self.dtypes = dtypes
        self.encoder = StringKeyEncoder(ctx.backend)
        self.files = [_new_file(ctx, dtypes) for _ in range(NUM_PARTITIONS)]


def _new_file(ctx: ExecContext, dtypes: dict) -> Any:
    f = ctx.spill_file(dtypes)
    ctx.cleanup.append(f.remove)
    return f


def _dtypes(op: Any) -> dict:
    return {**{f.cid: f.dtype for f in op.fields}, **{c: T.INT64 for c in TIE_COLUMNS}}


def _key_arrays(op: Any, ctx: ExecContext, s: SpillState, batch: Batch) -> list[Any]:
    """Hash keys of the PARTITION BY values: equal values (NULLs included) hash alike."""
    xp = ctx.backend.xp
    arrays = []
    for e in op.partition:
        col = ctx.evaluator.evaluate(e, batch)
        if col.dtype.kind == "string":
            parts = [s.encoder.encode(col)]
        elif col.dtype.kind == "float64":
            data = col.data + 0.0  # -0.0 is 0.0
            parts = [xp.where(xp.isnan(data), xp.float64("nan"), data).view(xp.int64)]
        elif col.dtype.is_wide:  # HUGEINT / DECIMAL(38): past 64 bits as its high and low halves
            parts = wide_key_parts(xp, col.data)
        else:
            data = key_value(xp, col.data)
            parts = [data.astype(xp.int32) if data.dtype == bool else data]
        # a validity for every batch (all true where none is NULL): the arrays, and so the hashes of
        # equal values, must not depend on whether a batch happens to hold a NULL
        arrays.append(col.validity if col.validity is not None else xp.ones(batch.num_rows, dtype=bool))
        arrays.extend(data if col.validity is None else xp.where(col.validity, data, xp.zeros(1, dtype=data.dtype))
                      for data in parts)
    return arrays


def spill(op: Any, ctx: ExecContext, g: Any, keyed: list[tuple[tuple[int, int], Batch]]) -> None:
    """Write (morsel key, batch) pairs into the partition files (creating them at the first spill)."""
    with g.spill_lock:
        if g.spilled is None:
            g.spilled = SpillState(ctx, _dtypes(op))
        s = g.spilled
        for key, batch in keyed:
            b = with_ties(ctx, key, Batch({f.cid: batch.columns[f.cid] for f in op.fields}, batch.num_rows))
            spill_partitioned(ctx, b, partition_ids(ctx, _key_arrays(op, ctx, s, b), None, 0), s.files)


def spill_buffered(op: Any, ctx: ExecContext, g: Any) -> None:
    """Move the batches the sink holds into the partition files and release their memory."""
    with g.lock:
        keyed, g.batches = g.batches, []
        held, g.held = g.held, 0
    spill(op, ctx, g, keyed)
    g.reservation.shrink(held)


def finish(op: Any, ctx: ExecContext, g: Any) -> list[Any]:
    """The window's output: every partition file computed on its own (held or spilled results)."""
    spill_buffered(op, ctx, g)
    ctx.add(op.op_id, spilled_partitions=NUM_PARTITIONS)
    out: list[Any] = []
    for f in g.spilled.files:
        _finish_file(op, ctx, g, f, 0, out)
    return out


def _finish_file(op: Any, ctx: ExecContext, g: Any, f: Any, level: int, out: list[Any]) -> None:
    try:
        if f.num_rows == 0:
            return
        work = Reservation(ctx.memory)
        try:
            need = work_bytes(op, f.nbytes, f.num_rows)
            if work.try_grow(need) or f.num_rows <= MIN_ROWS:
                if not work.nbytes:
                    work.force_grow(need)
                result = op.compute_batch(ctx, _in_scan_order(ctx, f))
                work.close()
                out.extend(spill_slices(ctx, result))  # the memory is for the partitions still to come
                return
        finally:
            work.close()
        subs = _split(op, ctx, g, f, level + 1) if level < MAX_LEVEL else None
        if subs is None:
            result = op.compute_on_host(ctx, lambda: _in_scan_order(ctx, f), work_bytes(op, f.nbytes, f.num_rows))
            if result is not None:
                out.extend(spill_slices(ctx, result))
                return
            raise OutOfMemoryError(
                f"{op.describe()}: one window partition of {f.num_rows:,} rows ({f.nbytes:,} bytes) does not "
                f"fit host_memory_limit={ctx.memory.limit:,} (a window partition is computed in memory); "
                "raise host_memory_limit or partition the window by more keys")
        for sub in subs:
            _finish_file(op, ctx, g, sub, level + 1, out)
    finally:
        f.remove()


def _in_scan_order(ctx: ExecContext, f: Any) -> Batch:
    """The file's rows in the order the in-memory operator would have buffered them (morsel order)."""
    (batch,) = f.read_all(ctx.backend)
    order = ctx.backend.sort_indices([batch.columns[c].data for c in TIE_COLUMNS], [False] * len(TIE_COLUMNS))
    batch = take_batch(ctx.backend, batch, order)
    return Batch({k: c for k, c in batch.columns.items() if k not in TIE_COLUMNS}, batch.num_rows)


def _split(op: Any, ctx: ExecContext, g: Any, f: Any, level: int) -> list[Any] | None:
    """``f`` split by the hash bits of ``level``; None when every row lands in one part."""
    s = g.spilled
    subs = [_new_file(ctx, s.dtypes) for _ in range(NUM_PARTITIONS)]
    for b in f.iter_batches(ctx.backend, 1 << 16):
        spill_partitioned(ctx, b, partition_ids(ctx, _key_arrays(op, ctx, s, b), None, level), subs)
    if sum(1 for x in subs if x.num_rows) <= 1:
        for x in subs:
            x.remove()
        return None
    ctx.add(op.op_id, spilled_partitions=NUM_PARTITIONS)
    return subs
