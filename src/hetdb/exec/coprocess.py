"""CPU+GPU co-processing of one fused GPU pipeline (connection option ``gpu_coprocess``).

While the GPU consumes batches of a fact-table scan (the streamer takes row groups from the front of
the scan), CPU worker threads run the same pipeline, compiled for the CPU (exec/compiled_cpu.py: one
Numba ``nogil`` loop per morsel), over runs of row groups they take from the back
(``cache/coscan.SharedScan``: work is stolen, not pre-split; it decides, from the CPU's and the GPU's
rates measured in the scan, whether a CPU worker finishes a run before the GPU would; a warm "auto"
scan reserves its back for the workers from the query's start, coprocess_plan.early_shared_scan). A CPU worker
reads its pages straight out of the pinned host tier (route ``host_cpu``: the GPU never copies them)
or, for pages the tier lacks, from disk.

The pages a worker decodes out of the tier are kept decoded beside it (coprocess_setup.decoded_cache:
the CPU's share is the back of the scan, the same row groups run after run), and a worker reads a
row group whose pages are kept as the CPU engine's workers read a hot one: one look-up under one
lock, narrow copies of the integer columns, one loop call (SSB SF 5, one process: 2.31 vs the
engine's 2.35 ms a row group for q1.1, 5.43 vs 5.59 for q4.1; decoding each time they took 3.93 and
11.4). The GPU's feeder is one Python thread: every moment a CPU worker holds the GIL delays the
GPU's copies and launches, so the Python per row group is kept to a few look-ups and calls (~50 us).
Without that cache (``DECODED_SHARE`` 0) a morsel is a run of consecutive row
groups (up to ``RUN_BYTES`` decoded): each page decoded by a Numba ``nogil`` decoder straight into
the worker's reused run buffers, one loop call over the whole run.

Nothing of the CPU side is made before a worker is about to take its first morsel: then the join
builds, made once on the GPU, are copied to the host and hashed there (small dimension tables) and
the CPU loop is planned (exec/coprocess_setup.py), once per cached plan; the workers are the
process's co-processing threads, started once, and their run buffers are kept per thread. So a
scan the cost model keeps on the GPU costs the decision only. A cached plan run again in "auto"
makes its workers with the query's early fact scan (coprocess_plan.early_shared_scan: the back of
the scan reserved for them, the GPU's early scan primes the rest) and starts them once the fact
scan's first delivery is queued (coprocess_plan.WORKERS_AFTER: started with the fact pipeline, a
worker's row group often cannot end before the GPU's). Each CPU worker keeps its own group
table; when the scan is done its
partial states move to the GPU and join the aggregation's partial states next to the fused kernel's,
so the aggregation merges them as it merges any partial states. EXPLAIN ANALYZE shows the pages by
route on the scan and the row groups each side took on the aggregation.

``gpu_coprocess``: "off" (default), "auto" (the cost model, cache/comodel.py, decides from measured
rates whether to co-process the scan at all and with how many workers, exec/coprocess_plan.py; then
the shared scan decides per steal), "on" (every
steal succeeds: tests force it so that each pipeline mixes CPU and GPU work).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from hetdb import codec
from hetdb.cache.comodel import observe_start_delay
from hetdb.cache.coscan import SharedScan
from hetdb.cache.pages import page_info
from hetdb.cache.router import Route, RouteCounts
from hetdb.column import Batch, Column
from hetdb.errors import CorruptDataError, HetdbError, OutOfRangeError
from hetdb.exec.compiled_cpu import _Worker
from hetdb.exec.compiled_cpu_morsel import LocalStats
from hetdb.exec.coprocess_batch import prepare as prepare_share
from hetdb.exec.coprocess_batch import run_share
from hetdb.exec.coprocess_batch import warm as warm_driver
from hetdb.exec.coprocess_setup import (
    builds_done,
    decoded_cache,
    enter_switch_interval,
    exit_switch_interval,
    keep_setup,
    new_setup,
    setup_of,
    worker_pool,
)
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.pipeline import _Run
from hetdb.storage.pages import decode_page, unpack_validity

_THREAD_BUFFERS = threading.local()  # each pool thread's run buffers, kept across scans


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


class _CoWorker(_Worker):
    """A compiled CPU worker of a co-processed scan: its morsels are stolen runs of row groups, its
    pages come from the pinned host tier and stay pinned while its loop reads them: decoded into the
    worker's run buffers (kept by its thread across scans), or, where runs are of one row group
    (pages a run cannot take), plain pages as views of the tier's memory and the others decoded
    into fresh arrays."""

    def __init__(self, co: CoProcess) -> None:
        super().__init__(co.cctx, co.pipe, co.crun, co.plan)
        self.co = co
        self.pins: list = []
        self.started = 0.0
        self.taken = 0
        self.warmup = False  # this morsel compiled the loop (its time says nothing of the rate)
        self.started_cpu = self.read_s = 0.0  # the morsel's thread CPU time at its start; its reading
        self.kept_s = 0.0  # the morsel's decoding into pages kept decoded (later runs read them)
        self.loop_s = 0.0  # the morsel's thread CPU in its loop's call (the rest of it: Python, GIL-held)
        # run buffers: kept by the pool's thread across scans (fresh ones would be page-faulted in
        # by every scan: tens of MiB per worker)
        self.buffers: dict[str, np.ndarray] = _THREAD_BUFFERS.__dict__.setdefault("buffers", {})

    def _read(self, morsel: Any) -> tuple[dict[str, Column], int] | None:
        co = self.co
        co._done_with(self)
        started = time.perf_counter()  # the scan's CPU rate counts reading and decoding too
        self.started_cpu = time.thread_time()
        src, reader = self.pipe.source, self.run.gsrc
        rgs = (morsel,) if isinstance(morsel, int) else tuple(morsel)
        rows = [reader.row_group_rows(rg) for rg in rgs]
        n = sum(rows)
        tier = co.ctx.device.host_tier(co.ctx.options)
        counts = RouteCounts()
        if len(rgs) == 1 and self.p.resident is not None and self.p.resident.cache is not None:  # (pages kept decoded: coprocess_setup.decoded_cache)
            pages = self.p.resident.read(reader, rgs[0], True, self.stats)
            if pages is None:
                t0 = time.perf_counter()
                pages = [co._decoded(reader, self.p.names[c], rgs[0], n, tier, counts) for c in self.p.base]
                self.kept_s = time.perf_counter() - t0  # (what the pages kept decoded spare the next runs)
                co.decoded_pages = True
            cols = dict(zip(self.p.base, pages))
        elif len(rgs) == 1 and self.run.most == 1:  # (pages a run cannot take: plain strings, wide decimals)
            cols = {c: co._page(reader, self.p.names[c], rgs[0], n, tier, self.pins, counts) for c in self.p.base}
        else:
            cols = {c: self._run_column(reader, self.p.names[c], rgs, rows, tier, counts) for c in self.p.base}
        co.ctx.add_routes(src.op_id, counts)  # (nothing, and no lock, for pages kept decoded)
        self.stats.add(src.op_id, rows_in=n, rows_out=n)  # (the query's when the worker ends: no lock a morsel)
        self.started, self.taken = started, len(rgs)
        self.read_s = time.perf_counter() - started
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
        # a Numba dispatcher without a signature compiles (or loads from the disk cache) on this call;
        # asked once per kernel (Dispatcher.signatures lists every signature's types: ~130 us of
        # GIL-held Python a row group, the most of a worker's)
        if not kernel.__dict__.get("_co_called"):
            self.warmup = self.warmup or not getattr(kernel.fn, "signatures", True)
        t0 = time.thread_time()
        super()._run_kernel(kernel, cols, n, lsink, runs)
        self.loop_s += time.thread_time() - t0
        kernel.__dict__["_co_called"] = True

    def _morsels(self, lops: list, lsink: Any) -> None:
        share = self.co.share()
        if share is not None:  # (the reserved back in compiled calls: coprocess_batch.py)
            run_share(self, share, lops, lsink)
            return
        super()._morsels(lops, lsink)

    def work(self) -> None:
        self.co._local.worker = self
        try:
            super().work()
        except BaseException:
            self.co.shared.stop()  # workers waiting for this one's time must not wait for ever
            raise
        finally:
            self.co._done_with(self)


def _run_cleanup(fns: list) -> None:
    try:
        for fn in reversed(fns):
            fn()
    finally:
        fns.clear()


def _owned(col: Column) -> Column:
    """``col`` with copies of its arrays that are views (of a page's bytes in the pinned host tier)."""
    def own(a: Any) -> Any:
        return a if a is None or a.flags.owndata else a.copy()

    if all(a is None or a.flags.owndata for a in (col.data, col.validity, col.offsets, col.chars)):
        return col
    return Column(col.dtype, data=own(col.data), validity=own(col.validity), dictionary=col.dictionary,
                  offsets=own(col.offsets), chars=own(col.chars))


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
    GPU aggregation).

    Nothing is set up until a worker is about to take its first morsel (``SharedScan.would_steal``):
    then one worker copies the join builds to the host and hashes them, and plans the CPU loop, while
    the others wait; a cached plan run again reuses what its first co-processed run set up
    (``CoSetup``, kept on the pipeline: the same plan reads the same table versions, so its builds
    hold the same rows). The set-up's time is in EXPLAIN ANALYZE and feeds the cost model."""

    def __init__(self, ctx: ExecContext, pipe: Any, run: Any, shared: SharedScan, reader: Any,
                 workers: int, key: str) -> None:
        self.ctx, self.pipe, self.run, self.shared = ctx, pipe, run, shared
        self.reader, self.workers, self.key = reader, workers, key
        self._local = threading.local()  # the worker running on each thread
        self.cctx: ExecContext | None = None
        self.plan: Any = None
        self.crun: _StealingRun | None = None
        self._setup_lock = threading.Lock()
        self._ready: bool | None = None   # set up (True), refused (False), not yet (None)
        self.refused = ""
        self.setup_reused = False
        self._gpu: tuple | None = None    # (device id, event after the builds) for the host copies
        self._futures: list = []
        self._switched = False  # the interpreter's switch interval shortened (coprocess_setup.SWITCH_INTERVAL_S)
        self.spent = [0, 0.0, 0.0, 0.0]  # CPU workers: row groups, wall s, thread CPU s, reading s
        self._spent_lock = threading.Lock()
        self.end_wait_s = 0.0  # the GPU side's wait for the CPU workers once its part was done
        # the GPU's feeder thread over the fused pipeline's scan loop: (began, wall s, thread CPU s)
        self.feeder: tuple[float, float, float] | None = None
        # (perf_counter start, end, row groups, thread CPU s) of each CPU worker's morsel
        self.intervals: list[tuple[float, float, int, float, float]] = []
        ctx.__dict__.setdefault("coprocesses", []).append(self)  # (run_stats: the query's timeline)
        # set up apart from the query (coprocess_plan.prepare_cpu_side in the background): the join
        # builds' rows copied to the host already, the host tier given, a context of its own
        self.copied: dict | None = None
        # a worker decoded pages out of the tier to keep them (the Python path, GIL-held per row group):
        # the run's time says little of co-processing once they are kept (coprocess_plan.observe_gpu_scan)
        self.decoded_pages = False
        self.tier: Any = None
        self.detached = False
        self._started = False
        self.started_at: float | None = None  # (perf_counter) ``start`` queued the workers
        self.finished = False  # ``finish`` or ``abort`` ran
        self._share: Any = False  # the reserved back laid out for compiled calls (``share``): not yet
        self.share_s = 0.0        # laying it out took (the first worker, holding the interpreter lock)

    def start(self) -> None:
        """Queue the workers on the process's co-processing threads (each sets up nothing and leaves
        when the CPU would take nothing; none is queued when the CPU would take nothing now: a
        worker woken for nothing takes the interpreter lock from the GPU's feeder). Once."""
        if self._started:
            return
        self._started = True
        self.started_at = time.perf_counter()
        if self.shared.began is not None and self.shared.mode == "auto":
            # (the race's workers start this long after the GPU's copies began: comodel.start_delay)
            observe_start_delay(self.shared.router.rates, f"{self.key}@{self.shared.start_after}",
                                self.started_at - self.shared.began)
        if not self.shared.would_steal():
            return
        if setup_of(self.pipe, self.reader) is None and getattr(self.ctx.backend, "name", "") == "gpu":
            self._gpu = builds_done()  # (the workers copy the builds: after everything queued so far)
        pool = worker_pool(self.workers)
        enter_switch_interval()
        self._switched = True
        self._futures = [pool.submit(self._work) for _ in range(self.workers)]

    @property
    def started(self) -> bool:
        return self._started

    def set_up_now(self) -> bool:
        """The CPU side's set-up on the calling (the GPU's) thread, before the scan starts; False
        when refused."""
        return self._set_up()

    def _work(self) -> None:
        if not self.shared.would_steal() or not self._set_up():
            return
        _CoWorker(self).work()

    def _set_up(self) -> bool:
        """The CPU side's state, made by the first worker about to take a morsel (the others wait
        for it); False when the CPU pipeline compiler refuses the pipeline (the CPU takes nothing)."""
        with self._setup_lock:
            if self._ready is not None:
                return self._ready
            t0 = time.perf_counter()
            try:
                why = self._make()
            except BaseException:
                self._ready = False
                self.shared.stop()
                raise
            seconds = time.perf_counter() - t0
            self.shared.setup_seconds = seconds
            if not self.setup_reused:  # (a reused set-up costs next to nothing: the model counts none)
                self.shared.router.rates.observe_setup(self.key, seconds)
            self._ready = not why
            if why:
                self.refused = why
                self.shared.stop()
            return self._ready

    def _make(self) -> str:
        from hetdb.backend.cpu.backend import CpuBackend

        ctx, pipe = self.ctx, self.pipe
        setup = setup_of(pipe, self.reader)
        backend = setup.backend if setup is not None else CpuBackend()
        cctx = ExecContext(ctx.db, backend, ctx.options, ctx.host_memory, ctx.spill_dir)
        if not self.detached:  # (else statistics of its own: the query may be over)
            cctx.stats, cctx._lock = ctx.stats, ctx._lock
            # a clean-up list of its own, run and emptied with the query's: the set-up kept on the
            # cached plan refers to this context (the loops' bound arguments), and through a shared
            # list it kept the query's GPU context and what that still referred to (TPC-H q13 forced
            # on: 512 bytes of device memory left allocated)
            ctx.cleanup.append(lambda: (self.abort_unfinished(), _run_cleanup(cctx.cleanup)))
        cctx.host_cache = decoded_cache(self.tier if self.tier is not None else ctx.device.host_tier(ctx.options))
        if setup is None:
            setup = new_setup(ctx, cctx, pipe, self.reader, self.shared.row_groups, self._gpu, self.copied)
            if setup.plan is not None or setup.compiler_refused:
                keep_setup(pipe, self.reader, setup)  # (a build not at hand this time may be next time)
        else:
            self.setup_reused = True
            resident = getattr(setup.plan, "resident", None)
            if resident is not None and resident.cache is not cctx.host_cache:
                resident.cache = cctx.host_cache  # (the tier was cleared: its decoded pages with it)
        if setup.refused:
            return setup.refused
        cctx.results.update(setup.host)
        plan = setup.plan  # (its counts go on: morsels the loop took or refused tell the runs' length)
        self.cctx, self.plan = cctx, plan
        self.crun = _StealingRun(cctx, pipe, self.shared, plan, setup.most, self._done_here)
        self.crun.parallel = self.workers > 1
        return ""

    def share(self) -> Any:
        """The reserved back of the scan laid out for the workers' compiled calls
        (coprocess_batch.Share; made once, by the first worker to ask), or None."""
        if self._share is False:
            with self._setup_lock:
                if self._share is False:
                    t0 = time.perf_counter()
                    self._share = prepare_share(self)
                    self.share_s = time.perf_counter() - t0
        return self._share

    def warm_loop(self) -> None:
        """Compile (or load from Numba's cache) the CPU loop for the back-most row group's pages
        (decoded and kept: a worker takes it first) over no rows, so that no worker compiles it
        while it holds a row group the GPU would then wait for. Set up first (``_set_up``)."""
        from hetdb.exec.compiled_cpu_kernels import arguments, kernel_for, morsel_runs, run_groups
        from hetdb.exec.compiled_cpu_narrow import narrowed

        p, crun = self.plan, self.crun
        if p is None or crun is None or p.resident is None or p.resident.cache is None or not self.shared.row_groups:
            return
        reader, rg = crun.gsrc, self.shared.row_groups[-1]
        worker = _CoWorker(self)
        cols = dict(zip(p.base, self._kept_pages(reader, rg, worker.stats)))
        runs = morsel_runs(p, cols)
        kernel = kernel_for(p, self.pipe.sink, cols, runs > 0)
        if isinstance(kernel, str) or p.host.get(id(kernel)) or (
                kernel.__dict__.get("_co_called") and (runs or kernel.__dict__.get("_co_driven"))):
            return
        if p.narrow:
            cols = narrowed(p, cols, p.resident.keys_of(reader, rg), None)
        sink = self.pipe.sink
        direct = int(np.prod(p.direct[1])) if p.direct is not None and not runs else 0
        try:
            state = worker.budget.new(len(sink.keys), kernel.num_int, kernel.num_float, run_groups(p, runs), direct)
            kernel.fn(0, 0, p.expansion, *arguments(self.cctx, p, kernel, cols), *state)
            if not runs:
                warm_driver(self, kernel, cols, state)
                kernel.__dict__["_co_driven"] = True
        finally:
            worker.budget.release()
        kernel.__dict__["_co_called"] = True

    def keep_decoded(self, row_groups: list[int]) -> int:
        """Decode and keep the pages (and their narrow copies, where the loop reads them) of
        ``row_groups`` the way a worker's first morsel of each would, so that the co-processed runs
        find them kept and take their share in compiled calls (coprocess_batch.py) from the first;
        stops when the workers' cache admits no more. Set up first (``_set_up``). Returns how many
        row groups' pages are kept."""
        from hetdb.exec.compiled_cpu_narrow import narrowed

        p, crun = self.plan, self.crun
        if p is None or crun is None or p.resident is None or p.resident.cache is None:
            return 0
        reader, scratch = crun.gsrc, LocalStats()
        kept = 0
        for rg in row_groups:
            pages = self._kept_pages(reader, rg, scratch)
            if p.resident.read(reader, rg, False, scratch) is None:
                break  # (the cache is full: the rest would be decoded for nothing)
            if p.narrow:
                narrowed(p, dict(zip(p.base, pages)), p.resident.keys_of(reader, rg), None)
            kept += 1
        return kept

    def _kept_pages(self, reader: Any, rg: int, stats: Any) -> list[Column]:
        """The pages of row group ``rg`` the CPU loop reads: kept decoded already, else decoded out
        of the pinned host tier now and offered to the workers' cache (``_decoded``)."""
        p = self.plan
        pages = p.resident.read(reader, rg, False, stats)
        if pages is None:
            n = reader.row_group_rows(rg)
            tier = self.tier if self.tier is not None else self.ctx.device.host_tier(self.ctx.options)
            pages = [self._decoded(reader, p.names[c], rg, n, tier, RouteCounts()) for c in p.base]
        return pages

    def _done_here(self) -> None:
        worker = getattr(self._local, "worker", None)
        if worker is not None:
            self._done_with(worker)

    def _done_with(self, worker: Any) -> None:
        """A worker finished its morsel: return its page pins, feed its time to the shared scan."""
        if worker.started:
            now = time.perf_counter()
            wall = now - worker.started
            self.shared.observe_cpu(worker.taken, wall, worker.warmup, wall - worker.kept_s)
            cpu = time.thread_time() - worker.started_cpu
            with self._spent_lock:
                # (wall time well above the thread's CPU time: waiting for the interpreter lock or a core)
                self.spent[0] += worker.taken
                self.spent[1] += wall
                self.spent[2] += cpu
                self.spent[3] += worker.read_s
                self.intervals.append((worker.started, now, worker.taken, cpu, worker.loop_s))
            worker.started, worker.warmup, worker.kept_s = 0.0, False, 0.0
        worker.loop_s = 0.0
        if worker.pins:
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

    def _decoded(self, reader: Any, name: str, rg: int, n: int, tier: Any, counts: RouteCounts) -> Column:
        """Column ``name`` of row group ``rg`` decoded out of the pinned host tier (``_page``) into
        arrays of its own, kept decoded where the CPU workers' cache admits it."""
        pins: list = []
        try:
            col = _owned(self._page(reader, name, rg, n, tier, pins, counts))
        finally:
            for hp in pins:
                tier.unpin_page(hp)
        return self.cctx.host_cache.admit(reader, name, rg, col)

    def _join(self) -> list:
        errors = []
        for f in self._futures:
            try:
                f.result()
            except BaseException as e:  # noqa: BLE001 - the first is raised by the caller, after every worker stopped
                errors.append(e)
        if self._switched:
            self._switched = False
            exit_switch_interval()
        return errors

    def finish(self) -> list[Batch]:
        """Wait for the workers; returns their partial states (host batches: the caller adds them to
        the aggregation, on the host when its kernel's groups go there, else ``to_device``)."""
        from hetdb.exec.columns import concat_batches
        from hetdb.exec.compiled_cpu import _Redo

        self.finished = True
        self.shared.stop()  # the GPU is done: a worker waiting for a decision leaves
        t0 = time.perf_counter()
        errors = self._join()
        self.end_wait_s = time.perf_counter() - t0
        if self.shared.cpu_taken:  # (else it waited for a set-up, which the model counts apart)
            self.shared.router.rates.observe_end_wait(self.key, self.end_wait_s)
        if errors:
            if self.crun is not None:
                self.crun.gsink.reservation.close()
            if isinstance(errors[0], _Redo):
                raise OutOfRangeError("a value left its type in a CPU worker's compiled loop "
                                      "(the operators raise the same; run with gpu_coprocess='off' to see where)")
            raise errors[0]
        if self.crun is None:
            return []  # no worker took a morsel: nothing was set up
        crun, cg = self.crun, self.crun.gsink
        crun.flush()
        if cg.parts is not None:
            cg.reservation.close()
            raise HetdbError("CPU+GPU co-processing: the CPU workers' partial aggregates spilled to disk; "
                             "run with gpu_coprocess='off' or a larger host_memory_limit")
        parts = [p for p in cg.batches + [b for _, b in cg.runs] if p.num_rows]
        cg.batches, cg.runs = [], []
        cg.reservation.close()
        if len(parts) > 1 and not any(c.dictionary is not None for p in parts for c in p.columns.values()):
            parts = [concat_batches(self.cctx.backend, parts)]  # (one batch: one copy, one merge)
        return parts

    def to_device(self, parts: list[Batch], gsink: Any) -> None:
        """The CPU workers' partial states into the GPU aggregation's global state ``gsink``."""
        from hetdb.exec.hostutil import batch_to_device

        sink = self.pipe.sink
        lsink = sink.init_local(self.ctx, gsink)
        for part in parts:
            sink.add_partial(self.ctx, batch_to_device(self.ctx.backend, part, self.ctx.dict_cache), gsink, lsink)
        sink.combine(self.ctx, gsink, lsink)

    def abort_unfinished(self) -> None:
        """``abort`` unless ``finish`` or ``abort`` ran (a query's clean-up)."""
        if not self.finished:
            self.abort()

    def abort(self) -> None:
        """The GPU side failed: stop the workers (their errors are dropped: the GPU's is raised)."""
        self.finished = True
        if self.crun is not None:
            self.crun.stop = True
        self.shared.stop()
        self._join()
        if self.crun is not None:
            self.crun.gsink.reservation.close()

    def fed(self, began: float, thread_began: float) -> None:
        """The GPU's feeder thread ended the fused pipeline's scan loop it began at ``began``
        (perf_counter; ``thread_began``: its thread CPU time then): wall time well above its CPU
        time is waiting (for the interpreter lock behind the CPU workers, or for the GPU)."""
        self.feeder = (began, time.perf_counter() - began, time.thread_time() - thread_began)

    def timeline(self, t0: float) -> dict:
        """What the query's co-processing did, in ms from ``t0`` (its start): the CPU workers'
        morsels (start, end, row groups, thread CPU, of it in the compiled loop's call: the rest is
        the worker's Python around it, which holds the interpreter lock the GPU's feeder needs),
        the feeder's scan loop, the split."""
        s = self.shared
        out = {"workers": self.workers, "cpu_row_groups": len(s.cpu_taken), "gpu_row_groups": len(s.gpu_taken),
               "reserved": s.reserved, "end_wait_ms": self.end_wait_s * 1e3,
               # (start ms, end ms, row groups, thread CPU ms, of it in the compiled loop's call)
               "morsels": [((a - t0) * 1e3, (b - t0) * 1e3, n, c * 1e3, k * 1e3) for a, b, n, c, k in sorted(self.intervals)]}
        if self.feeder is not None:
            began, wall, cpu = self.feeder
            out["feeder"] = {"began_ms": (began - t0) * 1e3, "wall_ms": wall * 1e3, "thread_cpu_ms": cpu * 1e3}
        if s.gpu_end is not None:
            out["gpu_end_ms"] = (s.gpu_end - t0) * 1e3
        if self.started_at is not None:
            out["started_ms"] = (self.started_at - t0) * 1e3
        if self._share is not False:
            out["share_ms"] = self.share_s * 1e3  # (laying the reserved back out for compiled calls)
            out["compiled_share"] = self._share is not None
        return out

    def describe(self) -> str:
        s = self.shared
        rates = ""
        if s.cpu_rg_seconds is not None:
            rates = f"; measured per row group: CPU worker {s.cpu_rg_seconds * 1e3:.2f} ms"
            if s.gpu_rg_seconds is not None:
                rates += f", GPU {s.gpu_rg_seconds * 1e3:.2f} ms"
        if s.setup_seconds is None:
            setup = "; nothing set up: no worker took a morsel"
        else:
            setup = f"; set-up {s.setup_seconds * 1e3:.2f} ms{' (reused)' if self.setup_reused else ''}"
            if self.refused:
                setup += f", refused: {self.refused}"
        rgs, wall, cpu, read = self.spent
        if rgs:
            setup += (f"; CPU workers per row group: {wall / rgs * 1e3:.2f} ms wall, {cpu / rgs * 1e3:.2f} ms "
                      f"thread CPU, {read / rgs * 1e3:.2f} ms reading and decoding")
        return (f" (CPU+GPU co-processing: {len(s.cpu_taken)} row groups on {self.workers} CPU workers, "
                f"{len(s.gpu_taken)} on the GPU{rates}{setup}; the GPU waited {self.end_wait_s * 1e3:.2f} ms "
                "for the CPU workers at the end)")


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
