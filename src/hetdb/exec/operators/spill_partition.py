"""Hash partitioning of rows into spill files: what a hash join's build and probe, a spilling
aggregation and a spilling window use when their input does not fit ``host_memory_limit`` (the same
partition function on every side, so matching keys meet in the same partition)."""

from __future__ import annotations

from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import take_batch
from hetdb.exec.hostutil import SpillFile
from hetdb.exec.operators.base import ExecContext

NUM_PARTITIONS = 16


def partition_ids(ctx: ExecContext, arrays: list[Any], valid: Any, level: int = 0) -> Any:
    """Partition (0..NUM_PARTITIONS-1) of each row from the top bits of its key hash (the next four
    bits at each ``level`` of re-partitioning); NULL-key rows go to partition 0 (they match nothing)."""
    xp = ctx.backend.xp
    h = ctx.backend.hash_keys(arrays)
    part = ((h >> xp.uint64(60 - 4 * level)) & xp.uint64(NUM_PARTITIONS - 1)).astype(xp.int64)
    if valid is not None:
        part = xp.where(valid, part, 0)
    return part


def spill_partitioned(ctx: ExecContext, batch: Batch, part: Any, files: list[SpillFile]) -> None:
    for p in range(len(files)):
        idx = ctx.backend.nonzero(part == p)
        if int(idx.shape[0]):
            files[p].write(ctx.backend, take_batch(ctx.backend, batch, idx))
