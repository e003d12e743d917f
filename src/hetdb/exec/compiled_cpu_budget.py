"""The compiled CPU loops' per-worker group tables within ``host_memory_limit``.

A worker's group table (backend/cpu/codegen/runtime: slots, key bits, validity, accumulators) doubles
when it is full. Each table is reserved before it is made; when the limit refuses a bigger one, the
worker hands its groups to the aggregation as a partial-state batch (which the aggregation keeps,
merges or spills by group-key hash like any other partial) and goes on with a fresh, small table.
A table grows only while twice its new size fits (its flush copies the groups out before the table
is freed). A table of fewer than ``MIN_FLUSH_GROUPS`` groups grows whatever the limit (the least it takes to
make progress; the aggregation's own reservations then spill).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.cpu.codegen import runtime
from hetdb.exec.memory import Reservation, release_free_heap
from hetdb.exec.operators.base import ExecContext

MIN_FLUSH_GROUPS = 1 << 10


def table_nbytes(state: tuple) -> int:
    return sum(int(a.nbytes) for a in state[:5])


def grown_nbytes(state: tuple, groups: int) -> int:
    """Bytes of ``runtime.reserve(state, groups)``'s new table (the capacity it rounds to)."""
    cap = max(64, 1 << (int(groups) - 1).bit_length())
    _, gk, gv, ia, fa, _ = state
    per_group = gk.itemsize * gk.shape[0] + gv.itemsize * gv.shape[0] + 8 * (ia.shape[0] + fa.shape[0])
    return 2 * cap * 8 + cap * per_group


class TableBudget:
    """The reservation of one worker's group table."""

    def __init__(self, ctx: ExecContext) -> None:
        self.res = Reservation(ctx.memory)
        ctx.cleanup.append(self.res.close)

    def new(self, num_keys: int, num_int: int, num_float: int, groups: int = 0, direct: int = 0) -> tuple:
        """A fresh table; ``groups`` > 0: a table over key runs (no slots) for that many groups
        when the limit lets it be that big (its untouched zeroed pages cost no memory); ``direct``
        > 0: that many direct slots (pipeline_py.Aggregate.direct) instead of hashed ones."""
        if direct:
            state = runtime.new_state(num_keys, num_int, num_float, slots=False)
            state = (np.zeros(direct, np.int64), *state[1:])
            self.res.force_grow(table_nbytes(state))
            return state
        if groups:
            # (no slots: its 2 x groups zeroed int64 were made and dropped per morsel, 40% of the
            # zeroing of TPC-H q11's 16 key-run tables of 131k groups at SF 10)
            state = runtime.new_state(num_keys, num_int, num_float, groups, slots=False)
            if self.res.try_grow(table_nbytes(state)):
                return state
        state = runtime.new_state(num_keys, num_int, num_float)
        self.res.force_grow(table_nbytes(state))
        return state

    def grow(self, state: tuple, groups: int, rehash: bool = True) -> tuple | None:
        """``state`` with room for ``groups`` groups, or None when the limit refuses the bigger table
        (the caller flushes the groups and starts a fresh table)."""
        if groups <= state[1].shape[1]:
            return state
        need = grown_nbytes(state, groups)
        # the bigger table must leave room for the partial-state batch its flush copies out
        if self.res.try_grow(2 * need):
            self.res.shrink(need)
        elif state[5] >= MIN_FLUSH_GROUPS:
            return None
        else:
            self.res.force_grow(need)
        grown = runtime.reserve(state, groups, rehash)
        self.res.shrink(table_nbytes(state))
        return grown

    def release(self) -> None:
        self.res.close()


def flush_table(worker: Any, lsink: Any, partial: Any, key_range: tuple[int, int] | None = None,
                trim: bool = False) -> None:
    """Hand ``worker.state``'s groups to its aggregation (``partial`` builds the batch); the table's
    memory is released before the aggregation reserves the batch. ``key_range``: the groups' one key
    is strictly increasing from its first to its last value (see HashAggregate.add_partial).
    ``trim``: the limit refused a bigger table, give the C heap's free pages back to the system
    (glibc's malloc_trim walks every arena under its lock and its released pages fault in again:
    after each flush of a morsel's key runs or of each worker's table it serialised the workers)."""
    state, worker.state = worker.state, None
    if state is None or not state[5]:
        worker.budget.release()
        return
    part = partial(state)
    del state
    worker.budget.release()
    worker.pipe.sink.add_partial(worker.ctx, part, worker.run.gsink, lsink, key_range)
    del part
    if trim:
        release_free_heap()
