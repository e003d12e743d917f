"""CPU+GPU co-processing of one fused GPU pipeline (connection option ``gpu_coprocess``).

While the GPU consumes batches of a fact-table scan (the streamer takes row groups from the front of
the scan), CPU worker threads run the same pipeline, compiled for the CPU (exec/compiled_cpu.py: one
Numba ``nogil`` loop per morsel), over runs of row groups they take from the back
(``cache/coscan.SharedScan``: work is stolen, not pre-split; it decides, from the CPU's and the GPU's
rates measured in the scan, whether a CPU worker finishes a run before the GPU would). A CPU worker
reads its pages straight out of the pinned host tier (route ``host_cpu``: the GPU never copies them)
or, for pages the tier lacks, from disk.

The GPU's feeder is one Python thread: every moment a CPU worker holds the GIL delays the GPU's
copies and launches. So a worker's morsel is a run of consecutive row groups (up to ``RUN_BYTES``
decoded): its pages are looked up under one lock, each decoded by a Numba ``nogil`` decoder straight
into the worker's reused run buffers (plain pages: one copy, which NumPy makes without the GIL), and
one loop call goes over the whole run; the Python between those calls is per page a look-up and a
call, per run the loop's arguments.

The join builds, made once on the GPU, are copied to the host and hashed there for the CPU loops
(small dimension tables). Each CPU worker keeps its own group table; when the scan is done its
partial states move to the GPU and join the aggregation's partial states next to the fused kernel's,
so the aggregation merges them as it merges any partial states. EXPLAIN ANALYZE shows the pages by
route on the scan and the row groups each side took on the aggregation.

``gpu_coprocess``: "off" (default), "auto" (the router's cost model decides per steal), "on" (every
steal succeeds: tests force it so that each pipeline mixes CPU and GPU work).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from hetdb import codec
from hetdb.cache.coscan import PROBE_MARGIN, SharedScan, check_coprocess
from hetdb.cache.pages import page_info
from hetdb.cache.router import PageRouter, Route, RouteCounts
from hetdb.column import Batch, Column
from hetdb.errors import CorruptDataError, HetdbError, OutOfRangeError
from hetdb.exec.compiled_cpu import _Worker
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import BuildSide, key_name
from hetdb.exec.pipeline import _Run
from hetdb.storage.pages import decode_page, unpack_validity

# decoded bytes of one CPU worker's run of row groups (its reused buffers); a run is one loop call
RUN_BYTES = 32 << 20


def cpu_workers(ctx: ExecContext) -> int:
    """CPU workers next to the thread driving the GPU."""
    return max(1, int(getattr(ctx.options, "threads", 1) or 1) - 1)


class _StealingRun(_Run):
    """The CPU side's pipeline run: its morsels are row groups stolen from the shared scan, one at a
    time (an int) until the pipeline's loop has taken a morsel without refusing one, then runs of
    up to ``most`` (a tuple of them in scan order: the loop goes over the run at once; a morsel the
    loop refuses runs operator at a time, which reads single row groups only)."""

    def __init__(self, ctx: ExecContext, pipe: Any, shared: SharedScan, plan: Any, most: int = 1,
                 done: Any = None) -> None:
        super().__init__(ctx, pipe)
        self.shared, self.plan = shared, plan
        self.most = most
        self.done = done  # the calling worker is through with its last morsel (before it steals)

    def next_morsel(self) -> tuple[int, Any] | None:
        if self.done is not None:
            self.done()  # its time decides the steal below (a probe's worker must not wait for itself)
        if self.stop:
            return None
        p = self.plan
        got = self.shared.steal_run(self.most if p.compiled and not p.fallback else 1)
        if not got:
            return None
        if len(got) == 1:
            return got[0], got[0]
        run = tuple(sorted(got))
        return run[0], run


def host_build_side(cctx: ExecContext, side: BuildSide, keys: int) -> BuildSide:
    """A GPU join build copied to the host and hashed there (the CPU loops probe it)."""
    from hetdb.exec.keys import encoders_for, key_arrays

    be = cctx.backend
    batch = _to_host(side.batch)
    keycols = [batch.columns[key_name(i)] for i in range(keys)]
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
    """A compiled CPU worker of a co-processed scan: its morsels are stolen runs of row groups, its
    pages come from the pinned host tier and stay pinned while its loop reads them (a run of one row
    group: plain pages are views of the tier's memory; longer runs are decoded into the worker's run
    buffers)."""

    def __init__(self, co: CoProcess) -> None:
        super().__init__(co.cctx, co.pipe, co.crun, co.plan)
        self.co = co
        self.pins: list = []
        self.started = 0.0
        self.taken = 0
        self.warmup = False  # this morsel compiled the loop (its time says nothing of the rate)
        self.buffers: dict[str, np.ndarray] = {}

    def _read(self, morsel: Any) -> tuple[dict[str, Column], int] | None:
        co = self.co
        co._done_with(self)
        started = time.perf_counter()  # the scan's CPU rate counts reading and decoding too
        src, reader = self.pipe.source, self.run.gsrc
        rgs = (morsel,) if isinstance(morsel, int) else tuple(morsel)
        rows = [reader.row_group_rows(rg) for rg in rgs]
        n = sum(rows)
        tier = co.ctx.device.host_tier(co.ctx.options)
        counts = RouteCounts()
        if len(rgs) == 1:
            cols = {c: co._page(reader, self.p.names[c], rgs[0], n, tier, self.pins, counts) for c in self.p.base}
        else:
            cols = {c: self._run_column(reader, self.p.names[c], rgs, rows, tier, counts) for c in self.p.base}
        co.ctx.add_routes(src.op_id, counts)
        co.ctx.add(src.op_id, rows_in=n, rows_out=n)
        self.started, self.taken = started, len(rgs)
        return cols, n

    def _buffer(self, key: str, dtype: Any, n: int) -> np.ndarray:
        buf = self.buffers.get(key)
        if buf is None or buf.dtype != dtype or buf.shape[0] < n:
            buf = self.buffers[key] = np.empty(n, dtype)
        return buf[:n]

    def _run_column(self, reader: Any, name: str, rgs: tuple[int, ...], rows: list[int], tier: Any,
                    counts: RouteCounts) -> Column:
        """Column ``name`` of the run ``rgs`` decoded into this worker's buffer for it."""
        co = self.co
        spec = reader.column(name)
        dtype = np.dtype(spec.dtype.numpy_dtype)
        n = sum(rows)
        out = self._buffer(name, dtype, n)
        target = out.view(np.int64) if dtype == np.float64 else out.view(np.uint8) if dtype == np.bool_ else out
        infos = [page_info(reader, name, rg, False) for rg in rgs]
        pages = co._host_pages(infos, tier, self.pins, counts)
        validity = None
        start = 0
        for rg, info, n_rg, hp in zip(rgs, infos, rows, pages):
            where = f"table '{reader.name}' column '{name}' page {rg}"
            end = start + n_rg
            if hp is None:  # not in the host tier: read (and decoded) by the reader
                col = reader.read(name, rg)
                out[start:end] = col.data
                bits = col.validity
            else:
                raw = _raw(info, hp)
                bits = (unpack_validity(_section(raw, info.sections, "validity", where), n_rg)
                        if "validity" in info.sections else None)
                try:
                    codec.decode_into(_section(raw, info.sections, "data", where), info.codec, n_rg,
                                      target[start:end])
                except codec.CodecError as e:
                    raise CorruptDataError(f"{where}: {info.codec}-encoded data is damaged: {e}") from None
            if bits is not None and validity is None:
                validity = self._buffer(name + "\0validity", np.dtype(np.bool_), n)
                validity[:start] = True
            if validity is not None:
                validity[start:end] = True if bits is None else bits
            start = end
        dictionary = reader.dictionary(name) if infos[0].encoding == "dict" else None
        return Column(spec.dtype, data=out, validity=validity, dictionary=dictionary)

    def _run_kernel(self, kernel: Any, cols: dict[str, Column], n: int, lsink: Any, runs: int) -> None:
        # a Numba dispatcher without a signature compiles (or loads from the disk cache) on this call
        self.warmup = self.warmup or not getattr(kernel.fn, "signatures", True)
        super()._run_kernel(kernel, cols, n, lsink, runs)

    def work(self) -> None:
        self.co._local.worker = self
        try:
            super().work()
        except BaseException:
            self.co.shared.stop()  # workers waiting for this one's time must not wait for ever
            raise
        finally:
            self.co._done_with(self)


def _raw(info: Any, hp: Any) -> np.ndarray:
    """The page's stored bytes out of its pinned host-tier entry."""
    raw = hp.runs[0] if len(hp.runs) == 1 else np.concatenate(hp.runs)
    return raw[:info.location.length]


def _section(raw: np.ndarray, sections: dict, name: str, where: str) -> np.ndarray:
    s = sections.get(name)
    if s is None:
        raise CorruptDataError(f"{where}: the page has no {name} section")
    off, ln = s
    if off + ln > raw.shape[0]:
        raise CorruptDataError(f"{where}: section {name} lies outside the page")
    return raw[off:off + ln]


class CoProcess:
    """The CPU side of one co-processed scan: ``start`` its workers, let the GPU stream the scan
    through ``shared``, then ``finish`` (waits for the workers and hands their partial states to the
    GPU aggregation)."""

    def __init__(self, ctx: ExecContext, pipe: Any, run: Any, shared: SharedScan, cctx: ExecContext,
                 plan: Any, workers: int, most: int = 1) -> None:
        self.ctx, self.pipe, self.run, self.shared = ctx, pipe, run, shared
        self.cctx, self.plan, self.workers = cctx, plan, workers
        self._local = threading.local()  # the worker running on each thread
        self.crun = _StealingRun(cctx, pipe, shared, plan, most, self._done_here)
        self.crun.parallel = workers > 1
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list = []

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="hetdb-coprocess")
        self._futures = [self._pool.submit(_CoWorker(self).work) for _ in range(self.workers)]

    def _done_here(self) -> None:
        worker = getattr(self._local, "worker", None)
        if worker is not None:
            self._done_with(worker)

    def _done_with(self, worker: Any) -> None:
        """A worker finished its morsel: return its page pins, feed its time to the shared scan."""
        if worker.started:
            self.shared.observe_cpu(worker.taken, time.perf_counter() - worker.started, worker.warmup)
            worker.started, worker.warmup = 0.0, False
        tier = self.ctx.device.host_tier(self.ctx.options)
        for hp in worker.pins:
            tier.unpin_page(hp)
        worker.pins = []

    def _host_page(self, info: Any, tier: Any, pins: list, counts: RouteCounts) -> Any:
        """The page's pinned host-tier entry (looked up, else loaded from disk into the tier), or
        None when the tier has no room for it (the caller reads it from disk)."""
        loc = info.location
        hp = tier.lookup(info.host_key, loc, pin=True) if tier is not None else None
        if hp is None and tier is not None:
            hp = _load(tier, info.host_key, loc, f"table '{info.key.table}' column '{info.key.column}' "
                                                 f"page {info.key.row_group}")
            if hp is not None:
                counts.add(Route.DISK_TO_HOST, loc.length)
        elif hp is not None:
            counts.add(Route.HOST_CPU, loc.length)
        if hp is None:
            counts.add(Route.DISK_DIRECT, loc.length)
        else:
            pins.append(hp)
        return hp

    def _host_pages(self, infos: list, tier: Any, pins: list, counts: RouteCounts) -> list:
        """``_host_page`` of each of ``infos``: in the steady state all of them under one lock."""
        got = None if tier is None else tier.lookup_many([i.host_key for i in infos], [i.location for i in infos])
        if got is None:
            return [self._host_page(info, tier, pins, counts) for info in infos]
        pins.extend(got)
        counts.add(Route.HOST_CPU, sum(i.location.length for i in infos), pages=len(infos))
        return got

    def _page(self, reader: Any, name: str, rg: int, n: int, tier: Any, pins: list,
              counts: RouteCounts) -> Column:
        """Column ``name`` of row group ``rg`` on the host: decoded out of the pinned host tier (no
        copy of the stored bytes, no checksum: the tier verified it), else read from disk."""
        info = page_info(reader, name, rg, False)
        hp = self._host_page(info, tier, pins, counts)
        if hp is None:
            return reader.read(name, rg)
        spec = reader.column(name)
        dictionary = reader.dictionary(name) if info.encoding == "dict" else None
        return decode_page(_raw(info, hp), spec.dtype, n, info.encoding, info.sections, dictionary,
                           f"table '{reader.name}' column '{name}' page {rg}", info.codec)

    def finish(self, lsink: Any) -> None:
        """Wait for the workers; their partial states join the GPU aggregation (through ``lsink``,
        the GPU side's local sink state, combined by the caller)."""
        from hetdb.exec.compiled_cpu import _Redo
        from hetdb.exec.hostutil import batch_to_device

        self.shared.stop()  # the GPU is done: a worker waiting for a decision leaves
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
        self.shared.stop()
        for f in self._futures:
            f.exception()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self.crun.gsink.reservation.close()

    def describe(self) -> str:
        s = self.shared
        rates = ""
        if s.cpu_rg_seconds is not None:
            rates = f"; measured per row group: CPU worker {s.cpu_rg_seconds * 1e3:.2f} ms"
            if s.gpu_rg_seconds is not None:
                rates += f", GPU {s.gpu_rg_seconds * 1e3:.2f} ms"
        return (f" (CPU+GPU co-processing: {len(s.cpu_taken)} row groups on {self.workers} CPU workers, "
                f"{len(s.gpu_taken)} on the GPU{rates})")


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
    # the GPU's pages of a row group: every column of the scan (what it copies, and caches)
    names = list(dict.fromkeys(pipe.source.scan.column_names))
    link = [sum(page_info(reader, name, rg, False).location.length for name in names) for rg in row_groups]
    cache = ctx.device.cache
    compressed = bool(getattr(ctx.options, "gpu_compressed_cache", False))

    from hetdb.exec.operators.scan_device import scan_router

    use_cache = scan_router(ctx).use_device_tier  # (route 'copy': the GPU holds nothing for the scan)

    def resident(rg: int) -> bool:
        return use_cache and all(page_info(reader, name, rg, compressed).key in cache for name in names)

    # the pipeline's CPU rate (a prior for the next scans' probe) under its own key: the loops of
    # different pipelines differ in cost by far more than their pages do
    probes = sum(isinstance(op, HashProbe) for op in pipe.ops)
    key = f"coprocess:{reader.name}:{','.join(names)}:{probes}:{len(getattr(pipe.sink, 'aggs', ()))}"
    router = PageRouter("auto", gpu=True, pipeline=key)
    shared = SharedScan(row_groups, link, len(names), router, "on" if mode == "on" else "auto", resident)
    if mode == "auto":
        why = _loses(shared)  # before the builds are copied to the host and the loop is planned
        if why:
            return None, why
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
    read = list(dict.fromkeys(plan.names[c] for c in plan.base))
    return CoProcess(ctx, pipe, run, shared, cctx, plan, cpu_workers(ctx), _run_length(reader, read, row_groups)), ""


def _loses(shared: SharedScan) -> str:
    """Why co-processing would lose ("" when it may win): the GPU would be done with the whole scan
    before one CPU worker finished one row group (the pipeline's measured CPU rate, else the
    default, with the probe's margin); then no worker is started at all."""
    cpu = shared.router.cpu_seconds() * shared.pages * PROBE_MARGIN
    gpu = shared.gpu_seconds_left()
    if cpu < gpu:
        return ""
    return (f"the GPU's estimated {gpu * 1e3:.1f} ms for the scan is less than "
            f"{cpu * 1e3:.1f} ms for one row group on a CPU worker")


def _run_length(reader: Any, names: list[str], row_groups: list[int]) -> int:
    """Row groups in one CPU worker's run: as many as ``RUN_BYTES`` of decoded columns hold; one when
    a string column has a page not dictionary-encoded (the loop refuses such a page, and the
    operators then read that row group alone) or a column holds Python objects (wide decimals)."""
    width = 0
    for name in names:
        spec = reader.column(name)
        dtype = np.dtype(spec.dtype.numpy_dtype)
        if dtype.kind == "O" or spec.dtype.kind == "list" or (spec.dtype.kind == "string" and any(
                page_info(reader, name, rg, False).encoding != "dict" for rg in row_groups)):
            return 1
        width += dtype.itemsize + (1 if spec.nullable else 0)
    rows = max(1, reader.rows_per_page)
    return max(1, RUN_BYTES // max(1, width * rows))
