"""Hash join probe: the operator that streams a join's probe (left) input against a finished build
side (``join_build``).

Kinds: inner, left, right, full, semi, anti, mark, single, cross, and right_semi / right_anti (a
semi/anti join hashed on its left input: the probe marks build rows, ``finalize`` emits the build
rows with / without a match); several keys; a residual predicate
over both sides; NULL keys never match; mark is three-valued like SQL IN. When the build side was
spilled in partitions, the probe side is partitioned the same way, and the pairs of partitions are
joined one after the other when the probe input is exhausted (``join_spill``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError
from hetdb.exec.columns import full_column, slice_batch, take, take_batch
from hetdb.exec.hostutil import SpillFile
from hetdb.exec.keys import key_arrays
from hetdb.exec.operators.base import ExecContext, Operator, Timer
from hetdb.exec.operators.join_build import BuildSide, HashBuild
from hetdb.exec.operators.spill_partition import partition_ids, spill_partitioned
from hetdb.plan.expr import Expr, Field

# Rows per output batch of a probe (fewer under a small memory limit): a many-to-many or cross join
# streams batches of this size into the rest of its pipeline instead of making its output at once.
OUTPUT_ROWS = 1 << 20
MIN_OUTPUT_ROWS = 1 << 12


def output_rows(ctx: ExecContext) -> int:
    return max(MIN_OUTPUT_ROWS, min(OUTPUT_ROWS, ctx.memory.limit // 64))


def rows_only(total: int, cap: int) -> Iterator[Batch]:
    """``total`` rows without columns (a join whose output only counts), ``cap`` rows a batch."""
    for lo in range(0, total, cap):
        yield Batch({}, min(cap, total - lo))


def bounded_ranges(cumulative: Any, cap: int) -> Iterator[tuple[int, int]]:
    """Row ranges [lo, hi) whose counts (``cumulative``: their running sum) add up to at most
    ``cap``, or one row where a single row has more."""
    n = int(cumulative.shape[0])
    lo, done = 0, 0
    while lo < n:
        hi = int(cumulative.searchsorted(done + cap, side="right"))
        hi = min(n, max(hi, lo + 1))
        yield lo, hi
        done = int(cumulative[hi - 1])
        lo = hi


def check_single(counts: Any) -> None:
    if bool((counts > 1).any()):
        raise HetdbError("a scalar subquery returned more than one row for one outer row "
                         "(DuckDB reports: More than one row returned by a subquery used as an "
                         "expression); add LIMIT 1 or an aggregate")


def _counts(be: Any, table: Any, arrays: list[Any]) -> Any:
    """Build rows matching each probe row: sized without pairs where the backend can (CPU), else
    counted from the pairs (the GPU's probe makes them on the device)."""
    n = int(arrays[0].shape[0])
    if not n:
        return be.xp.zeros(0, dtype=be.xp.int64)
    if hasattr(be, "join_match_counts"):
        return be.join_match_counts(table, arrays)
    pi, _ = be.join_probe(table, arrays, "inner")
    return be.xp.bincount(pi, minlength=n).astype(be.xp.int64)


@dataclass
class Matches:
    """Probe rows ``pi`` matched build rows ``bi`` (pairs after the residual), or for semi/anti/mark
    probes without a residual only ``hit`` per probe row; ``pvalid``: probe keys without a NULL;
    ``res_null``: probe rows whose residual was NULL for some pair (mark)."""

    pi: Any
    bi: Any
    pvalid: Any
    res_null: Any
    hit: Any


class _ProbeState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.matched: dict[int, Any] = {}   # id(BuildSide) -> bool per build row (right/full joins)
        self.parts: list[SpillFile] | None = None


@dataclass(frozen=True)
class HashProbe(Operator):
    kind: str = "inner"
    left_fields: tuple[Field, ...] = ()
    right_fields: tuple[Field, ...] = ()
    left_keys: tuple[Expr, ...] = ()
    residual: Expr | None = None
    mark: Field | None = None
    mark_by_residual: bool = False   # see plan.logical.Join
    build: HashBuild = None
    build_pipeline: int = 0
    # columns the output keeps (None: every input and build column); the rest are never gathered
    emit: frozenset[str] | None = None

    def _out(self, fields: tuple[Field, ...]) -> list[Field]:
        return list(fields) if self.emit is None else [f for f in fields if f.cid in self.emit]

    def describe(self) -> str:
        keys = ", ".join(f"{a} = {b}" for a, b in zip(self.left_keys, self.build.keys))
        res = f" residual={self.residual}" if self.residual is not None else ""
        mark = f" mark={self.mark.cid}" if self.mark is not None else ""
        mark += " by residual" if self.mark_by_residual else ""
        return f"HashProbe {self.kind} [{keys}]{res}{mark} (build: pipeline {self.build_pipeline})"

    def init_global(self, ctx: ExecContext) -> Any:
        return _ProbeState()

    def _side(self, ctx: ExecContext) -> BuildSide:
        return ctx.results[self.build_pipeline]

    def execute(self, ctx: ExecContext, batch: Batch, g: _ProbeState, l: Any) -> Iterator[Batch]:  # noqa: E741
        side = self._side(ctx)
        ctx.add(self.op_id, rows_in=batch.num_rows)
        if side.partitions is not None:
            with Timer(ctx, self.op_id):
                self._spill_probe(ctx, side, batch, g)
            return iter(())
        return self.timed(ctx, self._join(ctx, side, batch, g))

    def timed(self, ctx: ExecContext, batches: Iterator[Batch]) -> Iterator[Batch]:
        """``batches`` one at a time (the consumer takes each before the next is made), the time
        spent making them charged to this operator."""
        while True:
            with Timer(ctx, self.op_id):
                b = next(batches, None)
            if b is None:
                return
            ctx.add(self.op_id, rows_out=b.num_rows)
            yield b

    def _spill_probe(self, ctx: ExecContext, side: BuildSide, batch: Batch, g: _ProbeState) -> None:
        keycols = [ctx.evaluator.cast(ctx.evaluator.evaluate(k, batch), k.dtype) for k in self.left_keys]
        arrays, valid = key_arrays(ctx.backend, keycols, side.encoders)
        part = partition_ids(ctx, arrays, valid) if self.left_keys else \
            ctx.backend.xp.zeros(batch.num_rows, dtype=ctx.backend.xp.int64)
        with g.lock:
            if g.parts is None:
                g.parts = [ctx.spill_file({f.cid: f.dtype for f in self.left_fields})
                           for _ in range(len(side.partitions))]
                for f in g.parts:
                    ctx.cleanup.append(f.remove)
            spill_partitioned(ctx, Batch({f.cid: batch.columns[f.cid] for f in self.left_fields},
                                         batch.num_rows), part, g.parts)

    def finalize(self, ctx: ExecContext, g: _ProbeState) -> Iterator[Batch]:
        side = self._side(ctx)
        if side.partitions is None:
            if self.kind in ("right", "full"):
                return self.timed(ctx, iter(self._unmatched_build(ctx, side, g)))
            if self.kind in ("right_semi", "right_anti"):
                return self.timed(ctx, iter(self._marked_build(ctx, side, g)))
            return iter(())
        from hetdb.exec.operators.join_spill import join_partitions

        return self.timed(ctx, join_partitions(self, ctx, side, g))

    # ---- the join of one probe batch with one build side ------------------------------------------
    def emits_nothing(self) -> bool:
        """The output keeps no column (count(*) over a join): only its row count matters."""
        return not self._out(self.left_fields) and not self._out(self.right_fields)

    def _join(self, ctx: ExecContext, side: BuildSide, batch: Batch, g: _ProbeState) -> Iterator[Batch]:
        """The output of probing ``batch``, in batches of at most ``output_rows`` rows where the
        backend can size a probe before making its pairs (one probe row with more matches than that
        is one batch): a many-to-many join streams instead of materialising its output."""
        be = ctx.backend
        n, m = batch.num_rows, side.num_rows
        cap = output_rows(ctx)
        kind = self.kind
        if kind in ("inner", "cross") and self.residual is None and self.emits_nothing():
            total = n * m if not self.left_keys else int(self.probe_counts(ctx, side, batch).sum())
            yield from rows_only(total, cap)
            return
        if not self.left_keys:
            step = max(1, cap // max(m, 1))
            for s in range(0, n, step):
                part = batch if step >= n else slice_batch(be, batch, s, s + step)
                yield from self.emit_rows(ctx, side, part, self.match(ctx, side, part), g)
            return
        pairs_made = kind not in ("semi", "anti", "mark") or self.residual is not None
        sized = getattr(be, "join_max_matches", None)
        if not pairs_made or side.table is None or sized is None or n * sized(side.table) <= cap:
            yield from self.emit_rows(ctx, side, batch, self.match(ctx, side, batch), g)
            return
        counts = self.probe_counts(ctx, side, batch)
        if kind in ("left", "full", "single"):
            counts = be.xp.maximum(counts, 1)
        for lo, hi in bounded_ranges(be.xp.cumsum(counts), cap):
            part = batch if hi - lo == n else slice_batch(be, batch, lo, hi)
            yield from self.emit_rows(ctx, side, part, self.match(ctx, side, part), g)

    def probe_counts(self, ctx: ExecContext, side: BuildSide, batch: Batch) -> Any:
        """Build rows each probe row matches on its keys (0 for a NULL key)."""
        be, xp = ctx.backend, ctx.backend.xp
        n = batch.num_rows
        if side.table is None:
            return xp.zeros(n, dtype=xp.int64)
        keycols = [ctx.evaluator.cast(ctx.evaluator.evaluate(k, batch), k.dtype) for k in self.left_keys]
        arrays, pvalid = key_arrays(be, keycols, side.encoders, add=False)
        if pvalid is None:
            return _counts(be, side.table, arrays)
        pidx = be.nonzero(pvalid)
        counts = xp.zeros(n, dtype=xp.int64)
        if int(pidx.shape[0]):
            counts[pidx] = _counts(be, side.table, [be.gather(a, pidx) for a in arrays])
        return counts

    def match(self, ctx: ExecContext, side: BuildSide, batch: Batch) -> Matches:
        """Which probe rows of ``batch`` match which build rows (after the residual)."""
        be, xp = ctx.backend, ctx.backend.xp
        n, m = batch.num_rows, side.num_rows
        kind = self.kind
        pvalid = None
        if self.left_keys:
            keycols = [ctx.evaluator.cast(ctx.evaluator.evaluate(k, batch), k.dtype) for k in self.left_keys]
            if m == 0:
                # an empty build side matches nothing: the keys' values are not needed (a value no
                # kernel can hold as a key, such as a DECIMAL(38) past 64 bits, must not refuse it)
                for col in keycols:
                    if col.validity is not None:
                        pvalid = col.validity if pvalid is None else xp.logical_and(pvalid, col.validity)
                if self.residual is None and kind in ("semi", "anti", "mark"):
                    return Matches(None, None, pvalid, None, xp.zeros(n, dtype=bool))
                none = xp.zeros(0, dtype=xp.int64)
                return Matches(none, none, pvalid, None, None)
            arrays, pvalid = key_arrays(be, keycols, side.encoders, add=False)
            pidx = None
            if pvalid is not None:
                pidx = be.nonzero(pvalid)
                arrays = [be.gather(a, pidx) for a in arrays]
            if self.residual is None and kind in ("semi", "anti", "mark"):
                hit = xp.zeros(n, dtype=bool)
                if side.table is not None and int(arrays[0].shape[0]):
                    found = be.join_probe(side.table, arrays, "mark")
                    if pidx is None:
                        hit = found
                    else:
                        hit[pidx] = found
                return Matches(None, None, pvalid, None, hit)
            if side.table is None or int(arrays[0].shape[0]) == 0:
                pi = xp.zeros(0, dtype=xp.int64)
                bi = xp.zeros(0, dtype=xp.int64)
            else:
                pi, bi = be.join_probe(side.table, arrays, "inner")
                if pidx is not None:
                    pi = be.gather(pidx, pi)
                if side.valid_idx is not None:
                    bi = be.gather(side.valid_idx, bi)
        else:
            pi = xp.repeat(xp.arange(n, dtype=xp.int64), m)
            bi = xp.tile(xp.arange(m, dtype=xp.int64), n)
        res_null = None
        if self.residual is not None and int(pi.shape[0]):
            pairs = self._pairs(ctx, batch, side, pi, bi, only=self.residual.columns())
            col = ctx.evaluator.evaluate(self.residual, pairs)
            keep = col.data if col.validity is None else xp.logical_and(col.data, col.validity)
            if kind == "mark" and col.validity is not None:
                bad = be.nonzero(xp.logical_not(col.validity))
                res_null = xp.zeros(n, dtype=bool)
                res_null[be.gather(pi, bad)] = True
            sel = be.nonzero(keep)
            pi, bi = be.gather(pi, sel), be.gather(bi, sel)
        return Matches(pi, bi, pvalid, res_null, None)

    def emit_rows(self, ctx: ExecContext, side: BuildSide, batch: Batch, mt: Matches, g: _ProbeState) -> list[Batch]:
        """The output rows of ``batch`` given its matches against the whole build side ``side``."""
        xp = ctx.backend.xp
        n = batch.num_rows
        kind = self.kind
        pi, bi = mt.pi, mt.bi
        if kind in ("inner", "cross"):
            return [self._pairs(ctx, batch, side, pi, bi)] if int(pi.shape[0]) else []
        if kind in ("right_semi", "right_anti"):
            if int(bi.shape[0]):
                matched = self._matched(ctx, side, g)
                with g.lock:
                    matched[bi] = True
            return []
        hit = mt.hit
        if hit is None:
            hit = xp.zeros(n, dtype=bool)
            hit[pi] = True
        if kind in ("semi", "anti", "mark"):
            return [self._finish_filtering(ctx, side, batch, hit, mt.pvalid, mt.res_null)]
        if kind in ("right", "full"):
            matched = self._matched(ctx, side, g)
            with g.lock:
                matched[bi] = True
        if kind == "single" and int(pi.shape[0]) > 1:
            check_single(xp.bincount(pi, minlength=n))
        out = [self._pairs(ctx, batch, side, pi, bi)] if int(pi.shape[0]) else []
        if kind in ("left", "full", "single"):
            out.extend(self.unmatched_probe(ctx, side, batch, hit))
        return out

    def unmatched_probe(self, ctx: ExecContext, side: BuildSide, batch: Batch, hit: Any) -> list[Batch]:
        """Probe rows without a match, build columns NULL (left, full, single joins)."""
        be, xp = ctx.backend, ctx.backend.xp
        miss = be.nonzero(xp.logical_not(hit))
        if not int(miss.shape[0]):
            return []
        none = xp.full(int(miss.shape[0]), -1, dtype=xp.int64)
        return [self._pairs(ctx, batch, side, miss, none, right_missing=True)]

    def _matched(self, ctx: ExecContext, side: BuildSide, g: _ProbeState) -> Any:
        """The bool array of build rows matched so far (shared by every worker)."""
        with g.lock:
            m = g.matched.get(id(side))
            if m is None or m[0] is not side:
                m = g.matched[id(side)] = (side, ctx.backend.xp.zeros(side.num_rows, dtype=bool))
            return m[1]

    def forget(self, side: BuildSide, g: _ProbeState) -> None:
        """Drop the matched flags of a build side that is done (a spilled partition's chunk)."""
        with g.lock:
            g.matched.pop(id(side), None)

    def _pairs(self, ctx: ExecContext, batch: Batch, side: BuildSide, pi: Any, bi: Any,
               left_missing: bool = False, right_missing: bool = False,
               only: frozenset[str] | None = None) -> Batch:
        """The joined rows (probe row pi[i], build row bi[i]): the output columns, or ``only``."""
        be = ctx.backend
        n = int(pi.shape[0])
        if only is None:
            left, right = self._out(self.left_fields), self._out(self.right_fields)
        else:
            left = [f for f in self.left_fields if f.cid in only]
            right = [f for f in self.right_fields if f.cid in only]
        # a unique-key probe where every row matched once pairs row i with row i: no gather
        same = not left_missing and n == batch.num_rows and n > 0 and getattr(side.table, "unique", False) \
            and int(pi[0]) == 0 and int(pi[n - 1]) == n - 1
        cols = {}
        for f in left:
            c = batch.columns[f.cid]
            cols[f.cid] = c if same else take(be, c, pi, missing=left_missing)
        for f in right:
            cols[f.cid] = take(be, side.batch.columns[f.cid], bi, missing=right_missing)
        return Batch(cols, n)

    def _finish_filtering(self, ctx: ExecContext, side: BuildSide, batch: Batch, hit: Any, pvalid: Any,
                          res_null: Any) -> Batch:
        be, xp = ctx.backend, ctx.backend.xp
        if self.kind in ("semi", "anti"):
            keep = be.nonzero(hit if self.kind == "semi" else xp.logical_not(hit))
            out = Batch({f.cid: batch.columns[f.cid] for f in self._out(self.left_fields)}, batch.num_rows)
            return out if int(keep.shape[0]) == batch.num_rows else take_batch(be, out, keep)
        # mark: TRUE on a match; else NULL when a NULL took part (and the build side is not empty)
        validity = None
        if self.mark_by_residual:
            if res_null is not None:
                validity = xp.logical_or(hit, xp.logical_not(res_null))
        elif side.nonempty:
            unknown = None
            if side.has_null_key:
                unknown = xp.ones(batch.num_rows, dtype=bool)
            elif pvalid is not None:
                unknown = xp.logical_not(pvalid)
            if res_null is not None:
                unknown = res_null if unknown is None else xp.logical_or(unknown, res_null)
            if unknown is not None:
                validity = xp.logical_or(hit, xp.logical_not(unknown))
        cols = {f.cid: batch.columns[f.cid] for f in self._out(self.left_fields)}
        cols[self.mark.cid] = Column(T.BOOL, data=hit, validity=validity)
        return Batch(cols, batch.num_rows)

    def _marked_build(self, ctx: ExecContext, side: BuildSide, g: _ProbeState) -> list[Batch]:
        """right_semi: the build rows some probe row matched; right_anti: the others."""
        be, xp = ctx.backend, ctx.backend.xp
        if side.num_rows == 0:
            return []
        matched = self._matched(ctx, side, g)
        idx = be.nonzero(matched if self.kind == "right_semi" else xp.logical_not(matched))
        k = int(idx.shape[0])
        if k == 0:
            return []
        fields = self._out(self.right_fields)
        if k == side.num_rows:
            return [Batch({f.cid: side.batch.columns[f.cid] for f in fields}, k)]
        return [Batch({f.cid: take(be, side.batch.columns[f.cid], idx) for f in fields}, k)]

    def _unmatched_build(self, ctx: ExecContext, side: BuildSide, g: _ProbeState) -> list[Batch]:
        be, xp = ctx.backend, ctx.backend.xp
        if side.num_rows == 0:
            return []
        matched = self._matched(ctx, side, g)
        idx = be.nonzero(xp.logical_not(matched))
        k = int(idx.shape[0])
        if k == 0:
            return []
        cols = {f.cid: full_column(be, None, f.dtype, k) for f in self._out(self.left_fields)}
        for f in self._out(self.right_fields):
            cols[f.cid] = take(be, side.batch.columns[f.cid], idx)
        return [Batch(cols, k)]
