"""External sort: ORDER BY over more rows than ``host_memory_limit`` holds.

When the sort's reservation is refused, the rows it buffered are sorted and written to a spill file
(a sorted run) and their memory is released. ``finalize`` then merges the runs k ways: each run is
read a block at a time, the blocks are sorted together, and every row up to the smallest "last row
of a block whose run has more rows" is emitted (no later row can precede it); the emitted rows are
held through ``exec/results.py`` (kept while they fit, else spilled in slices), so the output
streams instead of being concatenated. Too many runs for one merge within the limit are merged a
group at a time into longer runs first.

Ties: every row carries its morsel key and position (hidden columns), the last sort keys, so the
merged order is exactly the order of the in-memory sort (which is stable over batches in morsel
order) whatever the thread timing or the number of runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.columns import batch_nbytes, concat_batches, slice_batch, take_batch
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.results import hold

TIE_COLUMNS = ("__sort_morsel", "__sort_sub", "__sort_row")
MIN_BLOCK_ROWS = 256  # a merge reads at least this many rows of each run whatever the limit
OUTPUT_ROWS = 1 << 16  # rows emitted per held output batch (at most)
WORK_FACTOR = 4  # bytes a merge step needs per byte of block: blocks, their concatenation, keys, sorted copy


def with_ties(ctx: ExecContext, key: tuple[int, int], batch: Batch) -> Batch:
    """``batch`` with the hidden columns that order rows as collected: morsel key and row."""
    xp = ctx.backend.xp
    n = batch.num_rows
    cols = dict(batch.columns)
    cols[TIE_COLUMNS[0]] = Column(T.INT64, data=xp.full(n, key[0], dtype=xp.int64))
    cols[TIE_COLUMNS[1]] = Column(T.INT64, data=xp.full(n, key[1], dtype=xp.int64))
    cols[TIE_COLUMNS[2]] = Column(T.INT64, data=xp.arange(n, dtype=xp.int64))
    return Batch(cols, n)


def _permutation(op: Any, ctx: ExecContext, batch: Batch) -> Any:
    from hetdb.exec.operators.sort import sort_keys

    arrays, desc = sort_keys(ctx, op.keys, batch)
    arrays += [batch.columns[c].data for c in TIE_COLUMNS]
    return ctx.backend.sort_indices(arrays, desc + [False] * len(TIE_COLUMNS))


def _names(op: Any) -> list[str]:
    return [f.cid for f in op.fields] + list(TIE_COLUMNS)


def _dtypes(op: Any) -> dict:
    return {**{f.cid: f.dtype for f in op.fields}, **{c: T.INT64 for c in TIE_COLUMNS}}


def write_run(op: Any, ctx: ExecContext, g: Any, keyed: list[tuple[tuple[int, int], Batch]]) -> None:
    """Sort ``keyed`` batches (morsel key, batch) into one run on disk; appended to ``g.runs``."""
    if not keyed:
        return
    batch = concat_batches(ctx.backend, [with_ties(ctx, k, b) for k, b in keyed], _names(op))
    run = ctx.spill_file(_dtypes(op))
    ctx.cleanup.append(run.remove)
    run.write(ctx.backend, take_batch(ctx.backend, batch, _permutation(op, ctx, batch)))
    run.close_writer()
    with g.lock:
        g.runs.append(run)
    ctx.add(op.op_id, spilled_partitions=1)


def spill_buffered(op: Any, ctx: ExecContext, g: Any) -> None:
    """Move every batch the sort holds into a sorted run and release their memory."""
    with g.spill_lock:
        with g.lock:
            keyed, g.batches = g.batches, []
            held, g.held = g.held, 0
        write_run(op, ctx, g, keyed)
        g.reservation.shrink(held)


class _RunReader:
    """A sorted run read a block at a time; ``buffer`` holds its rows not yet merged."""

    def __init__(self, ctx: ExecContext, run: Any, block_rows: int):
        self.ctx = ctx
        self.blocks: Iterator[Batch] = run.iter_batches(ctx.backend, block_rows)
        self.block_rows = block_rows
        self.buffer: Batch | None = None
        self.more = True

    def top_up(self, names: list[str]) -> None:
        """Read the next block while fewer than a block's rows are buffered."""
        while self.more and (self.buffer is None or self.buffer.num_rows < self.block_rows):
            block = next(self.blocks, None)
            if block is None:
                self.more = False
            elif self.buffer is None or self.buffer.num_rows == 0:
                self.buffer = block
            else:
                self.buffer = concat_batches(self.ctx.backend, [self.buffer, block], names)


def _merge(op: Any, ctx: ExecContext, runs: list[Any], block_rows: int, emit) -> None:
    """K-way merge of sorted ``runs`` into ``emit(batch)`` calls, in order."""
    be, xp = ctx.backend, ctx.backend.xp
    names = _names(op)
    readers = [_RunReader(ctx, r, block_rows) for r in runs]
    while True:
        for r in readers:
            r.top_up(names)
        live = [r for r in readers if r.buffer is not None and r.buffer.num_rows]
        if not live:
            return
        both = concat_batches(be, [r.buffer for r in live], names)
        perm = _permutation(op, ctx, both)
        rank = xp.empty(both.num_rows, dtype=xp.int64)
        rank[perm] = xp.arange(both.num_rows, dtype=xp.int64)
        starts, pos = [], 0
        for r in live:
            starts.append(pos)
            pos += r.buffer.num_rows
        # rows after the first block end of a run with more rows could be preceded by its next block
        bounds = [int(rank[s + r.buffer.num_rows - 1]) for s, r in zip(starts, live) if r.more]
        cut = min(bounds) + 1 if bounds else both.num_rows
        emit(take_batch(be, both, perm[:cut]))
        for s, r in zip(starts, live):
            n = r.buffer.num_rows
            used = int((rank[s:s + n] < cut).sum())  # a prefix of the run's buffer (runs are sorted)
            r.buffer = slice_batch(be, r.buffer, used, n)


def _plan(ctx: ExecContext, runs: list[Any]) -> tuple[int, int]:
    """(fan-in, block rows) for merging ``runs`` within the free part of the limit."""
    rows = sum(r.num_rows for r in runs)
    row_bytes = max(1, sum(r.nbytes for r in runs) // max(1, rows))
    free = max(0, ctx.memory.limit - ctx.memory.used)
    # a block is topped up to twice its rows before a step
    fan_in = max(2, free // (2 * WORK_FACTOR * MIN_BLOCK_ROWS * row_bytes))
    k = min(fan_in, len(runs))
    block = max(MIN_BLOCK_ROWS, free // (2 * WORK_FACTOR * k * row_bytes))
    return k, block


def merge_runs(op: Any, ctx: ExecContext, g: Any) -> list[Any]:
    """The sorted result of every run (the rows still buffered become the last run): batches kept in
    memory or spilled slices (``exec/results.py``)."""
    spill_buffered(op, ctx, g)
    runs = list(g.runs)
    g.runs = []
    row_bytes = max(1, sum(r.nbytes for r in runs) // max(1, sum(r.num_rows for r in runs)))
    while True:
        k, block = _plan(ctx, runs)
        work = Reservation(ctx.memory)
        try:
            need = 2 * WORK_FACTOR * k * block * row_bytes
            if not work.try_grow(need):
                work.force_grow(need)  # the least a merge needs to make progress
            if k >= len(runs):
                return _final_merge(op, ctx, g, runs, block)
            merged = []
            for lo in range(0, len(runs), k):
                group = runs[lo:lo + k]
                if len(group) == 1:
                    merged.append(group[0])
                    continue
                out = ctx.spill_file(_dtypes(op))
                ctx.cleanup.append(out.remove)
                _merge(op, ctx, group, block, lambda b, out=out: out.write(ctx.backend, b))
                out.close_writer()
                for r in group:
                    r.remove()
                merged.append(out)
                ctx.add(op.op_id, spilled_partitions=1)
            runs = merged
        finally:
            work.close()


def _final_merge(op: Any, ctx: ExecContext, g: Any, runs: list[Any], block: int) -> list[Any]:
    be = ctx.backend
    fields = [f.cid for f in op.fields]
    out: list[Any] = []
    pending: list[Batch] = []
    rows = 0
    flush_at = min(OUTPUT_ROWS, len(runs) * block)  # rows emitted but not yet held stay within the merge's budget

    def flush() -> None:
        nonlocal pending, rows
        if pending:
            batch = concat_batches(be, pending, fields)
            out.extend(hold(ctx, g.reservation, batch))  # the sort's input bytes are all spilled by now
            pending, rows = [], 0

    def emit(batch: Batch) -> None:
        nonlocal rows
        pending.append(Batch({c: batch.columns[c] for c in fields}, batch.num_rows))
        rows += batch.num_rows
        ctx.add(op.op_id, rows_out=batch.num_rows)
        if rows >= flush_at:
            flush()

    _merge(op, ctx, runs, block, emit)
    flush()
    for r in runs:
        r.remove()
    return out


def held_bytes(batch: Batch) -> int:
    """What the sort reserves for a buffered batch: the rows, their permutation and sorted copy."""
    return 2 * batch_nbytes(batch) + 8 * batch.num_rows
