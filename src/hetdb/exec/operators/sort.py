"""ORDER BY (a sink that sorts everything it received) and top-N (a sink that keeps the best
limit+offset rows per batch and merges them).

NULL placement: a nullable key is preceded by a bool key (NULL last: "is null"; NULL first: "is
valid"), so the kernel never sees NULLs. Strings sort by factorized codes, which order like the
strings byte-wise (DuckDB's default collation).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import batch_nbytes, concat_batches, slice_batch, take_batch, to_plain
from hetdb.exec.memory import Reservation
from hetdb.exec.operators import sort_spill
from hetdb.exec.operators.base import ExecContext, Sink, Timer, in_morsel_order
from hetdb.exec.wide import sort_key
from hetdb.plan.expr import Field, SortKey

# A sort of at most this many rows runs whatever the limit (the least it needs to make progress).
MIN_ROWS = 1 << 10
# host dictionaries up to this many strings are ranked whole, once, whatever the rows sorted
RANKED_DICTIONARY_ENTRIES = 1 << 16


def sort_keys(ctx: ExecContext, keys: tuple[SortKey, ...], batch: Batch) -> tuple[list[Any], list[bool]]:
    """Kernel keys and directions for ``keys`` over ``batch``."""
    be, xp = ctx.backend, ctx.backend.xp
    arrays, desc = [], []
    for k in keys:
        col = ctx.evaluator.evaluate(k.expr, batch)
        if col.validity is not None:
            arrays.append(col.validity if k.nulls_first else xp.logical_not(col.validity))
            desc.append(False)
        if col.dtype.kind == "string":
            data = string_ranks(be, col)
        else:
            data = col.data
        if data.dtype == bool:
            data = data.astype(xp.int32)
        if col.validity is not None:
            # Values under NULL are arbitrary: make all NULLs equal so later keys order them.
            data = xp.where(col.validity, data, xp.zeros(1, dtype=data.dtype))
        arrays.append(sort_key(xp, data))
        desc.append(k.descending)
    return arrays, desc


def string_ranks(be: Any, col: Any) -> Any:
    """Codes of a string column that order like its strings (equal strings, equal codes). A column of
    dictionary codes is ranked through its dictionary (its strings factorized once, each row's code
    mapped) instead of gathering and factorizing every row's string when the dictionary has no more
    entries than the column has rows (TPC-H q16's 27,840 rows by p_brand (25 strings), p_type (150)),
    or when it is a host dictionary of at most RANKED_DICTIONARY_ENTRIES: its ranks are then kept
    while it lives (dictionary_memo.SORT_RANKS), so the small sorted results of repeated queries (a
    hot SSB query's 280 rows by p_brand1, 1,000 strings) rank each row by one look-up."""
    d = col.dictionary
    if d is not None and col.data is not None and 0 < len(d):
        from hetdb.exec.dictionary_memo import SORT_RANKS

        memo = be.name == "cpu"  # (host arrays only: a device copy would outlive its query)
        ranks = SORT_RANKS.get(d) if memo else None
        if ranks is None and (len(d) <= len(col) or (memo and len(d) <= RANKED_DICTIONARY_ENTRIES)):
            plain = to_plain(be, d)
            ranks, _, _ = be.factorize_strings(plain.offsets, plain.chars)
            if memo:
                SORT_RANKS.put(d, ranks)
        if ranks is not None:
            codes = col.data
            if col.validity is not None:  # (a NULL row's code may be anything)
                codes = be.xp.where(col.validity, codes, be.xp.zeros(1, dtype=codes.dtype))
            return ranks[codes]
    plain = to_plain(be, col)
    codes, _, _ = be.factorize_strings(plain.offsets, plain.chars)
    return codes


class _SortState:
    def __init__(self, ctx: ExecContext) -> None:
        self.lock = threading.Lock()
        self.batches: list[Batch] = []
        self.reservation = Reservation(ctx.memory)
        ctx.cleanup.append(self.reservation.close)
        self.rows = 0
        self.held = 0  # bytes reserved for the batches buffered now
        self.runs: list = []  # sorted runs spilled to disk (operators/sort_spill.py)
        self.spill_lock = threading.Lock()


@dataclass(frozen=True)
class SortSink(Sink):
    """Buffers its input and sorts it at the end. Past ``host_memory_limit`` the buffered rows go to
    disk as sorted runs that ``finalize`` merges (``operators/sort_spill.py``: external merge sort)."""

    fields: tuple[Field, ...] = ()
    keys: tuple[SortKey, ...] = ()

    def describe(self) -> str:
        return "Sort " + ", ".join(
            f"{k.expr} {'DESC' if k.descending else 'ASC'} NULLS {'FIRST' if k.nulls_first else 'LAST'}"
            for k in self.keys)

    def init_global(self, ctx: ExecContext) -> Any:
        return _SortState(ctx)

    def sink(self, ctx: ExecContext, batch: Batch, g: _SortState, local: Any) -> None:
        # the rows, then their permutation and the sorted copy at the end
        need = sort_spill.held_bytes(batch)
        key = ctx.current_morsel_key()
        with g.lock:
            g.rows += batch.num_rows
            small = g.rows <= MIN_ROWS
        ctx.add(self.op_id, rows_in=batch.num_rows)
        if not g.reservation.try_grow(need):
            if small:  # the least a sort holds whatever the limit
                g.reservation.force_grow(need)
            else:
                sort_spill.spill_buffered(self, ctx, g)
                if not g.reservation.try_grow(need):  # other workers hold the rest: a run of its own
                    sort_spill.write_run(self, ctx, g, [(key, batch)])
                    return
        with g.lock:
            g.batches.append((key, batch))
            g.held += need

    def finalize(self, ctx: ExecContext, g: _SortState) -> list[Batch]:
        with Timer(ctx, self.op_id):
            if g.runs:
                return sort_spill.merge_runs(self, ctx, g)
            batches = in_morsel_order(g.batches)
            if not batches:
                return []
            batch = concat_batches(ctx.backend, batches, [f.cid for f in self.fields])
            out = _small_sorted(ctx, self.keys, batch, None)
            if out is None:
                arrays, desc = sort_keys(ctx, self.keys, batch)
                perm = ctx.backend.sort_indices(arrays, desc)
                out = take_batch(ctx.backend, batch, perm)
            ctx.add(self.op_id, rows_out=out.num_rows)
            return [out]


@dataclass(frozen=True)
class TopNSink(Sink):
    """The first ``limit`` rows after ``offset`` in sort order, keeping at most limit+offset rows."""

    fields: tuple[Field, ...] = ()
    keys: tuple[SortKey, ...] = ()
    limit: int = 0
    offset: int = 0

    def describe(self) -> str:
        keys = ", ".join(f"{k.expr} {'DESC' if k.descending else 'ASC'}" for k in self.keys)
        return f"TopN {self.limit} offset {self.offset} by {keys}"

    def init_global(self, ctx: ExecContext) -> Any:
        return _SortState(ctx)

    def init_local(self, ctx: ExecContext, g: Any) -> Any:
        return {"best": None}

    def _best(self, ctx: ExecContext, batch: Batch) -> Batch:
        k = self.limit + self.offset
        if batch.num_rows <= k:
            return batch  # nothing to drop yet; finalize sorts
        arrays, desc = sort_keys(ctx, self.keys, batch)
        idx = ctx.backend.topk_indices(arrays, desc, min(k, batch.num_rows))
        return take_batch(ctx.backend, batch, idx)

    def sink(self, ctx: ExecContext, batch: Batch, g: _SortState, local: dict) -> None:
        with Timer(ctx, self.op_id):
            ctx.add(self.op_id, rows_in=batch.num_rows)
            names = [f.cid for f in self.fields]
            both = batch if local["best"] is None else concat_batches(ctx.backend, [local["best"], batch], names)
            local["best"] = self._best(ctx, both)

    def combine(self, ctx: ExecContext, g: _SortState, local: dict) -> None:
        if local["best"] is not None:
            g.reservation.force_grow(batch_nbytes(local["best"]))
            with g.lock:
                g.batches.append(local["best"])

    def finalize(self, ctx: ExecContext, g: _SortState) -> list[Batch]:
        with Timer(ctx, self.op_id):
            if not g.batches:
                return []
            batch = concat_batches(ctx.backend, g.batches, [f.cid for f in self.fields])
            k = min(self.limit + self.offset, batch.num_rows)
            best = _small_sorted(ctx, self.keys, batch, k)
            if best is None:
                arrays, desc = sort_keys(ctx, self.keys, batch)
                best = take_batch(ctx.backend, batch, ctx.backend.topk_indices(arrays, desc, k))
            out = slice_batch(ctx.backend, best, self.offset, self.offset + self.limit)
            ctx.add(self.op_id, rows_out=out.num_rows)
            return [out] if out.num_rows else []


def _small_sorted(ctx: ExecContext, keys: tuple[SortKey, ...], batch: Batch, k: int | None) -> Batch | None:
    """``batch`` (a small one on the GPU) in key order, its first ``k`` rows when given, ordered on
    the host (operators/sort_small.py) and gathered only when not already in order; None when the
    batch is not one for that."""
    from hetdb.exec.operators.sort_small import host_order, is_prefix_order

    perm = host_order(ctx, keys, batch, k)
    if perm is None:
        return None
    if is_prefix_order(perm):
        return batch if perm.shape[0] == batch.num_rows else slice_batch(ctx.backend, batch, 0, int(perm.shape[0]))
    return take_batch(ctx.backend, batch, ctx.backend.xp.asarray(perm))
