"""Results of finished pipelines held within ``host_memory_limit``: a batch whose reservation is
refused goes to a spill file in slices, and the pipelines reading it load one slice at a time."""

from __future__ import annotations

from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import batch_nbytes, slice_batch
from hetdb.exec.memory import Reservation

SLICE_ROWS = 1 << 16


class SpilledBatch:
    """A slice of a result kept in a spill file; ``load`` brings it back."""

    def __init__(self, file: Any, num_rows: int) -> None:
        self.file = file
        self.num_rows = num_rows

    def load(self, backend: Any) -> Batch:
        (batch,) = self.file.read_all(backend)
        return batch


def hold(ctx: Any, reservation: Reservation, batch: Batch) -> list[Batch | SpilledBatch]:
    """``batch`` kept in memory (reserved), or spilled in slices when the reservation is refused."""
    if reservation.try_grow(batch_nbytes(batch)):
        return [batch]
    return spill_slices(ctx, batch)


def spill_slices(ctx: Any, batch: Batch) -> list[SpilledBatch]:
    """``batch`` written to spill files in slices (for results that must leave memory to the operator
    that made them)."""
    dtypes = {k: c.dtype for k, c in batch.columns.items()}
    out: list[SpilledBatch] = []
    for lo in range(0, batch.num_rows, SLICE_ROWS):
        part = batch if batch.num_rows <= SLICE_ROWS else slice_batch(ctx.backend, batch, lo, lo + SLICE_ROWS)
        f = ctx.spill_file(dtypes)
        ctx.cleanup.append(f.remove)
        f.write(ctx.backend, part)
        f.close_writer()
        out.append(SpilledBatch(f, part.num_rows))
    return out


def loaded(backend: Any, item: Batch | SpilledBatch) -> Batch:
    """The batch of a result entry, read back from its spill file if it was spilled."""
    return item.load(backend) if isinstance(item, SpilledBatch) else item
