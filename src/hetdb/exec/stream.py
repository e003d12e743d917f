"""Streaming results: the final pipeline's sink hands Arrow batches to a bounded queue that a reader
consumes while the query still runs (``Connection.execute(...).fetch_record_batch()``).

- The queue holds at most ``capacity`` bytes (at least one batch); a worker putting more waits for
  the reader, so a slow reader slows the query down instead of filling memory.
- Batches leave in the order ``arrow()`` would give them (morsel order): a worker's batches of the
  lowest unfinished morsel go straight to the queue; batches of later morsels wait in memory up to
  ``PENDING_BYTES`` and go to spill files past that, until the morsels before them are finished
  (``ExecContext.set_morsel`` reports when a worker moves on). No worker waits for another one, so an
  error in one worker cannot leave the others waiting.
- Closing the reader early cancels the query: the next ``put`` raises ``StreamCancelled`` in the
  worker, the query unwinds through its normal error path and frees its memory.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from hetdb.column import Batch
from hetdb.errors import HetdbError
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import CollectSink

QUEUE_BYTES = 64 << 20
PENDING_BYTES = 64 << 20


class StreamCancelled(HetdbError):
    """The reader of a streamed result was closed before the end: the query stops."""


class ResultStream:
    """A bounded queue of Arrow record batches between a running query and its reader."""

    def __init__(self, capacity: float | None = None) -> None:
        self._cond = threading.Condition()
        self._items: deque[pa.RecordBatch] = deque()
        self._bytes = 0
        self.capacity = QUEUE_BYTES if capacity is None else capacity
        self.schema: pa.Schema | None = None
        self.rows = 0                 # rows put so far
        self.finished = False
        self.cancelled = False
        self.blocked = False          # the query waits for the reader
        self.error: BaseException | None = None
        self.stats: dict[str, Any] = {}

    # ---- producer side ----------------------------------------------------------------------------
    def open(self, schema: pa.Schema) -> None:
        with self._cond:
            self.schema = schema
            self._cond.notify_all()

    def put(self, batch: pa.RecordBatch) -> None:
        """Queue ``batch``; waits while the queue is full; StreamCancelled once the reader is gone."""
        n = batch.nbytes
        with self._cond:
            while not self.cancelled and self._items and self._bytes + n > self.capacity:
                self.blocked = True
                self._cond.notify_all()
                self._cond.wait()
            self.blocked = False
            if self.cancelled:
                raise StreamCancelled("the result reader was closed: query cancelled")
            self._items.append(batch)
            self._bytes += n
            self.rows += batch.num_rows
            self._cond.notify_all()

    def finish(self, error: BaseException | None = None, stats: dict[str, Any] | None = None) -> None:
        with self._cond:
            self.finished = True
            self.error = error if not isinstance(error, StreamCancelled) else None
            self.stats = stats or {}
            self._cond.notify_all()

    # ---- consumer side ----------------------------------------------------------------------------
    def wait_ready(self) -> None:
        """Wait until the query has finished or waits for the reader (the queue is full); raise its
        error if it failed before that."""
        with self._cond:
            while not self.finished and not self.blocked:
                self._cond.wait()
            if self.finished and self.error is not None and not self._items:
                raise self.error

    def get(self) -> pa.RecordBatch | None:
        """The next batch; None after the last; the query's error once the batches before it are read."""
        with self._cond:
            while not self._items and not self.finished and not self.cancelled:
                self._cond.wait()
            if self._items:
                b = self._items.popleft()
                self._bytes -= b.nbytes
                self._cond.notify_all()
                return b
            if self.error is not None:
                raise self.error
            return None

    def release(self) -> None:
        """Let the query run to its end without a reader (the rest is kept in memory)."""
        with self._cond:
            self.capacity = float("inf")
            self._cond.notify_all()
            while not self.finished and not self.cancelled:
                self._cond.wait()

    def wait_finished(self) -> None:
        """Wait until the query's thread is done (also after a cancel)."""
        with self._cond:
            while not self.finished:
                self._cond.wait()

    def cancel(self) -> None:
        """Stop the query (its next put raises) and drop what is queued."""
        with self._cond:
            self.cancelled = True
            self._items.clear()
            self._bytes = 0
            self._cond.notify_all()

    def batches(self, rows_per_batch: int) -> Iterator[pa.RecordBatch]:
        """The stream's batches cut to ``rows_per_batch`` rows (the last may be shorter). Closing the
        iterator before the end cancels the query."""
        rows_per_batch = max(1, int(rows_per_batch))
        held: list[pa.RecordBatch] = []
        count = 0
        try:
            while True:
                b = self.get()
                if b is None:
                    break
                held.append(b)
                count += b.num_rows
                while count >= rows_per_batch:
                    t = pa.Table.from_batches(held, self.schema)
                    yield t.slice(0, rows_per_batch).combine_chunks().to_batches()[0]
                    rest = t.slice(rows_per_batch)
                    held = rest.to_batches()
                    count = rest.num_rows
            if count:
                yield pa.Table.from_batches(held, self.schema).combine_chunks().to_batches()[0]
        finally:
            if not self.finished:
                self.cancel()


# ---- the sink ---------------------------------------------------------------------------------------

class _Pending:
    """Batches of one morsel that cannot go out yet; past the byte limit they go to a spill file."""

    def __init__(self) -> None:
        self.items: list[pa.RecordBatch | str] = []


class _StreamState:
    def __init__(self, ctx: ExecContext, stream: ResultStream, fields: Any) -> None:
        self.ctx, self.stream, self.fields = ctx, stream, fields
        self.lock = threading.Lock()
        self.expected = 0                      # lowest morsel not finished
        self.done: set[int] = set()
        self.pending: dict[int, _Pending] = {}
        self.pending_bytes = 0
        self.local = threading.local()         # current morsel of this worker in this pipeline

    def started(self, index: int) -> None:
        if not getattr(self.local, "active", False):
            return  # a thread working on another pipeline's morsels
        if self.stream.cancelled:  # the reader is gone: stop at the next morsel
            raise StreamCancelled("the result reader was closed: query cancelled")
        prev = getattr(self.local, "current", None)
        self.local.current = index
        if prev is not None and prev != index:
            self.finished(prev)

    def finished(self, index: int) -> None:
        with self.lock:
            self.done.add(index)
            while self.expected in self.done:
                self.done.discard(self.expected)
                self.expected += 1
                self._emit_pending(self.expected)

    def _emit_pending(self, index: int) -> None:
        p = self.pending.pop(index, None)
        if p is None:
            return
        for item in p.items:
            if isinstance(item, str):
                with pa.ipc.open_stream(item) as r:
                    batches = list(r)
                os.unlink(item)
            else:
                self.pending_bytes -= item.nbytes
                batches = [item]
            for b in batches:
                self.stream.put(b)

    def add(self, table: pa.Table) -> None:
        index = getattr(self.local, "current", None)
        with self.lock:
            if index is None or index <= self.expected:
                # the lowest unfinished morsel (or a driver without morsels): out in order now
                for b in table.to_batches():
                    self.stream.put(b)
                return
            p = self.pending.setdefault(index, _Pending())
            if self.pending_bytes + table.nbytes <= PENDING_BYTES:
                p.items.extend(table.to_batches())
                self.pending_bytes += table.nbytes
                return
            from hetdb.exec.hostutil import make_spill_dir

            make_spill_dir(self.ctx.spill_dir)
            path = os.path.join(self.ctx.spill_dir, f"stream-{uuid.uuid4().hex[:12]}.arrows")
            with pa.ipc.new_stream(path, table.schema) as w:
                w.write_table(table)
            self.ctx.cleanup.append(lambda: os.path.exists(path) and os.unlink(path))
            p.items.append(path)

    def flush_all(self) -> None:
        with self.lock:
            for index in sorted(self.pending):
                self._emit_pending(index)


@dataclass(frozen=True)
class StreamSink(CollectSink):
    """The result pipeline's sink of a streamed query: batches go to ``stream`` as Arrow."""

    stream: Any = field(default=None, compare=False)
    fields: Any = field(default=None, compare=False)

    def describe(self) -> str:
        return "Stream result"

    def init_global(self, ctx: ExecContext) -> Any:
        g = _StreamState(ctx, self.stream, self.fields)
        ctx.on_morsel = g.started
        return g

    def init_local(self, ctx: ExecContext, g: _StreamState) -> Any:
        g.local.current = None
        g.local.active = True  # this thread now pushes this pipeline's morsels
        return None

    def sink(self, ctx: ExecContext, batch: Batch, g: _StreamState, l: Any) -> None:  # noqa: E741
        from hetdb.exec.hostutil import to_arrow_table

        g.add(to_arrow_table(ctx.backend, batch, g.fields, ctx.options.timezone))
        ctx.add(self.op_id, rows_in=batch.num_rows, rows_out=batch.num_rows)

    def combine(self, ctx: ExecContext, g: _StreamState, l: Any) -> None:  # noqa: E741
        current = getattr(g.local, "current", None)
        g.local.current = None
        g.local.active = False
        if current is not None:
            g.finished(current)

    def finalize(self, ctx: ExecContext, g: _StreamState) -> list[Batch]:
        ctx.on_morsel = None
        g.flush_all()
        return []


def streaming_plan(physical: Any, stream: ResultStream, fields: Any) -> Any:
    """``physical`` with its result pipeline's sink replaced by a StreamSink feeding ``stream`` the
    columns ``fields`` (the plan's output fields)."""
    pipes = []
    for p in physical.pipelines:
        if p.pid == physical.result_pipeline:
            p = dataclasses.replace(p, sink=StreamSink(label="result", op_id=p.sink.op_id, stream=stream,
                                                       fields=fields))
        pipes.append(p)
    return dataclasses.replace(physical, pipelines=pipes)
