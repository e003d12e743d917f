"""The pipeline driver: workers pull morsels from the source, push batches through the operators
into the sink; operators' ``finalize`` batches are pushed after the workers are done; the sink's
result is stored for the pipelines that depend on it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hetdb.backend.cpu import tuning
from hetdb.column import Batch
from hetdb.exec.kept_builds import keep_build
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import ResultSource
from hetdb.exec.operators.join_build import BuildSide
from hetdb.exec.operators.scan import TableScan
from hetdb.exec.physical import Pipeline

# a sink that holds fewer rows finishes with single-threaded kernels (see _Run.flush): a parallel kernel
# wakes the connection's sleeping kernel threads, ~0.7 ms each time with 16 of them on the H100 (measured
# on its sorts), about what one thread takes to hash-build 10-20k rows; a build or merge makes ~10 calls
# (backend/cpu/tuning.py: small_sink_rows, small_source_rows)


# id(morsel list) -> (that list, its (index, morsel) pairs): a hot scan's morsels are one list object
# (operators/scan_device.plan_device_scan), whose pairs every run would otherwise make again
_ENUMERATED: dict[int, tuple[list, list]] = {}


def enumerated(morsels: list) -> list:
    """``list(enumerate(morsels))``, the same list object for the same (unchanged) morsel list; the
    callers read it only."""
    hit = _ENUMERATED.get(id(morsels))
    if hit is not None and hit[0] is morsels and len(hit[1]) == len(morsels):
        return hit[1]
    pairs = list(enumerate(morsels))
    if isinstance(morsels, list) and len(morsels) >= 16:  # (small lists: as cheap to make again)
        if len(_ENUMERATED) >= 256:
            _ENUMERATED.clear()
        _ENUMERATED[id(morsels)] = (morsels, pairs)
    return pairs


class _Run:
    def __init__(self, ctx: ExecContext, pipe: Pipeline):
        self.ctx, self.pipe = ctx, pipe
        self.gsrc = pipe.source.init_global(ctx)
        self.gops = [op.init_global(ctx) for op in pipe.ops]
        self.gsink = pipe.sink.init_global(ctx)
        self.morsels = enumerated(pipe.source.morsels(ctx, self.gsrc))
        self._next = 0
        self._lock = threading.Lock()
        self.stop = False
        self.parallel = False  # several workers: each runs its kernels single-threaded
        self._small: bool | None = None

    def _small_source(self) -> bool:
        """The source holds fewer than ``small_source_rows`` rows (a lone worker's kernels then run on
        one thread: see ``small_sink_rows``); False when that is not known cheaply."""
        if self._small is None:
            src, rows = self.pipe.source, None
            if isinstance(src, TableScan) and self.ctx.device is None:
                rows = sum(self.gsrc.row_group_rows(m) if isinstance(m, int) else m[2] - m[1]
                           for _, m in self.morsels)
            elif isinstance(src, ResultSource):
                rows = sum(m[2] - m[1] for _, m in self.morsels)
            self._small = rows is not None and rows < tuning.get("small_source_rows")
        return self._small

    def kernel_threads(self) -> None:
        """Threads the calling thread's kernels may use: one in a worker among several (morsels are
        the one level of parallelism: a parallel kernel inside each worker oversubscribes the cores)
        and for a small source, else the connection's ``threads`` (a lone worker over many rows, and
        what operators do at the end)."""
        set_threads = getattr(self.ctx.backend, "set_kernel_threads", None)
        if set_threads is not None:
            one = self.parallel or (self.ctx.device is None and self._small_source())
            set_threads(1 if one else int(getattr(self.ctx.options, "threads", 0) or 0) or None)

    def next_morsel(self) -> tuple[int, Any] | None:
        with self._lock:
            if self.stop or self._next >= len(self.morsels):
                return None
            m = self.morsels[self._next]
            self._next += 1
            return m

    def push(self, batch: Batch, k: int, lops: list, lsink: Any) -> None:
        pipe = self.pipe
        if k == len(pipe.ops):
            pipe.sink.sink(self.ctx, batch, self.gsink, lsink)
            return
        for out in pipe.ops[k].execute(self.ctx, batch, self.gops[k], lops[k]):
            if out.num_rows:
                self.push(out, k + 1, lops, lsink)

    def _limit_reached(self) -> bool:
        return any(getattr(g, "done", False) for g in self.gops)

    def work(self) -> None:
        ctx, pipe = self.ctx, self.pipe
        self.kernel_threads()
        lops = [op.init_local(ctx, g) for op, g in zip(pipe.ops, self.gops)]
        lsink = pipe.sink.init_local(ctx, self.gsink)
        try:
            while True:
                item = self.next_morsel()
                if item is None:
                    break
                index, morsel = item
                ctx.set_morsel(index)
                for batch in pipe.source.read(ctx, morsel, self.gsrc):
                    if batch.num_rows:
                        self.push(batch, 0, lops, lsink)
                if self._limit_reached():
                    self.stop = True
        except BaseException:
            self.stop = True
            raise
        pipe.sink.combine(ctx, self.gsink, lsink)

    def _sink_rows(self) -> int:
        """Rows the sink's finalize works on: an aggregation's partial states (its input rows
        were reduced by the workers already: TPC-H q02's 8M partsupp rows to 16 x ~4.7k groups),
        else the rows it took."""
        held = getattr(self.pipe.sink, "held_rows", None)
        rows = held(self.gsink) if held is not None else None
        return rows if rows is not None else self.ctx.stat(self.pipe.sink.op_id).rows_in

    def flush(self) -> None:
        """Push what operators emit at the end (unmatched build rows, spilled partitions). The
        kernels from here on (these and the sink's finalize: a hash table's build, an aggregation's
        merge) run on the connection's threads, or on one when the sink took few rows: waking the
        kernel threads for each of a small build's parallel loops cost more than its work (TPC-H
        q02's nation, region and supplier builds: 0.4 ms each after their workers with 16 threads,
        0.1 ms with one, on 2 cores)."""
        ctx, pipe = self.ctx, self.pipe
        self.parallel = False
        self.kernel_threads()
        set_threads = getattr(ctx.backend, "set_kernel_threads", None)
        few = tuning.get("small_sink_rows")
        small = set_threads is not None and ctx.device is None and self._sink_rows() < few \
            and self._build_rows_at_end() < few
        if small:
            set_threads(1)
        lops = [op.init_local(ctx, g) for op, g in zip(pipe.ops, self.gops)]
        lsink = pipe.sink.init_local(ctx, self.gsink)
        ctx.set_morsel(len(self.morsels))
        for k, op in enumerate(pipe.ops):
            for batch in op.finalize(ctx, self.gops[k]):
                if batch.num_rows:
                    self.push(batch, k + 1, lops, lsink)
        pipe.sink.combine(ctx, self.gsink, lsink)
        if small and self._sink_rows() >= few:
            self.kernel_threads()  # (what the operators emitted made the sink's rows many after all)

    def _build_rows_at_end(self) -> int:
        """Rows of the join builds whose rows an operator emits once the workers are done (the
        matched or unmatched build rows of a right, full, right semi or right anti join): the sink
        takes none of them before the flush, so its row count alone said "small" and a marking
        pipeline's whole end ran on one kernel thread (TPC-H q21 at SF 10: a 720k-row hash build
        after the right semi join, 119 ms after 33 ms of workers on 16 threads)."""
        rows = 0
        for op in self.pipe.ops:
            if getattr(op, "kind", None) in ("right", "full", "right_semi", "right_anti"):
                side = self.ctx.results.get(getattr(op, "build_pipeline", None))
                rows += int(getattr(side, "num_rows", 0) or 0)
        return rows


def run_workers(pool: ThreadPoolExecutor, works: list) -> None:
    """Run each of ``works`` on the pool; the first error is raised once every worker stopped."""
    futures = [pool.submit(w) for w in works]
    errors = []
    for f in futures:
        try:
            f.result()
        except BaseException as e:  # noqa: BLE001 - re-raised below after every worker stopped
            errors.append(e)
    if errors:
        raise errors[0]


def placeholders(ctx: ExecContext) -> set[int]:
    """The query's pipelines whose entry in ``ctx.results`` stands in for a result not computed: a
    fact-side build deferred into its consumer's fused kernel (exec/fusion_swaps.py), until it is
    run after all (``_materialize``). No other pipeline may take such an entry as its own result
    (exec/shared_results.reuse)."""
    got = ctx.__dict__.get("_placeholder_results")
    if got is None:
        got = ctx.__dict__["_placeholder_results"] = set()
    return got


def run_pipeline(ctx: ExecContext, pipe: Pipeline, pool: ThreadPoolExecutor | None, threads: int) -> None:
    from hetdb.exec.shared_results import reuse

    placeholders(ctx).discard(pipe.pid)  # (a deferred pipeline run after all: its result is real now)
    if reuse(ctx, pipe):
        return
    run = _Run(ctx, pipe)
    run.kernel_threads()  # (the last pipeline may have finished on one kernel thread)
    if ctx.device is not None:
        from hetdb.exec.fusion import plan_fusion
        from hetdb.exec.fusion_run import run_fused

        fused, why = plan_fusion(ctx, pipe)
        if why:
            ctx.stat(pipe.sink.op_id).fused = why if fused is not None else f"operator at a time: {why}"
        if fused is not None:
            # (the context of the host tail when the kernel's groups were handed over there)
            finishing = run_fused(ctx, pipe, fused, run) or ctx
            ctx.results[pipe.pid] = pipe.sink.finalize(finishing, run.gsink)
            if fused.deferred:  # (a deferred build's result is empty: its consumer's kernel scans it)
                placeholders(ctx).add(pipe.pid)
            else:
                keep_build(ctx, pipe)
            return
        from hetdb.exec.compiled import plan_compiled, run_compiled

        compiled, refused = plan_compiled(ctx, pipe)
        if compiled is not None:
            run_compiled(ctx, pipe, compiled, run)
            ctx.results[pipe.pid] = pipe.sink.finalize(ctx, run.gsink)
            keep_build(ctx, pipe)
            return
        if refused:
            ctx.stat(pipe.sink.op_id).fused = "operator at a time: " + "; ".join(w for w in (why, refused) if w)
    else:
        from hetdb.exec.compiled_cpu import run_compiled_cpu

        run = run_compiled_cpu(ctx, pipe, run, pool, threads)
        if run is None:
            note_scanned_rows(ctx, pipe)
            keep_build(ctx, pipe)
            return
    workers = 1 if pipe.source.ordered else max(1, min(threads, len(run.morsels)))
    if workers == 1 or pool is None:
        run.work()
    else:
        run.parallel = True
        run_workers(pool, [run.work] * workers)
    run.flush()
    ctx.results[pipe.pid] = pipe.sink.finalize(ctx, run.gsink)
    note_scanned_rows(ctx, pipe)
    keep_build(ctx, pipe)


def note_scanned_rows(ctx: ExecContext, pipe: Pipeline) -> None:
    """Record on a finished join build how many rows its table scan read (compiled CPU pipelines
    probe the builds that keep the smallest share of their table first)."""
    side = ctx.results.get(pipe.pid)
    if isinstance(side, BuildSide) and isinstance(pipe.source, TableScan):
        side.scanned_rows = ctx.stat(pipe.source.op_id).rows_in
