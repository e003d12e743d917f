"""The pairs of spilled partitions of a hash join, joined one after the other in bounded memory.

A build partition is hashed in chunks that fit ``host_memory_limit`` (a partition of one key — a
skewed join — is as large as the key's rows, so partitioning alone cannot bound it), and the probe
partition is streamed against each chunk one record batch at a time. Kinds whose output for a probe
row depends on every build row (left, full, single, semi, anti, mark) keep flags per probe row of
the partition across chunks (one or two bytes a row, eight for single) and emit those probe rows
after the last chunk; build-side kinds (right, right semi/anti) finish each chunk's build rows as it
is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import batch_nbytes, slice_batch
from hetdb.exec.keys import key_arrays
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.base import ExecContext

# Rows read back from a spill file at a time, and the smallest build chunk (the least a chunk holds,
# whatever the limit, so the join makes progress: the "slack" over the limit is this many rows).
SLICE_ROWS = 1 << 16
MIN_CHUNK_ROWS = 1 << 10
TRACKED = ("left", "full", "single", "semi", "anti", "mark")
BUILD_SIDE = ("right", "full", "right_semi", "right_anti")


def join_partitions(op: Any, ctx: ExecContext, side: Any, g: Any) -> Iterator[Batch]:
    """Output of a partitioned join (``op`` a HashProbe, ``side`` its spilled BuildSide)."""
    for p, build_file in enumerate(side.partitions):
        probe_file = g.parts[p] if g.parts is not None else None
        if (probe_file is None or probe_file.num_rows == 0) and op.kind not in BUILD_SIDE:
            build_file.remove()
            continue
        yield from _join_partition(op, ctx, side, build_file, probe_file, g)
        build_file.remove()
        if probe_file is not None:
            probe_file.remove()


def build_chunks(op: Any, ctx: ExecContext, build_file: Any, reservation: Reservation) -> Iterator[list[Batch]]:
    """The partition's build rows as lists of batches, each reserved (with its hash table's bytes)
    before it is read further; the caller releases a chunk before taking the next."""
    from hetdb.exec.operators.join_build import HASH_BYTES_PER_ROW

    per_row = HASH_BYTES_PER_ROW if op.build.keys else 0
    chunk: list[Batch] = []
    for batch in build_file.iter_batches(ctx.backend, SLICE_ROWS):
        queue = [batch]
        while queue:
            b = queue.pop()
            need = batch_nbytes(b) + per_row * b.num_rows
            if reservation.try_grow(need):
                chunk.append(b)
                continue
            if chunk:
                yield chunk
                chunk = []
                queue.append(b)
                continue
            if b.num_rows > MIN_CHUNK_ROWS:
                half = b.num_rows // 2
                queue.append(slice_batch(ctx.backend, b, half, b.num_rows))
                queue.append(slice_batch(ctx.backend, b, 0, half))
                continue
            reservation.force_grow(need)
            chunk.append(b)
    if chunk:
        yield chunk


class _Flags:
    """Per probe row of one partition: matched (and NULL residual for mark, match count for single)."""

    def __init__(self, ctx: ExecContext, kind: str, rows: int, reservation: Reservation) -> None:
        xp = ctx.backend.xp
        reservation.force_grow(rows * (8 if kind == "single" else 2))
        self.hit = xp.zeros(rows, dtype=bool)
        self.res_null = xp.zeros(rows, dtype=bool) if kind == "mark" else None
        self.count = xp.zeros(rows, dtype=xp.int64) if kind == "single" else None


def _join_partition(op: Any, ctx: ExecContext, side: Any, build_file: Any, probe_file: Any,
                    g: Any) -> Iterator[Batch]:
    kind = op.kind
    rows = probe_file.num_rows if probe_file is not None else 0
    reservation = Reservation(ctx.memory)
    flag_bytes = Reservation(ctx.memory)
    try:
        flags = _Flags(ctx, kind, rows, flag_bytes) if kind in TRACKED and rows else None
        for chunk in build_chunks(op, ctx, build_file, reservation):
            part = op.build.build(ctx, chunk, side.encoders, reservation, side.has_null_key, side.nonempty)
            chunk = None
            if rows:
                off = 0
                for pb in probe_file.iter_batches(ctx.backend, SLICE_ROWS):
                    if flags is None:
                        yield from op._join(ctx, part, pb, g)
                    else:
                        yield from _track(op, ctx, part, pb, off, flags, g)
                    off += pb.num_rows
            if kind in ("right", "full"):
                yield from op._unmatched_build(ctx, part, g)
            elif kind in ("right_semi", "right_anti"):
                yield from op._marked_build(ctx, part, g)
            op.forget(part, g)
            part = None
            reservation.close()
        if flags is not None:
            yield from _finish(op, ctx, side, probe_file, flags, reservation)
    finally:
        reservation.close()
        flag_bytes.close()


def _track(op: Any, ctx: ExecContext, part: Any, pb: Batch, off: int, flags: _Flags, g: Any) -> Iterator[Batch]:
    """Probe ``pb`` (rows ``off``.. of the partition) against one build chunk: emit its matched pairs
    (left, full, single) and record which of its rows matched."""
    from hetdb.exec.operators.join import check_single

    xp = ctx.backend.xp
    n = pb.num_rows
    mt = op.match(ctx, part, pb)
    if mt.hit is not None:
        flags.hit[off:off + n] |= mt.hit
    else:
        flags.hit[off + mt.pi] = True
    if mt.res_null is not None:
        flags.res_null[off:off + n] |= mt.res_null
    if op.kind not in ("left", "full", "single") or not int(mt.pi.shape[0]):
        return
    if op.kind == "single":
        flags.count[off:off + n] += xp.bincount(mt.pi, minlength=n)
        check_single(flags.count[off:off + n])
    if op.kind == "full":
        matched = op._matched(ctx, part, g)
        with g.lock:
            matched[mt.bi] = True
    yield op._pairs(ctx, pb, part, mt.pi, mt.bi)


def _finish(op: Any, ctx: ExecContext, side: Any, probe_file: Any, flags: _Flags,
            reservation: Reservation) -> Iterator[Batch]:
    """After every chunk: the probe rows of kinds decided by all build rows."""
    empty = op.build.build(ctx, [], side.encoders, reservation, side.has_null_key, side.nonempty)
    off = 0
    for pb in probe_file.iter_batches(ctx.backend, SLICE_ROWS):
        n = pb.num_rows
        hit = flags.hit[off:off + n]
        if op.kind in ("semi", "anti", "mark"):
            pvalid = None
            if op.kind == "mark":
                ev = ctx.evaluator
                keycols = [ev.cast(ev.evaluate(k, pb), k.dtype) for k in op.left_keys]
                pvalid = key_arrays(ctx.backend, keycols, side.encoders, add=False)[1] if keycols else None
            res_null = None if flags.res_null is None else flags.res_null[off:off + n]
            yield op._finish_filtering(ctx, empty, pb, hit, pvalid, res_null)
        else:
            yield from op.unmatched_probe(ctx, empty, pb, hit)
        off += n
