"""Hash join build: the sink that takes a join's build (right) input, and the finished build side.

The build evaluates the key columns, reserves the rows and their hash-table bytes against
``host_memory_limit`` and buffers them; ``finalize`` concatenates them and hashes the keys without a
NULL (on the GPU the table is made on first use, ``join_tables``). When a reservation is refused the
build switches to partitioned mode: every row goes by its key hash into spill files
(``spill_partition``), to be joined partition by partition with the probe side (``join_spill``).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from hetdb import types as T
from hetdb.column import Batch
from hetdb.exec.columns import batch_nbytes, concat_batches, empty_batch, full_column
from hetdb.exec.hostutil import SpillFile
from hetdb.exec.keys import encoders_for, key_arrays
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext, Sink, Timer
from hetdb.exec.operators.join_tables import _LazyTable, hash_table
from hetdb.exec.operators.spill_partition import NUM_PARTITIONS, partition_ids, spill_partitioned
from hetdb.plan.expr import Expr, Field

# Bytes a build row takes in the CPU hash table (slots at load <= 1/2, key ids, chains, CSR order),
# reserved with the row before the table is made.
HASH_BYTES_PER_ROW = 96


def key_name(i: int) -> str:
    """The name of the build batch's column holding the evaluated ``i``-th key."""
    return f"__key{i}"


@dataclass
class BuildSide:
    """The finished build: rows (right fields + evaluated key columns) and the hash table.

    On the GPU the hash table is made at its first use (``table`` / ``valid_idx``): a fused kernel
    probes the build rows through its own dense table, so the hash table is often never needed."""

    batch: Batch
    hash_table: Any           # the table, or a _LazyTable making (table, valid_idx) on first use
    row_index: Any            # table row -> batch row (None: identity)
    encoders: list
    has_null_key: bool        # over the whole build input (for mark semantics)
    nonempty: bool            # the whole build input has rows
    partitions: list[SpillFile] | None = None
    # rows a scan's runtime filter tested against this build, and how many passed (racy counts:
    # they only decide whether filtering pays)
    filter_rows: int = 0
    filter_hits: int = 0
    # rows the build pipeline's table scan read (0: unknown): num_rows / scanned_rows is the share
    # of a dimension table a build keeps, what a foreign-key probe lets through
    scanned_rows: int = 0

    @property
    def num_rows(self) -> int:
        return self.batch.num_rows

    def _resolve(self) -> None:
        lazy = self.hash_table
        if isinstance(lazy, _LazyTable):
            with lazy.lock:
                if self.hash_table is lazy:
                    if lazy.made is None:  # (made once: a build's copy, exec/shared_results.py, shares it)
                        lazy.made = lazy.make()
                    self.hash_table, self.row_index = lazy.made

    @property
    def table(self) -> Any:
        self._resolve()
        return self.hash_table

    def table_arrays(self) -> list[Any]:
        """The hash table's arrays (and valid-row index) once made, else none: what a kept build
        holds beyond its rows (cache/fused_state.py)."""
        from hetdb.exec.operators.join_tables import made_arrays

        return made_arrays(self)

    @property
    def valid_idx(self) -> Any:
        self._resolve()
        return self.row_index


class _BuildState:
    def __init__(self, ctx: ExecContext, encoders: list) -> None:
        self.lock = threading.Lock()
        self.batches: list[Batch] = []
        self.reservation = Reservation(ctx.memory)
        ctx.cleanup.append(self.reservation.close)
        self.encoders = encoders
        self.parts: list[SpillFile] | None = None
        self.has_null_key = False
        self.rows = 0


@dataclass(frozen=True)
class HashBuild(Sink):
    fields: tuple[Field, ...] = ()
    keys: tuple[Expr, ...] = ()

    def describe(self) -> str:
        return f"HashBuild keys=[{', '.join(map(str, self.keys))}]"

    def _dtypes(self) -> dict[str, T.DataType]:
        d = {f.cid: f.dtype for f in self.fields}
        d.update({key_name(i): k.dtype for i, k in enumerate(self.keys)})
        return d

    def init_global(self, ctx: ExecContext) -> Any:
        return _BuildState(ctx, encoders_for(ctx.backend, [k.dtype for k in self.keys]))

    def sink(self, ctx: ExecContext, batch: Batch, g: _BuildState, l: Any) -> None:  # noqa: E741
        with Timer(ctx, self.op_id):
            cols = {f.cid: batch.columns[f.cid] for f in self.fields}
            keycols = [ctx.evaluator.cast(ctx.evaluator.evaluate(k, batch), k.dtype) for k in self.keys]
            for i, c in enumerate(keycols):
                cols[key_name(i)] = c
            b = Batch(cols, batch.num_rows)
            arrays, valid = key_arrays(ctx.backend, keycols, g.encoders)
            with g.lock:
                g.rows += b.num_rows
                if valid is not None and not bool(valid.all()):
                    g.has_null_key = True
                if g.parts is None:
                    if g.reservation.try_grow(self._reserve_bytes(b)):
                        g.batches.append(b)
                        ctx.add(self.op_id, rows_in=b.num_rows)
                        return
                    self._start_spilling(ctx, g)
                spill_partitioned(ctx, b, self._partition(ctx, b.num_rows, arrays, valid), g.parts)
            ctx.add(self.op_id, rows_in=b.num_rows)

    def _reserve_bytes(self, b: Batch) -> int:
        """A build batch's bytes plus those its rows will take in the hash table."""
        return batch_nbytes(b) + (HASH_BYTES_PER_ROW * b.num_rows if self.keys else 0)

    def _partition(self, ctx: ExecContext, rows: int, arrays: list[Any], valid: Any) -> Any:
        """Partition per row: by key hash, or the one partition of a cross product (no key: its
        spilled build is joined in chunks against the spilled probe rows)."""
        if self.keys:
            return partition_ids(ctx, arrays, valid)
        return ctx.backend.xp.zeros(rows, dtype=ctx.backend.xp.int64)

    def _start_spilling(self, ctx: ExecContext, g: _BuildState) -> None:
        """Switch to partitioned mode (lock held): every row buffered so far goes to disk."""
        nparts = NUM_PARTITIONS if self.keys else 1
        g.parts = [ctx.spill_file(self._dtypes()) for _ in range(nparts)]
        for f in g.parts:
            ctx.cleanup.append(f.remove)
        ctx.add(self.op_id, spilled_partitions=nparts)
        for b in g.batches:
            keycols = [b.columns[key_name(i)] for i in range(len(self.keys))]
            arrays, valid = key_arrays(ctx.backend, keycols, g.encoders)
            spill_partitioned(ctx, b, self._partition(ctx, b.num_rows, arrays, valid), g.parts)
        g.batches = []
        g.reservation.close()

    def finalize(self, ctx: ExecContext, g: _BuildState) -> BuildSide:
        with Timer(ctx, self.op_id):
            if g.parts is not None:
                for f in g.parts:
                    f.close_writer()
                side = BuildSide(empty_batch(ctx.backend, self.fields), None, None, g.encoders,
                                 g.has_null_key, g.rows > 0, partitions=g.parts)
            else:
                side = self.build(ctx, g.batches, g.encoders, g.reservation, g.has_null_key, g.rows > 0)
            ctx.add(self.op_id, rows_out=g.rows)
            return side

    def build(self, ctx: ExecContext, batches: list[Batch], encoders: list, reservation: Reservation,
              has_null_key: bool, nonempty: bool) -> BuildSide:
        """Concatenate the build rows and hash the ones whose key has no NULL."""
        names = [f.cid for f in self.fields] + [key_name(i) for i in range(len(self.keys))]
        if batches:
            batch = concat_batches(ctx.backend, batches, names)
        else:
            batch = empty_batch(ctx.backend, self.fields)
            for i, k in enumerate(self.keys):
                batch.columns[key_name(i)] = full_column(ctx.backend, None, k.dtype, 0)
        if not (self.keys and batch.num_rows):
            return BuildSide(batch, None, None, encoders, has_null_key, nonempty)
        make = functools.partial(hash_table, ctx.backend, batch, len(self.keys), encoders, reservation)
        if ctx.device is not None:
            return BuildSide(batch, _LazyTable(make), None, encoders, has_null_key, nonempty)
        return BuildSide(batch, *make(), encoders, has_null_key, nonempty)
