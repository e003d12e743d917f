"""Hash aggregation: partial aggregation per batch, merge of the partial states, final values.

Group keys may be NULL (a NULL key is its own group: each key adds its validity as an extra kernel
key). State per aggregate: sum -> (sum, has value), count -> count, avg -> (sum, count), min/max/any ->
the value itself (strings too). Aggregates with DISTINCT make the operator keep the raw rows and
aggregate them at the end. When the state's memory reservation is refused, partial states (or raw
rows) are hash-partitioned by group key into spill files and each partition is merged on its own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from hetdb import types as T
from hetdb.backend.cpu import tuning
from hetdb.column import Batch, Column
from hetdb.exec.columns import (
    batch_nbytes,
    coalesce_batches,
    concat_batches,
    full_column,
    slice_batch,
    take,
    to_plain,
)
from hetdb.exec.conversions import convert
from hetdb.exec.group_fd import follows_groups, plain_string
from hetdb.exec.hostutil import SpillFile
from hetdb.exec.keys import encoders_for, wide_key_parts
from hetdb.exec.memory import Reservation, release_free_heap
from hetdb.exec.operators.aggregate_parallel import parallel_final
from hetdb.exec.operators.base import ExecContext, Sink, Timer
from hetdb.exec.operators.spill_partition import NUM_PARTITIONS, partition_ids, spill_partitioned
from hetdb.exec.results import hold
from hetdb.exec.wide import group_sum, is_object, key_value, sort_key
from hetdb.plan.expr import AggCall, Expr, Field

MERGE_ROWS = 1 << 18  # a worker merges its partial states once they hold this many groups
# Bytes per partial-state row a merge's hash table and key matrix take (beside the states).
GROUP_BYTES_PER_ROW = 96
# Final merges of at most this many state rows run whatever the limit (the least needed to progress).
MIN_FINAL_ROWS = 1 << 10
SPILL_SLICE_ROWS = 1 << 18  # partial states partitioned into spill files this many rows at a time
MERGE_KEEP = 0.8  # a local merge that keeps more of its groups than this stops the worker merging


def _g(i: int) -> str:
    return f"__g{i}"


def _s(j: int, part: str) -> str:
    return f"__a{j}_{part}"


def _sum_type(t: T.DataType) -> T.DataType:
    """The state type of SUM/AVG: DOUBLE, else exact and 128 bits wide like DuckDB's SUM result."""
    if t.kind == "float64":
        return T.FLOAT64
    if t.kind == "decimal":
        return T.wide_decimal(T.MAX_WIDE_PRECISION, t.scale)
    return T.INT128


# False: key-run partial states are concatenated into one batch first (A/B runs)
RUN_PIECES = True


class _AggState:
    def __init__(self, ctx: ExecContext, key_dtypes: list[T.DataType]) -> None:
        self.lock = threading.Lock()
        self.batches: list[Batch] = []
        self.reservation = Reservation(ctx.memory)
        ctx.cleanup.append(self.reservation.close)
        self.encoders = encoders_for(ctx.backend, key_dtypes)
        self.value_encoders: dict[int, Any] = {}
        self.parts: list[SpillFile] | None = None
        # set by a fused GPU kernel whose one partial-state batch already holds each group once
        self.groups_unique = False
        # partial states whose one key is strictly increasing, with its (first, last) value: when
        # their ranges do not overlap (a table clustered by the key), they hold each group once
        self.runs: list[tuple[tuple[int, int], Batch]] = []


class _AggLocal:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.rows = 0
        self.nbytes = 0
        self.merge_at = MERGE_ROWS  # doubles past what a merge leaves, so merges stay linear overall


@dataclass(frozen=True)
class HashAggregate(Sink):
    keys: tuple[tuple[Field, Expr], ...] = ()
    aggs: tuple[tuple[Field, AggCall], ...] = ()

    def describe(self) -> str:
        k = ", ".join(f"{f.cid}={e}" for f, e in self.keys)
        a = ", ".join(f"{f.cid}={e}" for f, e in self.aggs)
        return f"HashAggregate keys=[{k}] aggs=[{a}]"

    @property
    def raw_mode(self) -> bool:
        return any(a.distinct for _, a in self.aggs)

    # ---- state layout ---------------------------------------------------------------------------------
    def _state_dtypes(self) -> dict[str, T.DataType]:
        d = {_g(i): e.dtype for i, (_, e) in enumerate(self.keys)}
        for j, (_, a) in enumerate(self.aggs):
            if self.raw_mode:
                if a.arg is not None:
                    d[_s(j, "raw")] = a.arg.dtype
                continue
            if a.op in ("sum", "avg"):
                d[_s(j, "sum")] = _sum_type(a.arg.dtype)
            if a.op in ("count", "count_star", "avg"):
                d[_s(j, "cnt")] = T.INT64
            if a.op in ("min", "max", "any"):
                d[_s(j, "val")] = a.arg.dtype
        return d

    def init_global(self, ctx: ExecContext) -> Any:
        return _AggState(ctx, [e.dtype for _, e in self.keys])

    def init_local(self, ctx: ExecContext, g: Any) -> Any:
        return _AggLocal()

    # ---- grouping ----------------------------------------------------------------------------------------
    def _group(self, ctx: ExecContext, g: _AggState, keycols: list[Column], n: int):
        if not keycols:
            # without keys the kernel cannot know the row count: one group when there are rows
            xp = ctx.backend.xp
            return xp.zeros(n, dtype=xp.int64), (1 if n else 0), xp.zeros(1 if n else 0, dtype=xp.int64)
        strings = [plain_string(c) for c in keycols]
        if any(strings) and not all(strings):
            # plain-string keys fixed by the other keys (a key and what describes it) need no numbering
            others = [(c, e) for c, e, s in zip(keycols, g.encoders, strings) if not s]
            found = ctx.backend.group_ids(self._key_arrays(ctx, g, [c for c, _ in others], n, local=True,
                                                           encoders=[e for _, e in others]))
            xp = ctx.backend.xp
            if all(follows_groups(xp, c, found[0], found[2]) for c, s in zip(keycols, strings) if s):
                return found
        return ctx.backend.group_ids(self._key_arrays(ctx, g, keycols, n, local=True))

    def _key_arrays(self, ctx: ExecContext, g: _AggState, keycols: list[Column], n: int,
                    local: bool = False, encoders: list[Any] | None = None) -> list[Any]:
        """Kernel keys; ``local``: ids need only agree within this call (grouping one batch), so
        strings are numbered by their own dictionary codes or factorized, never mapped through the
        operator's shared (Python) encoder, which spilling's partitioning needs."""
        xp = ctx.backend.xp
        arrays = []
        for col, enc in zip(keycols, g.encoders if encoders is None else encoders):
            if col.dtype.kind == "string" and local:
                parts = [col.data if col.dictionary is not None else
                         ctx.backend.factorize_strings(col.offsets, col.chars)[0]]
            elif col.dtype.kind == "string":
                parts = [enc.encode(col)]
            elif col.dtype.is_wide:  # HUGEINT / DECIMAL(38): past 64 bits as its high and low halves
                parts = wide_key_parts(xp, col.data)
            else:
                parts = [key_value(xp, col.data)]
            for data in parts:
                if data.dtype == bool:
                    data = data.astype(xp.int32)
                arrays.append(data if col.validity is None else
                              xp.where(col.validity, data, xp.zeros(1, dtype=data.dtype)))
            arrays.append(xp.ones(n, dtype=bool) if col.validity is None else col.validity)
        return arrays

    # ---- partial / merge ----------------------------------------------------------------------------------
    def _partial(self, ctx: ExecContext, g: _AggState, batch: Batch) -> Batch:
        ev = ctx.evaluator
        keycols = [ev.cast(ev.evaluate(e, batch), e.dtype) for _, e in self.keys]
        if self.raw_mode:
            cols = {_g(i): c for i, c in enumerate(keycols)}
            for j, (_, a) in enumerate(self.aggs):
                if a.arg is not None:
                    cols[_s(j, "raw")] = ev.cast(ev.evaluate(a.arg, batch), a.arg.dtype)
            return Batch(cols, batch.num_rows)
        if not keycols and all(a.op == "count_star" for _, a in self.aggs):
            # count(*) alone: the row count, without a group id per row (the batch may be a join's
            # row count with no column at all)
            cnt = Column(T.INT64, data=ctx.backend.xp.full(1, batch.num_rows, dtype=ctx.backend.xp.int64))
            return Batch({_s(j, "cnt"): cnt for j in range(len(self.aggs))}, 1)
        gid, ng, first = self._group(ctx, g, keycols, batch.num_rows)
        cols = {_g(i): take(ctx.backend, c, first) for i, c in enumerate(keycols)}
        for j, (_, a) in enumerate(self.aggs):
            arg = None if a.arg is None else ev.cast(ev.evaluate(a.arg, batch), a.arg.dtype)
            cols.update(self._agg_states(ctx, j, a, arg, gid, ng, merge=False))
        return Batch(cols, ng)

    def _merge(self, ctx: ExecContext, g: _AggState, state: Batch) -> Batch:
        keycols = [state.columns[_g(i)] for i in range(len(self.keys))]
        gid, ng, first = self._group(ctx, g, keycols, state.num_rows)
        cols = {_g(i): take(ctx.backend, c, first) for i, c in enumerate(keycols)}
        for j, (_, a) in enumerate(self.aggs):
            cols.update(self._merge_states(ctx, j, a, state, gid, ng))
        return Batch(cols, ng)

    def _agg_states(self, ctx: ExecContext, j: int, a: AggCall, arg: Column | None, gid, ng, merge: bool):
        be = ctx.backend
        out = {}
        if a.op in ("sum", "avg"):
            st = _sum_type(a.arg.dtype)
            data = arg.data if arg.dtype == st else convert(be.xp, arg.data, arg.dtype, st)
            out[_s(j, "sum")] = self._sum_column(ctx, st, data, gid, ng, arg.validity)
        if a.op in ("count", "avg"):
            res, _ = be.aggregate("count", arg.data if arg.data is not None else None, gid, ng, arg.validity)
            out[_s(j, "cnt")] = Column(T.INT64, data=res)
        if a.op == "count_star":
            res, _ = be.aggregate("count_star", None, gid, ng)
            out[_s(j, "cnt")] = Column(T.INT64, data=res)
        if a.op in ("min", "max", "any"):
            out[_s(j, "val")] = self._pick(ctx, a.op, arg, gid, ng)
        return out

    def _merge_states(self, ctx: ExecContext, j: int, a: AggCall, state: Batch, gid, ng):
        be = ctx.backend
        out = {}
        if a.op in ("sum", "avg"):
            s = state.columns[_s(j, "sum")]
            out[_s(j, "sum")] = self._sum_column(ctx, s.dtype, s.data, gid, ng, s.validity)
        if a.op in ("count", "count_star", "avg"):
            c = state.columns[_s(j, "cnt")]
            res, _ = be.aggregate("sum", c.data, gid, ng)
            out[_s(j, "cnt")] = Column(T.INT64, data=res.astype(be.xp.int64))
        if a.op in ("min", "max", "any"):
            out[_s(j, "val")] = self._pick(ctx, a.op, state.columns[_s(j, "val")], gid, ng)
        return out

    @staticmethod
    def _sum_column(ctx: ExecContext, st: T.DataType, data, gid, ng: int, validity) -> Column:
        be = ctx.backend
        if st.kind == "float64":
            res, has = be.aggregate("sum", data, gid, ng, validity)
            return Column(st, data=res.astype(st.numpy_dtype), validity=has)
        res, has = group_sum(be, data, gid, ng, validity)
        return Column(st, data=res, validity=has)

    def _pick(self, ctx: ExecContext, op: str, col: Column, gid, ng) -> Column:
        """min/max/any per group as a column of the argument's type (strings included)."""
        be, xp = ctx.backend, ctx.backend.xp
        n = len(col)
        if op == "any" or col.dtype.kind == "string" or col.dtype.kind == "bool" or is_object(col.data):
            if op == "any":
                order = xp.arange(n, dtype=xp.int64)
                pool = col
            else:
                # rank values (factorized strings order like the strings), pick the row with the best rank
                plain = to_plain(be, col) if col.dtype.kind == "string" else col
                if col.dtype.kind == "string":
                    codes, _, _ = be.factorize_strings(plain.offsets, plain.chars)
                    order = codes.astype(xp.int64)
                else:
                    order = sort_key(xp, col.data).astype(xp.int64)
                order = order * (n + 1) + xp.arange(n, dtype=xp.int64)  # ties -> first row
                pool = plain
            best, has = be.aggregate("max" if op == "max" else "min", order, gid, ng, col.validity)
            idx = best if op == "any" else best % (n + 1)
            idx = xp.where(has, idx, -1)
            return take(be, pool, idx.astype(xp.int64), missing=True)
        res, has = be.aggregate(op, col.data, gid, ng, col.validity)
        return Column(col.dtype, data=res.astype(col.dtype.numpy_dtype), validity=has)

    # ---- sink protocol --------------------------------------------------------------------------------------
    def sink(self, ctx: ExecContext, batch: Batch, g: _AggState, l: _AggLocal) -> None:  # noqa: E741
        with Timer(ctx, self.op_id):
            ctx.add(self.op_id, rows_in=batch.num_rows)
            self.add_partial(ctx, self._partial(ctx, g, batch), g, l)

    def add_partial(self, ctx: ExecContext, part: Batch, g: _AggState, l: _AggLocal,  # noqa: E741
                    key_range: tuple[int, int] | None = None) -> None:
        """Take a batch of partial states (a compiled GPU pipeline's groups, or ``_partial``'s).
        ``key_range``: the batch's one group key is strictly increasing from the first to the last
        of these values (kept apart unmerged: finalize merges only when ranges overlap)."""
        if key_range is not None and g.parts is None:
            size = batch_nbytes(part)
            if g.reservation.try_grow(size):
                with g.lock:
                    if g.parts is None:
                        g.runs.append((key_range, part))
                        return
                g.reservation.shrink(size)
        if g.parts is not None:
            self._spill(ctx, g, [part])
            return
        size = batch_nbytes(part)
        if not g.reservation.try_grow(size):
            self._start_spilling(ctx, g, l)
            self._spill(ctx, g, [part])
            return
        l.batches.append(part)
        l.rows += part.num_rows
        l.nbytes += size
        if not self.raw_mode and l.rows >= l.merge_at and len(l.batches) > 1:
            before = l.rows
            # the merge's concatenated states and hash table: reserved first, else spill instead
            work = l.nbytes + self.merge_bytes(l.rows)
            if not g.reservation.try_grow(work):
                self._start_spilling(ctx, g, l)
                return
            try:
                merged = self._merge(ctx, g, concat_batches(ctx.backend, l.batches))
            finally:
                g.reservation.shrink(work)
            new = batch_nbytes(merged)
            g.reservation.shrink(l.nbytes)
            l.batches, l.rows, l.nbytes = [merged], merged.num_rows, 0
            if not g.reservation.try_grow(new):
                self._start_spilling(ctx, g, l)
                return
            l.nbytes = new
            l.merge_at = max(MERGE_ROWS, 2 * merged.num_rows)
            if merged.num_rows > MERGE_KEEP * before:
                # Batches share few groups (q18: l_orderkey over lineitem in key order): local
                # merges would re-hash every group again at each doubling for no reduction;
                # leave them all to the one final merge, which runs on every kernel thread.
                l.merge_at = float("inf")

    def _start_spilling(self, ctx: ExecContext, g: _AggState, local: _AggLocal) -> None:
        combined: list[Batch] = []
        with g.lock:
            if g.parts is None:
                g.parts = [ctx.spill_file(self._state_dtypes()) for _ in range(NUM_PARTITIONS)]
                for f in g.parts:
                    ctx.cleanup.append(f.remove)
                ctx.add(self.op_id, spilled_partitions=NUM_PARTITIONS)
                # workers that finished before spilling began left their states here: finalize
                # reads only the partitions from now on
                combined, g.batches = g.batches + [b for _, b in g.runs], []
                g.runs = []
        self._spill(ctx, g, combined + local.batches)
        g.reservation.shrink(local.nbytes + sum(batch_nbytes(b) for b in combined))
        local.batches, local.rows, local.nbytes = [], 0, 0
        combined = []
        release_free_heap()

    def _spill(self, ctx: ExecContext, g: _AggState, batches: list[Batch]) -> None:
        # in slices: the key arrays, hashes and partition copies of a slice at a time
        slices = (slice_batch(ctx.backend, b, lo, lo + SPILL_SLICE_ROWS)
                  for b in batches for lo in range(0, b.num_rows, SPILL_SLICE_ROWS))
        for b in slices:
            if b.num_rows == 0:
                continue
            keycols = [b.columns[_g(i)] for i in range(len(self.keys))]
            if keycols:
                part = partition_ids(ctx, self._key_arrays(ctx, g, keycols, b.num_rows), None)
            else:
                part = ctx.backend.xp.zeros(b.num_rows, dtype=ctx.backend.xp.int64)
            with g.lock:
                spill_partitioned(ctx, b, part, g.parts)

    def held_rows(self, g: _AggState) -> int | None:
        """Partial-state (or raw) rows the finalize merges; None when spilled (partitions on disk)."""
        if g.parts is not None:
            return None
        return sum(b.num_rows for b in g.batches) + sum(b.num_rows for _, b in g.runs)

    def combine(self, ctx: ExecContext, g: _AggState, l: _AggLocal) -> None:  # noqa: E741
        with g.lock:  # decided under the lock: spilling may begin in another worker meanwhile
            if g.parts is None:
                g.batches.extend(l.batches)
                return
        self._spill(ctx, g, l.batches)
        g.reservation.shrink(l.nbytes)

    def finalize(self, ctx: ExecContext, g: _AggState) -> list[Batch]:
        with Timer(ctx, self.op_id):
            work = 0
            pieces = None
            if g.runs:
                runs, g.runs = sorted(g.runs, key=lambda r: r[0]), []
                if not g.batches and g.parts is None and all(
                        a[0][1] <= b[0][0] for a, b in zip(runs, runs[1:])):
                    pieces = self._run_pieces(ctx, g, runs)
                    if self.raw_mode or not RUN_PIECES:
                        g.batches = [concat_batches(ctx.backend, pieces, list(self._state_dtypes()))]
                        pieces = None
                    g.groups_unique = True
                else:
                    g.batches.extend(b for _, b in runs)
            if pieces is not None:
                # each group once, in key order over the pieces: their final values piece by piece,
                # with no copy of the states into one batch (TPC-H q18's 15M orders at SF 10: ~300 ms
                # of one thread) and a batch per piece for the next pipeline's morsels
                out = [self._outputs(ctx, b) for b in pieces if b.num_rows] or [self._empty_result(ctx)]
                # small pieces (and the one-group carries between them) together: TPC-H q11's 304k
                # groups at SF 10 came as 16 pieces of 20k and 16 of one row, 32 morsels that the next
                # pipeline's 16 workers took in turns at the GIL (550 ms of worker time on the H100)
                out = coalesce_batches(ctx.backend, out, tuning.get("result_morsel_rows"))
            elif g.parts is None and self.keys and len(g.batches) > 1:
                # the final merge concatenates the states and hashes them: reserve that first, and
                # finish partition by partition when it does not fit
                rows = sum(b.num_rows for b in g.batches)
                work = g.reservation.nbytes + self.merge_bytes(rows)
                if not g.reservation.try_grow(work):
                    work = 0
                    if rows > MIN_FINAL_ROWS:
                        local = _AggLocal()
                        local.batches, local.nbytes = g.batches, g.reservation.nbytes
                        g.batches = []
                        self._start_spilling(ctx, g, local)
            if pieces is None and g.parts is None:
                out = parallel_final(self, ctx, g, g.batches) or [self._final(ctx, g, g.batches)]
                g.reservation.shrink(work)
            elif pieces is None:
                from hetdb.exec.operators.aggregate_spill import finish_partitions

                # each partition's groups are held (or spilled) as they are made: the whole
                # result is never in memory unaccounted
                g.batches = []
                g.reservation.close()
                held, rows = finish_partitions(self, ctx, g)
                ctx.add(self.op_id, rows_out=rows)
                return held
            out = [b for b in out if b.num_rows] or out[:1]
            ctx.add(self.op_id, rows_out=sum(b.num_rows for b in out))
            # the partial states are done with: the result takes their place in the reservation
            g.batches = []
            g.reservation.close()
            return [item for b in out for item in hold(ctx, g.reservation, b)]

    def _run_pieces(self, ctx: ExecContext, g: _AggState, runs: list[tuple[tuple[int, int], Batch]]) -> list[Batch]:
        """Partial states of increasing keys whose ranges at most touch (one morsel's last key the
        next one's first: a group cut by a morsel boundary) as batches holding each group once."""
        be, names = ctx.backend, list(self._state_dtypes())
        pieces: list[Batch] = []
        carry: Batch | None = None  # the last group so far, which the next run may go on with
        last = 0
        for (lo, hi), b in runs:
            if carry is not None and lo == last:
                carry = self._merge(ctx, g, concat_batches(be, [carry, slice_batch(be, b, 0, 1)], names))
                b = slice_batch(be, b, 1, b.num_rows)
                if not b.num_rows:
                    continue
            if carry is not None:
                pieces.append(carry)
            pieces.append(slice_batch(be, b, 0, b.num_rows - 1))
            carry, last = slice_batch(be, b, b.num_rows - 1, b.num_rows), hi
        if carry is not None:
            pieces.append(carry)
        return pieces

    # ---- final values ----------------------------------------------------------------------------------------
    def merge_bytes(self, rows: int) -> int:
        """Working memory of merging ``rows`` partial states: key columns with their validity as a
        key matrix, hashes, the hash table's slots and ids, the group ids."""
        return rows * (GROUP_BYTES_PER_ROW + 16 * len(self.keys))

    def _final(self, ctx: ExecContext, g: _AggState, batches: list[Batch]) -> Batch:
        be = ctx.backend
        batches = [b for b in batches if b.num_rows]
        if not batches:
            return self._empty_result(ctx)
        if len(batches) == 1 and g.groups_unique and not self.raw_mode:
            return self._outputs(ctx, batches[0])  # nothing to merge
        state = concat_batches(be, batches, list(self._state_dtypes()))
        if self.raw_mode:
            return self._final_raw(ctx, g, state)
        return self._outputs(ctx, self._merge(ctx, g, state))

    def _outputs(self, ctx: ExecContext, merged: Batch) -> Batch:
        xp = ctx.backend.xp
        cols = {f.cid: ctx.evaluator.cast(merged.columns[_g(i)], f.dtype) for i, (f, _) in enumerate(self.keys)}
        for j, (f, a) in enumerate(self.aggs):
            if a.op == "sum":
                s = merged.columns[_s(j, "sum")]
                cols[f.cid] = Column(f.dtype, data=convert(xp, s.data, s.dtype, f.dtype), validity=s.validity)
            elif a.op in ("count", "count_star"):
                c = merged.columns[_s(j, "cnt")]
                cols[f.cid] = Column(f.dtype, data=c.data.astype(f.dtype.numpy_dtype))
            elif a.op == "avg":
                s, c = merged.columns[_s(j, "sum")], merged.columns[_s(j, "cnt")]
                total = convert(xp, s.data, s.dtype, T.FLOAT64)
                cnt = c.data
                data = total / xp.where(cnt == 0, 1, cnt)
                cols[f.cid] = Column(f.dtype, data=convert(xp, data, T.FLOAT64, f.dtype), validity=cnt > 0)
            else:
                cols[f.cid] = ctx.evaluator.cast(merged.columns[_s(j, "val")], f.dtype)
        return Batch(cols, merged.num_rows)

    def _final_raw(self, ctx: ExecContext, g: _AggState, raw: Batch) -> Batch:
        """Aggregates over the raw rows; DISTINCT ones first reduce to distinct (group, value) rows."""
        be, xp = ctx.backend, ctx.backend.xp
        keycols = [raw.columns[_g(i)] for i in range(len(self.keys))]
        gid, ng, first = self._group(ctx, g, keycols, raw.num_rows)
        merged = {_g(i): take(be, c, first) for i, c in enumerate(keycols)}
        for j, (_, a) in enumerate(self.aggs):
            arg = raw.columns.get(_s(j, "raw"))
            sub_gid = gid
            if a.distinct and arg is not None:
                enc = g.value_encoders.setdefault(j, encoders_for(be, [arg.dtype])[0])
                vals = enc.encode(arg) if arg.dtype.kind == "string" else sort_key(xp, arg.data)
                if vals.dtype == bool:
                    vals = vals.astype(xp.int32)
                valid = arg.validity if arg.validity is not None else xp.ones(len(arg), dtype=bool)
                vals = xp.where(valid, vals, xp.zeros(1, dtype=vals.dtype))
                _, _, pair_first = be.group_ids([gid, vals, valid])
                arg = take(be, arg, pair_first)
                sub_gid = be.gather(gid, pair_first)
            merged.update(self._agg_states(ctx, j, a, arg, sub_gid, ng, merge=False))
        return self._outputs(ctx, Batch(merged, ng))

    def _empty_result(self, ctx: ExecContext) -> Batch:
        """No input rows: no groups, except the one row of an aggregate without GROUP BY."""
        be = ctx.backend
        n = 0 if self.keys else 1
        cols = {f.cid: full_column(be, None, f.dtype, n) for f, _ in self.keys}
        for f, a in self.aggs:
            zero = 0 if a.op in ("count", "count_star") else None
            cols[f.cid] = full_column(be, zero if n else None, f.dtype, n)
        return Batch(cols, n)
