"""CPU+GPU co-processing of one fused GPU pipeline (connection option ``gpu_coprocess``).

While the GPU consumes batches of a fact-table scan (the streamer takes row groups from the front of
the scan), CPU worker threads run the same pipeline, compiled for the CPU (exec/compiled_cpu.py: one
Numba loop per morsel), over row groups they take from the back (``cache/coscan.SharedScan``: work is
stolen, not pre-split; the router decides, from measured rates, whether a CPU worker finishes a row
group before the GPU would). A CPU worker reads its pages straight out of the pinned host tier (route
``host_cpu``: the GPU never copies them) or, for pages the tier lacks, from disk.

The join builds, made once on the GPU, are copied to the host and hashed there for the CPU loops
(small dimension tables). Each CPU worker keeps its own group table; when the scan is done its
partial states move to the GPU and join the aggregation's partial states next to the fused kernel's,
so the aggregation merges them as it merges any partial states. EXPLAIN ANALYZE shows the pages by
route on the scan and the row groups each side took on the aggregation.

``gpu_coprocess``: "off" (default), "auto" (the router's cost model decides per steal), "on" (every
steal succeeds: tests force it so that each pipeline mixes CPU and GPU work).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hetdb.cache.coscan import SharedScan, check_coprocess
from hetdb.cache.pages import page_info
from hetdb.cache.router import PageRouter, Route, RouteCounts
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError, OutOfRangeError
from hetdb.exec.compiled_cpu import _Worker
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.join import BuildSide, HashProbe, _key_name
from hetdb.exec.pipeline import _Run
from hetdb.storage.pages import decode_page


def cpu_workers(ctx: ExecContext) -> int:
    """CPU workers next to the thread driving the GPU."""
    return max(1, int(getattr(ctx.options, "threads", 1) or 1) - 1)


class _StealingRun(_Run):
    """The CPU side's pipeline run: its morsels are row groups stolen from the shared scan."""

    def __init__(self, ctx: ExecContext, pipe: Any, shared: SharedScan) -> None:
        super().__init__(ctx, pipe)
        self.shared = shared

    def next_morsel(self) -> tuple[int, Any] | None:
        if self.stop:
            return None
        rg = self.shared.steal()
        return None if rg is None else (rg, rg)


def host_build_side(cctx: ExecContext, side: BuildSide, keys: int) -> BuildSide:
    """A GPU join build copied to the host and hashed there (the CPU loops probe it)."""
    from hetdb.exec.keys import encoders_for, key_arrays

    be = cctx.backend
    batch = _to_host(side.batch)
    keycols = [batch.columns[_key_name(i)] for i in range(keys)]
    encoders = encoders_for(be, [c.dtype for c in keycols])
    table = valid_idx = None
    if keys and batch.num_rows:
        arrays, valid = key_arrays(be, keycols, encoders)
        if valid is not None:
            valid_idx = be.nonzero(valid)
            arrays = [be.gather(a, valid_idx) for a in arrays]
        if int(arrays[0].shape[0]):
            table = be.join_build(arrays)
    return BuildSide(batch, table, valid_idx, encoders, side.has_null_key, side.nonempty,
                     scanned_rows=side.scanned_rows)


def _to_host(batch: Batch) -> Batch:
    """A device Batch's columns as host arrays (dictionaries too)."""

    def host(a: Any) -> Any:
        return None if a is None else (a.get() if hasattr(a, "get") else np.asarray(a))

    def col(c: Column) -> Column:
        d = c.dictionary
        return Column(c.dtype, data=host(c.data), validity=host(c.validity),
                      dictionary=None if d is None else col(d), offsets=host(c.offsets), chars=host(c.chars))

    return Batch({k: col(c) for k, c in batch.columns.items()}, batch.num_rows)


class _CoWorker(_Worker):
    """A compiled CPU worker of a co-processed scan: its morsels are stolen row groups, its pages
    come from the pinned host tier and stay pinned while its loop reads them (plain pages are views
    of the tier's memory)."""

    def __init__(self, co: CoProcess) -> None:
        super().__init__(co.cctx, co.pipe, co.crun, co.plan)
        self.co = co
        self.pins: list = []
        self.started = 0.0

    def _read(self, morsel: Any) -> tuple[dict[str, Column], int] | None:
        co = self.co
        co._done_with(self)
        started = time.perf_counter()  # the router's CPU rate counts reading and decoding too
        src, reader = self.pipe.source, self.run.gsrc
        rg = int(morsel)
        n = reader.row_group_rows(rg)
        tier = co.ctx.device.host_tier(co.ctx.options)
        counts = RouteCounts()
        cols = {c: co._page(reader, self.p.names[c], rg, n, tier, self.pins, counts) for c in self.p.base}
        co.ctx.add_routes(src.op_id, counts)
        co.ctx.add(src.op_id, rows_in=n, rows_out=n)
        self.started = started
        return cols, n

    def work(self) -> None:
        try:
            super().work()
        finally:
            self.co._done_with(self)


class CoProcess:
    """The CPU side of one co-processed scan: ``start`` its workers, let the GPU stream the scan
    through ``shared``, then ``finish`` (waits for the workers and hands their partial states to the
    GPU aggregation)."""

    def __init__(self, ctx: ExecContext, pipe: Any, run: Any, shared: SharedScan, cctx: ExecContext,
                 plan: Any, workers: int) -> None:
        self.ctx, self.pipe, self.run, self.shared = ctx, pipe, run, shared
        self.cctx, self.plan, self.workers = cctx, plan, workers
        self.crun = _StealingRun(cctx, pipe, shared)
        self.crun.parallel = workers > 1
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list = []

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="hetdb-coprocess")
        self._futures = [self._pool.submit(_CoWorker(self).work) for _ in range(self.workers)]

    def _done_with(self, worker: Any) -> None:
        """A worker finished its morsel: return its page pins, feed its time to the router."""
        if worker.started:
            self.shared.observe_cpu(len(self.plan.base), time.perf_counter() - worker.started)
            worker.started = 0.0
        tier = self.ctx.device.host_tier(self.ctx.options)
        for hp in worker.pins:
            tier.unpin_page(hp)
        worker.pins = []

    def _page(self, reader: Any, name: str, rg: int, n: int, tier: Any, pins: list,
              counts: RouteCounts) -> Column:
        """Column ``name`` of row group ``rg`` on the host: decoded out of the pinned host tier (no
        copy of the stored bytes, no checksum: the tier verified it), else read from disk."""
        info = page_info(reader, name, rg, False)
        loc = info.location
        hp = tier.lookup(info.host_key, loc, pin=True) if tier is not None else None
        if hp is None and tier is not None:
            hp = _load(tier, info.host_key, loc, f"table '{reader.name}' column '{name}' page {rg}")
            if hp is not None:
                counts.add(Route.DISK_TO_HOST, loc.length)
        elif hp is not None:
            counts.add(Route.HOST_CPU, loc.length)
        if hp is None:
            counts.add(Route.DISK_DIRECT, loc.length)
            return reader.read(name, rg)
        pins.append(hp)
        raw = hp.runs[0] if len(hp.runs) == 1 else np.concatenate(hp.runs)
        spec = reader.column(name)
        dictionary = reader.dictionary(name) if info.encoding == "dict" else None
        return decode_page(raw[:loc.length], spec.dtype, n, info.encoding, info.sections, dictionary,
                           f"table '{reader.name}' column '{name}' page {rg}", info.codec)

    def finish(self, lsink: Any) -> None:
        """Wait for the workers; their partial states join the GPU aggregation (through ``lsink``,
        the GPU side's local sink state, combined by the caller)."""
        from hetdb.exec.compiled_cpu import _Redo
        from hetdb.exec.hostutil import batch_to_device

        errors = []
        for f in self._futures:
            try:
                f.result()
            except BaseException as e:  # noqa: BLE001 - the first is raised below, after every worker stopped
                errors.append(e)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if errors:
            if isinstance(errors[0], _Redo):
                raise OutOfRangeError("a value left its type in a CPU worker's compiled loop "
                                      "(the operators raise the same; run with gpu_coprocess='off' to see where)")
            raise errors[0]
        crun, cg, sink = self.crun, self.crun.gsink, self.pipe.sink
        crun.flush()
        if cg.parts is not None:
            raise HetdbError("CPU+GPU co-processing: the CPU workers' partial aggregates spilled to disk; "
                             "run with gpu_coprocess='off' or a larger host_memory_limit")
        parts = cg.batches + [b for _, b in cg.runs]
        cg.batches, cg.runs = [], []
        for part in parts:
            if part.num_rows:
                sink.add_partial(self.ctx, batch_to_device(self.ctx.backend, part, self.ctx.dict_cache),
                                 self.run.gsink, lsink)
        cg.reservation.close()

    def abort(self) -> None:
        """The GPU side failed: stop the workers (their errors are dropped: the GPU's is raised)."""
        self.crun.stop = True
        for f in self._futures:
            f.exception()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self.crun.gsink.reservation.close()

    def describe(self) -> str:
        s = self.shared
        return (f" (CPU+GPU co-processing: {len(s.cpu_taken)} row groups on {self.workers} CPU workers, "
                f"{len(s.gpu_taken)} on the GPU)")


def _load(tier: Any, key: Any, loc: Any, where: str) -> Any:
    """A page read from disk into the host tier (when it admits it), verified, pinned; else None."""
    from hetdb.io import read_verified

    blocks = tier.acquire(key, loc.length, loc.padded_length, loc.checksum)
    if blocks is None:
        return None
    try:
        read_verified(loc.path, loc.offset, blocks.runs, loc.length, loc.checksum, where)
    except BaseException:
        tier.abort(blocks)
        raise
    return tier.commit(blocks)


def plan_coprocess(ctx: ExecContext, pipe: Any, reader: Any, run: Any,
                   row_groups: list[int]) -> tuple[CoProcess | None, str]:
    """A CoProcess for the fused pipeline ``pipe`` over ``row_groups`` of its scan (a table version's
    ``reader``) when the option asks for it and the CPU compiler takes the pipeline, else (None, why
    not; "" when off)."""
    mode = check_coprocess(getattr(ctx.options, "gpu_coprocess", "off"))
    if mode == "off" or ctx.device is None or not row_groups:
        return None, ""
    if ctx.device.host_tier(ctx.options) is None:
        return None, "no pinned host tier (host_cache_limit=0)"
    from hetdb.backend.cpu.backend import CpuBackend
    from hetdb.exec.compiled_cpu import _prepare

    cctx = ExecContext(ctx.db, CpuBackend(), ctx.options, ctx.host_memory, ctx.spill_dir)
    cctx.stats, cctx._lock, cctx.cleanup = ctx.stats, ctx._lock, ctx.cleanup
    from hetdb.exec.fusion_reuse import _run_skipped_inputs, _skipped_inputs

    if _skipped_inputs(ctx, pipe):
        _run_skipped_inputs(ctx, pipe)  # a repeated plan skipped the builds the CPU loops probe
    for op in pipe.ops:
        if isinstance(op, HashProbe):
            side = ctx.results.get(op.build_pipeline)
            if side is None or side.partitions is not None:
                return None, "a join build is not at hand (built inside the fused kernel, or spilled)"
            cctx.results[op.build_pipeline] = host_build_side(cctx, side, len(op.left_keys))
    plan = _prepare(cctx, pipe)
    if isinstance(plan, str):
        return None, plan or "the CPU pipeline compiler does not take this pipeline"
    if plan.marks is not None or plan.plan.materialize:
        return None, "only aggregating pipelines are co-processed"
    names = list(dict.fromkeys(plan.names[c] for c in plan.base))
    link = [sum(page_info(reader, name, rg, False).location.length for name in names) for rg in row_groups]
    cache = ctx.device.cache
    compressed = bool(getattr(ctx.options, "gpu_compressed_cache", False))

    def resident(rg: int) -> bool:
        return all(page_info(reader, name, rg, compressed).key in cache for name in names)

    router = PageRouter("auto", gpu=True, pipeline="coprocess")
    shared = SharedScan(row_groups, link, len(names), router, "on" if mode == "on" else "auto", resident)
    return CoProcess(ctx, pipe, run, shared, cctx, plan, cpu_workers(ctx)), ""
