"""Planning a co-processed scan (exec/coprocess.py): the shared scan and, in "auto", the cost model's
decision (cache/comodel.py) from the pipeline's measured rates, before anything of the CPU side is
made; the early fact scan as the shared scan's GPU side (exec/early_scan.py); the GPU's rate alone and
its slowdown beside CPU workers, measured after each scan."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from hetdb.cache.comodel import (
    MEASURED_MARGIN,
    alone_seconds,
    decide,
    observe_outcome,
    outcome_refuses,
    reprobe,
    split_scale,
    start_delay,
)
from hetdb.cache.coscan import SharedScan, check_coprocess
from hetdb.cache.pages import page_info
from hetdb.cache.router import PageRouter
from hetdb.exec.coprocess import CoProcess
from hetdb.exec.coprocess_setup import CoSetup, keep_setup, link_bytes, setup_of
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.join import HashProbe

# the rows of a page the default CPU rate is for (cache/rates.py DEFAULT_CPU_PAGES_PER_S)
DEFAULT_PAGE_ROWS = 1 << 20
# the set-up the cost model counts when the cached plan keeps one (a context and a run: ~0.05 ms)
REUSED_SETUP_S = 0.1e-3
# forced on: how long the GPU's side waits for a CPU worker's first claim before it streams
FORCED_CLAIM_WAIT_S = 2.0
# (workers, row groups) for the CPU side of every "auto" scan instead of the cost model's choice: A/B
# measurements of the split (scripts/coprocess_warm_table.py's MODE%K@N); None: the model decides
FORCED_SPLIT: tuple[int, int] | None = None
# when an "auto" query's CPU workers start (exec/early_scan.py): "primed", once the early fact scan's
# deliveries are all queued (4.3 ms into SSB q1.1 at SF 20 on the H100: host work), or "first", once
# its first delivery and the dimension scans' are (~1 ms: the link then has the first delivery to
# move while the host queues the rest beside the workers' start), "fact", when the fact pipeline
# begins (after the dimension pipelines: their host work then meets no worker's Python), or "queued",
# once the fused pipeline has queued the kernels of the GPU's share (the feeder then only waits for
# the GPU). Reserved scans only ("auto"; the others start with the fused pipeline). On the H100
# (s18 checkpoint, SSB SF 20, forced splits, same process): "first" beat "fact" on every query
# measured: q1.1 14 row groups on 14 workers 14.6 ms against 17.0 (the GPU alone 14.5; the workers
# starting at 7.6 ms ended 2.2 ms after the GPU), 6 on 6 workers 13.3; q4.1 47.8 against 61 (a
# worker's 21 ms row group started at ~19 ms cannot end before the GPU's ~27). Started early they
# stretch the host's priming of the early scans (q1.1: 14 workers 3.9 -> 7.9 ms, 6 workers -> 5.0:
# their start-up Python holds the interpreter lock), which the race's measured GPU slowdown per
# worker count answers (comodel.decide tries fewer workers). (s17, with main's path of then: "fact"
# 15.08 / 15.22 / 15.70 ms on q1.x against 15.37 / 15.52 / 15.27 alone.)
# H100 session 18 final (coprocess_warm_table, q1.1-q4.1, 5 runs, merged main b8bac5c4): with "first" as
# the default, auto explored with 14 workers started early in its first co-processed runs (q2.1 77-271 ms
# against 22 on the GPU alone; auto / best single 1.509): the default was "fact" again (co13: 1.015).
# Those first runs decoded the workers' pages on the Python path; since the background set-up keeps
# them decoded (PREDECODE_SHARE) "first" is the default again: H200 session 24, SSB SF 50, forced
# splits of 48 row groups on 14 workers: geomean of 7 queries 41.60 ms with "first", 45.44 with
# "fact" (the GPU alone 40.53); "auto" 40.57 with "first", 41.01 with "fact" (40.34 / 40.37 alone).
WORKERS_AFTER = "first"


# the GPU's slowdown per CPU worker beside it until co-processed scans of the pipeline measured one
# (cache/rates.py gpu_slowdown; comodel.decide then weighs fewer workers): workers started with the
# early scan hold the interpreter lock the host's priming and dimension pipelines need for their
# start-up Python (H100, s18 checkpoint 1, SSB SF 20 q1.1 warm, the GPU's side of the split against
# its share's time alone: 14 workers ~1.23x, 6 workers ~1.08x)
PRIOR_SLOWDOWN_PER_WORKER = 0.015


def gpu_slowdown(rates: Any, key: str, workers: int) -> float:
    """The GPU's slowdown beside ``workers`` CPU workers in a co-processed scan of ``key``: measured,
    else PRIOR_SLOWDOWN_PER_WORKER per worker."""
    if key in rates.slowdown:
        return rates.gpu_slowdown(key, workers)
    return 1.0 + PRIOR_SLOWDOWN_PER_WORKER * max(0, workers)


def workers_start_queued(co: Any) -> bool:
    """Whether ``co``'s workers start once the GPU's share is queued (WORKERS_AFTER "queued", a
    scan with a reserved back) rather than when the fused pipeline begins (``exec/fusion_run._reads``)."""
    return co.shared.start_after == "queued" and co.shared.reserved > 0 and not co.started


def cpu_workers(ctx: ExecContext) -> int:
    """CPU workers next to the thread driving the GPU: on 8 or more threads two cores are left to it
    (its Python feeds the copies and launches; the CUDA driver's and the streamer's threads run
    beside it), on fewer one."""
    threads = int(getattr(ctx.options, "threads", 1) or 1)
    return max(1, threads - (2 if threads >= 8 else 1))


def pipeline_key(reader: Any, pipe: Any, names: list[str], physical: Any = None) -> str:
    """The key of the pipeline's measured rates, set-up and outcomes: the loops of different pipelines
    differ in cost by far more than their pages do (and pages by their rows), and so do one shape's
    queries with other constants (``plan_fingerprint``: SSB q1.1-q1.3 read the same columns through
    one probe; at SF 50 on an H200 a split that gained 14% on q1.2 and q1.3 lost on q1.1, whose
    outcome then kept the other two on the GPU alone)."""
    probes = sum(isinstance(op, HashProbe) for op in pipe.ops)
    return (f"coprocess:{reader.name}:{getattr(reader, 'rows_per_page', 0)}:{','.join(names)}:{probes}:"
            f"{len(getattr(pipe.sink, 'aggs', ()))}:{plan_fingerprint(pipe, physical)}")


def plan_fingerprint(pipe: Any, physical: Any = None) -> str:
    """A short hash of what ``pipe`` and the pipelines it depends on (its join builds, in
    ``physical``'s pipelines) do: their operators' descriptions, constants included. Kept on the
    pipeline (a cached plan's runs ask again)."""
    got = pipe.__dict__.get("_co_fingerprint")
    if got is not None:
        return got
    by_pid = {p.pid: p for p in getattr(physical, "pipelines", ()) or ()}
    seen: set[int] = set()
    lines: list[str] = []
    todo = [pipe]
    while todo:
        p = todo.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        lines.extend(op.describe() for op in p.operators())
        todo.extend(by_pid[d] for d in getattr(p, "deps", ()) if d in by_pid)
    got = hashlib.sha1("\n".join(lines).encode()).hexdigest()[:12]
    if by_pid:
        pipe.__dict__["_co_fingerprint"] = got
    return got


def shared_scan(ctx: ExecContext, pipe: Any, reader: Any, row_groups: list[int], mode: str
                ) -> tuple[SharedScan | None, str, str]:
    """(the scan CPU workers and the GPU would share, its pipeline key, "") when ``mode`` ("auto" or
    "on") says to co-process ``pipe``'s scan of ``row_groups``; else (None, "", why not). In "auto"
    the cost model decides (``cache/comodel.decide``) before anything is set up."""
    if ctx.device.host_tier(ctx.options) is None:
        return None, "", "no pinned host tier (host_cache_limit=0)"
    # the GPU's pages of a row group: every column of the scan (what it copies, and caches)
    names = list(dict.fromkeys(pipe.source.scan.column_names))
    setup = setup_of(pipe, reader)
    if setup is not None and setup.refused:
        return None, "", setup.refused
    cache = ctx.device.cache
    compressed = bool(getattr(ctx.options, "gpu_compressed_cache", False))

    from hetdb.exec.operators.scan_device import scan_router

    use_cache = scan_router(ctx).use_device_tier  # (route 'copy': the GPU holds nothing for the scan)

    def resident(rg: int) -> bool:
        return use_cache and all(page_info(reader, name, rg, compressed).key in cache for name in names)

    key = pipeline_key(reader, pipe, names, getattr(ctx, "physical", None))
    router = PageRouter("auto", gpu=True, pipeline=key)
    rate = router.rates.cpu_rate(key)
    prior = router.cpu_seconds() * len(names) * MEASURED_MARGIN if rate.observations else None
    workers = cpu_workers(ctx)
    scale = max(1, int(getattr(reader, "rows_per_page", 0) or DEFAULT_PAGE_ROWS)) / DEFAULT_PAGE_ROWS
    shared = SharedScan(row_groups, link_bytes(reader, names, row_groups), len(names), router,
                        "on" if mode == "on" else "auto", resident, gpu_pipeline=key, cpu_prior=prior,
                        gpu_slowdown=gpu_slowdown(router.rates, key, workers), default_scale=scale)
    shared.workers = workers
    # (when its workers start; the race counts the delay measured for that start: start_delay)
    shared.start_after = WORKERS_AFTER
    if mode == "auto" and FORCED_SPLIT is not None:
        shared.workers, shared.expected_cpu = max(1, FORCED_SPLIT[0]), min(len(row_groups) - 1, FORCED_SPLIT[1])
        if shared.expected_cpu <= 0 or resident(row_groups[-1]):
            return None, "", "the forced split gives the CPU nothing"
        return shared, key, ""
    if mode == "auto":
        if resident(row_groups[-1]):
            return None, "", "the GPU holds the scan's last row group"
        why = outcome_refuses(router.rates, key)
        if why:
            return None, "", why
        gpu = shared.gpu_alone_all()

        def decided(measured: bool) -> Any:
            return decide(gpu, router.cpu_seconds() * len(names) * (1.0 if measured else scale), measured, workers,
                          (router.rates.setup_seconds(key) if setup_of(pipe, reader) is None else REUSED_SETUP_S)
                          + router.rates.end_wait_seconds(key), lambda w: gpu_slowdown(router.rates, key, w),
                          start_delay(router.rates, f"{key}@{shared.start_after}"), gpu_fixed(router.rates, key, gpu))

        d = decided(prior is not None)
        if not d.go and prior is not None and not d.est.cpu_row_groups and reprobe(router.rates, key):
            router.rates.forget_cpu(key)  # (measured again: one probe row group at the default rate)
            shared.cpu_prior = None
            d = decided(False)
        if not d.go:
            return None, "", d.why
        timed = pipe.source.op_id in ctx.__dict__.get("co_began", {})  # (an early fact scan began it)
        if not router.rates.gpu_rate(key).observations or (timed and alone_seconds(router.rates, key) is None):
            # (the race needs the GPU's own time: the model's prior for it may be far off, and a
            # GPU slowed beside the CPU workers is measured against it; and where the run is timed
            # from its early fact scan's start, the outcome needs a run alone timed so: a query's
            # first run has no early scan, and with no run alone to compare with, co-processed runs
            # went on however slow they were: SSB q2.1 at SF 50 on an H200, 76-87 ms against 51)
            ctx.__dict__.setdefault("co_prepare", set()).add(pipe.source.op_id)  # (observe_gpu_scan)
            return None, "", "the GPU's time alone for this pipeline is not measured yet: this run measures it"
        # (the outcome's share of the model's: comodel.SPLIT_SCALES; no more workers than row groups)
        cpu = max(1, round(d.est.cpu_row_groups * split_scale(router.rates, key)))
        shared.expected_cpu, shared.workers = cpu, max(1, min(d.workers, cpu))
        shared.probe = d.probe  # (a probe run's outcome says nothing of co-processing: comodel.observe_outcome)
        shared.gpu_slowdown = gpu_slowdown(router.rates, key, d.workers)
    return shared, key, ""


def gpu_fixed(rates: Any, key: str, gpu: list[float]) -> float:
    """The GPU's time for the scan of ``key`` that no row group it leaves shortens: its runs alone,
    end to end from the query's start (comodel.alone_seconds), less its row groups' times ``gpu``
    (SSB q1.1 at SF 20 on the H100: ~16 ms, of which ~12 the link's; 0 when not measured)."""
    alone = alone_seconds(rates, key)
    return 0.0 if alone is None else max(0.0, alone - sum(gpu))


def plan_coprocess(ctx: ExecContext, pipe: Any, reader: Any, run: Any,
                   row_groups: list[int]) -> tuple[CoProcess | None, str]:
    """A CoProcess for the fused pipeline ``pipe`` over ``row_groups`` of its scan (a table version's
    ``reader``) when the option asks for it and (in "auto") the cost model expects a gain, else
    (None, why not; "" when off). Nothing of the CPU side is set up here (see CoProcess)."""
    mode = check_coprocess(getattr(ctx.options, "gpu_coprocess", "off"))
    if mode == "off" or ctx.device is None or not row_groups:
        return None, ""
    early = getattr(ctx, "early_scans", {}).get(pipe.source.op_id)
    pre = ctx.__dict__.get("co_early", {}).pop(pipe.source.op_id, None)
    started = pre[2] if isinstance(pre, tuple) else None  # (CPU workers started with the early scan)
    early_ok = early is not None and early.iterator is not None and not early.taken
    if early_ok:
        if pre is None or isinstance(pre, str):  # (the model's reason when the query began)
            return None, pre or "its scan started early"
        if pre[0].row_groups != list(row_groups):
            pre = None  # (the early scan is not taken over: exec/early_scan.take_early closes it)
    if isinstance(pre, str):
        pre = None
    if pre is not None and not early_ok and pre[0].gpu_taken:
        pre = None  # (an early streamer claimed row groups of it and was closed: they would be lost)
    if started is not None and pre is None:
        started.abort()  # (its workers took row groups of a scan this one is not)
        started = None
    if pre is not None:
        shared, key = pre[0], pre[1]
        shared.restart_clock()
        shared.consumer_began()
    else:
        shared, key, why = shared_scan(ctx, pipe, reader, row_groups, mode)
        if shared is None:
            return None, why
    if setup_of(pipe, reader) is None:
        from hetdb.exec.fusion_reuse import _run_skipped_inputs, _skipped_inputs

        if _skipped_inputs(ctx, pipe):
            _run_skipped_inputs(ctx, pipe)  # a repeated plan skipped the builds the CPU loops probe
    if started is not None:
        return started, ""
    co = CoProcess(ctx, pipe, run, shared, reader, shared.workers, key)
    ctx.cleanup.append(co.abort_unfinished)  # (a query that fails before its scan ends)
    if mode == "on":
        # forced (tests): set up before the GPU streams, so that the CPU workers take part in every
        # pipeline however fast the GPU is (lazily, a first set-up compiling CPU kernels let the
        # GPU finish the scan alone)
        if co.set_up_now():
            # and the workers claim their first row groups before the GPU's streamer claims its first
            # delivery's (with small pages, every row group of the scan)
            co.start()
            co.shared.wait_for_cpu(FORCED_CLAIM_WAIT_S)
    return co, ""


def observe_gpu_scan(ctx: ExecContext, pipe: Any, reader: Any, row_groups: int, seconds: float,
                     co: CoProcess | None) -> None:
    """The fused pipeline's scan of ``row_groups`` took ``seconds`` (gpu_coprocess "auto"): alone
    (``co`` None), the GPU's rate for the pipeline; co-processed, how much slower the GPU got
    through its part than that rate says (cache/comodel.py)."""
    if row_groups <= 0 or seconds <= 0:
        return
    names = list(dict.fromkeys(pipe.source.scan.column_names))
    key = pipeline_key(reader, pipe, names, getattr(ctx, "physical", None)) if co is None else co.key
    rates = PageRouter("auto", gpu=True, pipeline=key).rates
    if co is None:
        rates.gpu_rate(key).observe(row_groups * len(names), seconds)
        began = ctx.__dict__.get("co_began", {}).get(pipe.source.op_id)
        if began is not None:  # (the query's early fact scan began then: comodel.observe_outcome)
            observe_outcome(rates, key, False, time.perf_counter() - began)
        if pipe.source.op_id in ctx.__dict__.get("co_prepare", ()) and setup_of(pipe, reader) is None:
            prepare_cpu_side(ctx, pipe, reader, key)
        return
    s = co.shared
    if FORCED_SPLIT is not None:
        return  # (an A/B measurement of a split teaches the model nothing)
    began = ctx.__dict__.get("co_began", {}).get(pipe.source.op_id)
    # (what it did, end to end; a probe run's only when the CPU took nothing: then it only cost)
    if began is not None and s.mode == "auto" and (not s.probe or not s.cpu_taken) and not _decoding_run(co):
        observe_outcome(rates, key, True, time.perf_counter() - began)
    # the GPU's own time through its share (to its groups on the host, less its wait for the workers)
    # against what its rate alone, timed the same way, says for that share
    rate = rates.gpu_rate(key)
    own = seconds - co.end_wait_s
    if s.cpu_taken and rate.observations and own > 0:
        alone = rate.seconds(row_groups * len(names))
        if alone > 0:
            rates.observe_slowdown(key, min(20.0, own / alone), co.workers)


def _decoding_run(co: CoProcess) -> bool:
    """Whether ``co``'s run is one of its pipeline's first DECODING_RUNS_UNCOUNTED whose workers
    decoded pages to keep them (no outcome counts it)."""
    if not co.decoded_pages:
        return False
    with _PREPARING_LOCK:
        seen = _DECODING_RUNS.get(co.key, 0)
        if seen >= DECODING_RUNS_UNCOUNTED:
            return False
        _DECODING_RUNS[co.key] = seen + 1
        return True


def early_shared_scan(ctx: ExecContext, pipe: Any, row_groups: list[int]) -> tuple[SharedScan | None, int | None]:
    """(the shared scan, the bytes its early streamer may prime: None, no bound of its own) when
    ``plan_coprocess`` is expected to co-process ``pipe``'s scan of ``row_groups`` (gpu_coprocess
    "auto"), else (None, None). The early scan (exec/early_scan.py) is then this shared scan's GPU
    side, priming the GPU's expected share (the rest is reserved for the CPU workers:
    ``SharedScan.reserve``); ``plan_coprocess`` takes the shared scan over. Where the
    cached plan's CPU side is set up already, its CPU workers are made here too, and started as
    WORKERS_AFTER says (``start_early_workers``, or exec/fusion_run._reads)."""
    if getattr(ctx.options, "gpu_coprocess", "off") != "auto" or ctx.device is None or not row_groups:
        return None, None
    began = ctx.__dict__.setdefault("co_began", {})[pipe.source.op_id] = time.perf_counter()
    reader = ctx.db.table(pipe.source.scan.table)
    shared, key, why = shared_scan(ctx, pipe, reader, row_groups, "auto")
    if shared is None:
        ctx.__dict__.setdefault("co_early", {})[pipe.source.op_id] = why
        return None, None
    shared.began = began  # (the early scan's copies begin now, long before the fact pipeline)
    setup = setup_of(pipe, reader)
    if setup is None:
        # no CPU side yet: set up at the end of this run (prepare_cpu_side), which runs on the GPU
        # alone: set up lazily during the fused pipeline, its workers would find that the GPU's
        # copies ran ahead meanwhile and take nothing, and its priming would have stopped short of
        # the CPU's expected share for nothing
        ctx.__dict__.setdefault("co_prepare", set()).add(pipe.source.op_id)
        why = "the CPU side is set up at the end of this run: the next one starts its workers with the scan"
        ctx.__dict__.setdefault("co_early", {})[pipe.source.op_id] = why
        return None, None
    # the CPU side an earlier run of the cached plan set up (its join builds' host copies: the same
    # table versions, the same rows) needs nothing of this run: its workers are made now, with the
    # scan's reserved back, and start as WORKERS_AFTER says
    co = CoProcess(ctx, pipe, None, shared, reader, shared.workers, key)
    ctx.cleanup.append(co.abort_unfinished)  # (a query that fails before its fact pipeline)
    ctx.__dict__.setdefault("co_early", {})[pipe.source.op_id] = (shared, key, co)
    gpu_share = max(1, len(row_groups) - shared.expected_cpu)
    # the back of the scan is the CPU workers' from the start: the GPU's streamer claims at the host's
    # pace (its copies queue far ahead of the link), so a boundary left open went to the GPU before
    # any worker came; the GPU primes its whole share as GPU-only primes the whole scan, and takes
    # what the workers leave of theirs at its end (SharedScan.take_rest)
    gpu = shared.gpu_alone_all()
    end = None if FORCED_SPLIT is not None else (
        began + gpu_fixed(shared.router.rates, key, gpu) + shared._alone_prefix[gpu_share] * shared.gpu_slowdown)
    shared.reserve(len(row_groups) - gpu_share, end)
    return shared, None  # (primed as far as GPU-only primes: its streamer stops at the reservation)




def start_early_workers(ctx: ExecContext, pipe: Any, primed: bool = True) -> None:
    """Start the CPU workers ``early_shared_scan`` made for ``pipe``'s scan once the early scan's
    first deliveries are queued (``primed``: all of them; else the fact scan's first and the
    dimension scans', the rest still to queue), as the scan's ``start_after`` (WORKERS_AFTER when
    it was made) says: a worker starting takes the interpreter lock for a while."""
    pre = ctx.__dict__.get("co_early", {}).get(pipe.source.op_id)
    if not isinstance(pre, tuple) or pre[2] is None:
        return
    shared = pre[0]
    if primed:
        shared.restart_clock()  # (the priming claimed the GPU's row groups in a burst: no rate)
    after = shared.start_after
    if (not primed and after != "first") or after in ("fact", "queued") or pre[2].started:
        return  # ("fact", "queued": the fused pipeline starts them, exec/fusion_run._reads)
    pre[2].start()  # (CoProcess.start counts the delay: comodel.observe_start_delay)


def prepare_cpu_side(ctx: ExecContext, pipe: Any, reader: Any, key: str) -> None:
    """Set the CPU side of ``pipe`` up, at the end of the run that measured the GPU alone because
    the model would co-process it (its join builds are at hand): the next run of the cached plan
    starts its workers with its early fact scan, and its probe row group runs a compiled loop
    (``CoProcess.warm_loop``). Else the first co-processed run would set up and compile on a worker
    during its fused pipeline, when a probe no longer fits before the GPU is done (its copies ran
    ahead while the dimension pipelines did), and the rate would never be measured.

    The builds' rows are copied to the host now (they go with the query); hashing them, planning
    and compiling the loop (2.2-5.6 s the first time in a process: Numba) run on a thread of their
    own when PREPARE_IN_BACKGROUND (the query returns; the plan's runs stay on the GPU alone until
    the set-up is kept: ``wait_prepared``)."""
    if setup_of(pipe, reader) is not None or ctx.device is None:
        return
    verdicts = getattr(getattr(ctx, "early_scans", {}).get(pipe.source.op_id), "args", None)
    row_groups = list(verdicts[2]) if verdicts is not None else list(range(reader.num_row_groups))
    if not row_groups:
        return
    with _PREPARING_LOCK:
        if id(pipe) in _PREPARING:
            return  # (being set up on its own thread)
        _PREPARING[id(pipe)] = None
    try:
        names = list(dict.fromkeys(pipe.source.scan.column_names))
        router = PageRouter("auto", gpu=True, pipeline=key)
        shared = SharedScan(row_groups, link_bytes(reader, names, row_groups), len(names), router, "on",
                            gpu_pipeline=key)
        co = CoProcess(ctx, pipe, None, shared, reader, 1, key)
        ctx.__dict__["coprocesses"].remove(co)  # (no timeline: it runs no morsel)
        from hetdb.exec.coprocess_setup import builds_done, copy_builds

        gpu = builds_done() if getattr(ctx.backend, "name", "") == "gpu" else None
        copied = copy_builds(ctx, pipe, gpu)
        if isinstance(copied, str):
            _prepared(pipe)
            return  # (a later run may have the builds at hand)
        co.copied, co.tier, co.detached = copied, ctx.device.host_tier(ctx.options), True
    except Exception as e:  # noqa: BLE001 - the query ran on the GPU alone; only its CPU side is refused
        keep_setup(pipe, reader, CoSetup(None, refused=f"the CPU side's set-up failed: {e}", compiler_refused=True))
        _prepared(pipe)
        return
    if not PREPARE_IN_BACKGROUND:
        _set_up_apart(co, pipe, reader)
        return
    thread = threading.Thread(target=_set_up_apart, args=(co, pipe, reader), daemon=True,
                              name="hetdb-coprocess-setup")
    with _PREPARING_LOCK:
        _PREPARING[id(pipe)] = thread
    thread.start()


# the CPU side's set-up after a run that measured the GPU alone on a thread of its own (False: in the
# query, which then took 2.2-5.6 s more the first time: SSB SF 20 on the H100, s16)
PREPARE_IN_BACKGROUND = True
# the back share of a scan's row groups whose pages the background set-up decodes and keeps for the
# CPU workers (CoProcess.keep_decoded, within the workers' cache): their first co-processed runs then
# take their share in compiled calls. Without it those runs decoded the pages a row group at a time on
# the Python path (SSB SF 50 q1.1 on an H200, 14 workers: ~10 ms of GIL-held Python a row group, the
# runs 52-56 ms against 30 alone) and the outcome kept the pipeline on the GPU alone for good.
PREDECODE_SHARE = 0.4
# co-processed runs whose workers decoded pages to keep them, per pipeline, that no outcome counts
# (comodel.observe_outcome): the first runs after the set-up; past these every run counts
DECODING_RUNS_UNCOUNTED = 2
_DECODING_RUNS: dict[str, int] = {}
_PREPARING: dict[int, threading.Thread | None] = {}  # id(pipeline) -> its set-up's thread
_PREPARING_LOCK = threading.Lock()


def _prepared(pipe: Any) -> None:
    with _PREPARING_LOCK:
        _PREPARING.pop(id(pipe), None)


def _set_up_apart(co: CoProcess, pipe: Any, reader: Any) -> None:
    """``prepare_cpu_side``'s set-up and compile of ``co`` (detached from its query)."""
    from hetdb.exec.coprocess import _run_cleanup

    try:
        if co._set_up():
            co.warm_loop()
            rgs = co.shared.row_groups
            co.keep_decoded(rgs[::-1][:int(len(rgs) * PREDECODE_SHARE)])
    except Exception as e:  # noqa: BLE001 - the query ran on the GPU alone; only its CPU side is refused
        keep_setup(pipe, reader, CoSetup(None, refused=f"the CPU side's set-up failed: {e}", compiler_refused=True))
    finally:
        co.finished = True
        try:
            if co.crun is not None:
                co.crun.gsink.reservation.close()
            if co.cctx is not None:
                _run_cleanup(co.cctx.cleanup)
        finally:
            _prepared(pipe)


def wait_prepared(timeout: float = 120.0) -> bool:
    """Wait for the CPU sides being set up in the background (``prepare_cpu_side``); whether all
    were done in ``timeout`` seconds (scripts and tests that measure the runs after the first)."""
    deadline = time.perf_counter() + timeout
    while True:
        with _PREPARING_LOCK:
            threads = [t for t in _PREPARING.values() if t is not None]
        if not threads:
            return True
        for t in threads:
            t.join(max(0.0, deadline - time.perf_counter()))
        if time.perf_counter() >= deadline:
            with _PREPARING_LOCK:
                return not any(t is not None and t.is_alive() for t in _PREPARING.values())
