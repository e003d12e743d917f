"""Where a warm GPU scan's time goes: link ceiling, bytes moved, copy and kernel busy time per query.

    PYTHONPATH=src python scripts/warm_timeline.py DB [--suite ssb] [--queries q1.1,q3.4]
        [--runs 3] [--variant NAME:k=v,k=v ...] [--deliveries] [--vs-duckdb]

A warm run is a fresh connection whose pages are in the process's pinned host tier and nowhere on
the GPU (as ``hetdb bench --mode warm``). First the link's ceilings are measured on this machine:
one 256 MiB pinned host->device copy, and the same bytes as 1.25 MiB copies (the size of an SSB
page) queued back to back. Then per query and variant (interleaved, same process, so A/B is fair):
one untimed run (loads the host tier, compiles), ``--runs`` timed runs (median exec ms, host->device
bytes, GB/s of exec time), and one instrumented run: CUDA events around every delivery's queued
copies (on the copy stream) and every fused-kernel consumption (on the consumer stream), giving

    first   ms from the query's start to the first copy starting on the GPU
    window  ms from the first copy's start to the last kernel's end (the scan itself)
    copy    ms the copy stream was busy, and GB/s while busy (the DMA's own rate)
    idle    ms the copy stream sat idle inside the window (the link unused)
    kern    ms of kernel intervals (each from its delivery being ready, copied and decoded, to its end)
    host    ms of Python per delivery between consecutive deliveries' copy submissions (median),
            against the GPU's copy ms per delivery (median): host > copy means the host is the bound
    link%   scan bytes / window against the measured ceiling

before them, what follows the last copy: its decode kernels' end (``decoded``, when they run on a stream of
their own), the last kernel's end and the query's (host clock, after ``arrow()``), in ms after the last
copy's end; and on the host: each pipeline's start-end in ms after ``con.sql`` (and the early start of the
fact scan, exec/early_scan.py, with the MiB its first deliveries hold), the operators' own timers
(op id: ms), the early scans started / taken over, and host timers (``timed``: calls, ms, span in ms after
``con.sql``) of the compiled (dimension) pipelines, of what a fused pipeline does before its first launch
(its plan, dense join tables, compacted keys, dimensions planned on the host, its look for resident
pages) and of what runs after the pipelines (the result table, the scans' close, the leak
check and its gc collections, the statistics).

Variants are connection options (``hetdb bench --set`` syntax), e.g.
``--variant base: --variant ahead:gpu_deliver_ahead=1``, and three switches of this script: ``upload=0``
(small uploads as copies: backend/gpu/upload.py mode "off"), ``factfirst=0`` (exec/early_scan.py FACT_FIRST off),
``hot=1`` (hot runs on one connection, e.g. under a ``gpu_memory_limit``, instead of warm ones),
``aheadpaged=0`` (backend/gpu/stream_batch.py AHEAD_PAGED off), ``split=K`` (with gpu_coprocess=auto: the
back K row groups of the fact scan reserved for the CPU workers, exec/coprocess_plan.FORCED_SPLIT), ``first=1`` (its workers start once the fact scan's first delivery is
queued: coprocess_plan.WORKERS_AFTER "first"), ``after=fact|queued|first`` (WORKERS_AFTER; absent: its default).
``--deliveries`` adds one line per fact delivery of the instrumented run (rows, MB, host submit ms,
copy and kernel GPU ms from the query's start); ``--vs-duckdb`` checks every variant's answer.
Module switches (ints; absent: the module's default): ``factfirst=0|1`` (exec/early_scan.py FACT_FIRST),
``scatter=0`` (codegen/dense_tables.SCATTER_ON_DEVICE off: a host-built dense table uploaded whole),
``samestream=1`` (early_scan.DIMS_ON_FACT_STREAMS: the early dimension scans on the fact scan's streams),
``planhost=N`` (exec/fusion_host.HOST_PLAN_ROWS: a fused plan's dense tables, compacted keys and probe forms of
dimensions of at most N build rows made on the host; 0: by the earlier limits),
``smalltail=0`` (exec/small_tail.WARM_DIRECT off: a run that is no replay sorts and collects its result
through the pipeline driver); delivery
sizes of primed scans: ``tail=N`` (stream_batch.TAIL_RAMP: the last N deliveries halve down; 0: as
large as the others), ``primedramp=N`` (stream_batch.PRIMED_RAMP: the first N ramp up from the target halved N
times; 3: as before 1c5bd3f; 1: session 17's); ``closeconsumed=0`` (operators/scan_device.CLOSE_CONSUMED off: a fused
pipeline's scan closed at the query's end); a delivery's copies (backend/gpu/copies.py): ``copysort=0`` (in the
plan's order, not by host address: SORTED), ``copybatch=0`` (one cudaMemcpyAsync each, not one cuMemcpyBatchAsync:
BATCH_CALL); ``warmgroups=0`` (backend/gpu/stream.py WARM_GROUPS off: a warm group's pages made and read one by
one), ``keepcopies=0`` (backend/gpu/batch.py KEEP_COPIES off: a delivery's copies made again every time);
``lazypaged=0`` (stream_batch.LAZY_PAGED off: a warm paged delivery makes a Column per page at once);
``pageddecoded=1`` (stream_batch.PAGED_DECODED: a scan past the device cache with every column decoded on arrival
delivers paged all the same); ``firstdeliveries=N``: the fact scan's first N deliveries
queued before the dimension scans (early_scan.FIRST_DELIVERIES); ``tierblock=KiB``: the pinned host tier made with blocks of that size (a change drops its pages: the
variant's untimed run loads them again; cache/host_cache.py DEFAULT_BLOCK_BYTES otherwise). A delivery line also has its decode kernels' end (``decoded``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from scripts_common import parse_options

import hetdb
from hetdb.bench.suites import load_queries


def link_ceiling() -> tuple[float, float]:
    """(GB/s of one 256 MiB pinned copy, GB/s of the same bytes as 1.25 MiB copies), best of 5."""
    import cupy

    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    n = 256 << 20
    host = pinned_empty(n, "uint8")
    host[:] = 1
    dev = cupy.empty(n, dtype=cupy.uint8)
    stream = new_stream()
    rt = cupy.cuda.runtime
    piece = 1_310_720
    out = []
    for chunked in (False, True):
        best = 0.0
        for _ in range(5):
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record(stream)
            if chunked:
                for off in range(0, n, piece):
                    rt.memcpyAsync(dev.data.ptr + off, host.ctypes.data + off, min(piece, n - off), 1, stream.ptr)
            else:
                rt.memcpyAsync(dev.data.ptr, host.ctypes.data, n, 1, stream.ptr)
            e1.record(stream)
            e1.synchronize()
            best = max(best, n / (cupy.cuda.get_elapsed_time(e0, e1) / 1e3) / 1e9)
        out.append(best)
    return out[0], out[1]


class Timeline:
    """CUDA events around deliveries (copy stream) and fused consumptions (consumer stream)."""

    def __init__(self) -> None:
        import cupy

        from hetdb.backend.gpu import batch
        from hetdb.exec import early_scan, engine, fusion_run

        self.cupy = cupy
        self.copies: list[tuple] = []   # (event start, event end, bytes, host t submit)
        self.kernels: list[tuple] = []  # (event start, event end)
        self.phases: list[tuple] = []   # (what, host t start, host t end): pipelines, the early scan's start
        self.on = False
        self.resident: list[tuple] = []  # (event start, event end, host t): launches over cached pages
        orig_delivery, orig_consume = batch.run_delivery, fusion_run._consume_fused
        orig_resident = fusion_run._consume_resident
        orig_pipeline, orig_early = engine.run_pipeline, early_scan.start_early_scans

        def run_pipeline(ctx, pipe, pool, threads):
            if not self.on:
                return orig_pipeline(ctx, pipe, pool, threads)
            t = time.perf_counter()
            try:
                return orig_pipeline(ctx, pipe, pool, threads)
            finally:
                src = getattr(getattr(pipe.source, "scan", None), "table", None) or type(pipe.source).__name__
                self.phases.append((f"p{pipe.pid}:{src}", t, time.perf_counter()))

        def start_early(ctx, physical, skipped=frozenset()):
            if not self.on:
                return orig_early(ctx, physical, skipped)
            t = time.perf_counter()
            try:
                return orig_early(ctx, physical, skipped)
            finally:
                held = sum(e.primed_bytes for e in ctx.early_scans.values())
                self.phases.append((f"early({held >> 20} MiB)", t, time.perf_counter()))

        def run_delivery(plan, sources, dtypes, stream, staged=None, **kw):
            if not self.on:
                return orig_delivery(plan, sources, dtypes, stream, staged, **kw)
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            t = time.perf_counter()
            e0.record(stream)
            out = orig_delivery(plan, sources, dtypes, stream, staged, **kw)
            e1.record(stream)
            # the decode kernels' end on their own stream (None: none launched, or on the copy stream)
            apart = kw.get("launch_stream")
            e2 = None
            if apart is not None and (plan.decode or plan.unpack or plan.rebase):
                e2 = cupy.cuda.Event()
                e2.record(apart)
            names = frozenset(cp.name for cp in plan.columns) | frozenset(col[0].name for col in plan.pages if col)
            self.copies.append((e0, e1, sum(c[3] for c in plan.copies), t, names, plan.rows, e2))
            return out

        def consume(fp, state, batches, tables):
            if not self.on:
                return orig_consume(fp, state, batches, tables)
            s = cupy.cuda.get_current_stream()
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            t = time.perf_counter()
            e0.record(s)
            orig_consume(fp, state, batches, tables)
            e1.record(s)
            self.kernels.append((e0, e1, t))

        def resident(fp, state, table, tables):
            if not self.on:
                return orig_resident(fp, state, table, tables)
            s = cupy.cuda.get_current_stream()
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            t = time.perf_counter()
            e0.record(s)
            orig_resident(fp, state, table, tables)
            e1.record(s)
            self.resident.append((e0, e1, t, table.num_rows))

        batch.run_delivery = run_delivery
        fusion_run._consume_fused = consume
        fusion_run._consume_resident = resident
        engine.run_pipeline = run_pipeline
        early_scan.start_early_scans = start_early
        self._time_tail()
        self._time_uploads()

    def _time_uploads(self) -> None:
        """CUDA events around the small uploads made while ``on`` (backend/gpu/upload.py ``to_device``, a
        page table's ``upload_pinned``): ``self.uploads`` (start, end, bytes, by kernel, host t)."""
        import cupy

        from hetdb.backend.gpu import upload
        from hetdb.backend.gpu.codegen import runtime

        self.uploads: list[tuple] = []
        orig_to, orig_pinned = upload.to_device, runtime.upload_pinned

        def to_device(arrays):
            if not self.on:
                return orig_to(arrays)
            s = cupy.cuda.get_current_stream()
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            nbytes = sum(int(getattr(a, "nbytes", 0)) for a in arrays)
            kernel = upload.by_kernel(max(8, -(-nbytes // 8) * 8))
            t = time.perf_counter()
            e0.record(s)
            out = orig_to(arrays)
            e1.record(s)
            self.uploads.append((e0, e1, nbytes, kernel, t))
            return out

        def upload_pinned(staging, stream=None):
            if not self.on:
                return orig_pinned(staging, stream)
            s = stream or cupy.cuda.get_current_stream()
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            kernel = upload.by_kernel(int(staging.nbytes))
            t = time.perf_counter()
            e0.record(s)
            out = orig_pinned(staging, stream)
            e1.record(s)
            self.uploads.append((e0, e1, int(staging.nbytes), kernel, t))
            return out

        upload.to_device = to_device
        runtime.upload_pinned = upload_pinned

    def _time_tail(self) -> None:
        """Host intervals of what runs after the pipelines (the result table, the scans' closing, the
        leak check and its collections, the statistics) while ``on``: ``self.tail`` (name, start, end)."""
        import gc

        from hetdb.backend.gpu.stream import PageStreamer
        from hetdb.exec import device, engine, fusion_reuse
        from hetdb.exec.operators.scan_device import DeviceScanState

        self.tail: list[tuple] = []

        def timed(name, fn):
            def wrapper(*a, **kw):
                if not self.on:
                    return fn(*a, **kw)
                t = time.perf_counter()
                try:
                    return fn(*a, **kw)
                finally:
                    self.tail.append((name, t, time.perf_counter()))
            return wrapper

        from hetdb.backend.gpu import codegen
        from hetdb.backend.gpu.codegen import groups
        from hetdb.exec import fusion

        # (and before a fused pipeline's first launch: its plan, the dense join tables, the compacted keys)
        fusion.plan_fusion = timed("plan_fusion", fusion.plan_fusion)
        codegen.dense_build = timed("dense_build", codegen.dense_build)
        groups.compact = timed("compact", groups.compact)
        from hetdb.backend.gpu.codegen import dense_tables
        from hetdb.exec import fusion_run

        # (dimensions planned on the host: their columns copied out together, each table, its forms)
        fusion.host_copies = timed("host_copies", fusion.host_copies)
        dense_tables.host_planned = timed("host_planned", dense_tables.host_planned)
        # (a fused scan's look for its pages in the device cache, before its first launch)
        fusion_run._run_resident = timed("resident", fusion_run._run_resident)
        from hetdb.exec import compiled

        compiled.run_compiled = timed("run_compiled", compiled.run_compiled)  # (the dimension pipelines)
        engine.to_arrow_table = timed("arrow", engine.to_arrow_table)
        engine.query_stats = timed("stats", engine.query_stats)
        fusion_reuse.release_reuse = timed("release_reuse", fusion_reuse.release_reuse)
        device.DeviceResources.leaked_bytes = timed("leak_check", device.DeviceResources.leaked_bytes)
        DeviceScanState.close = timed("scan_close", DeviceScanState.close)
        PageStreamer._release_scan = timed("release_scan", PageStreamer._release_scan)
        orig_gc = gc.collect
        gc.collect = timed("gc", orig_gc)

    def run(self, con, sql: str, ceiling: float, deliveries: bool = False) -> str:
        from hetdb.backend.gpu.stream import copy_stream

        cupy = self.cupy
        self.copies, self.kernels, self.phases, self.resident = [], [], [], []
        cupy.cuda.Device().synchronize()
        anchor = cupy.cuda.Event()
        anchor.record(copy_stream(cupy.cuda.Device().id))
        self.tail, self.uploads = [], []
        self.on = True
        t0 = time.perf_counter()
        try:
            r = con.sql(sql)
            r.arrow()
        finally:
            self.on = False
            t_end = time.perf_counter()
        cupy.cuda.Device().synchronize()
        host = " ".join(f"{w} {(a - t0) * 1e3:.1f}-{(b - t0) * 1e3:.1f}" for w, a, b in sorted(self.phases, key=lambda p: p[1]))
        host = f" | host ms: {host} end {(t_end - t0) * 1e3:.1f}"
        if self.tail:  # after the pipelines: per name calls, total ms, first start - last end (ms after con.sql)
            per: dict[str, list] = {}
            for name, a, b in self.tail:
                got = per.setdefault(name, [0, 0.0, a, b])
                got[0] += 1
                got[1] += b - a
                got[2], got[3] = min(got[2], a), max(got[3], b)
            host += " | timed: " + " ".join(f"{n} x{c} {tot * 1e3:.2f}ms@{(a - t0) * 1e3:.1f}-{(b - t0) * 1e3:.1f}"
                                           for n, (c, tot, a, b) in sorted(per.items(), key=lambda kv: kv[1][2]))
        if self.uploads:  # the small uploads: count, by kernel, bytes; the slowest on the GPU (its stream's
            # interval, queued work before it included) with its host time
            def gpu_ms(u) -> float:
                return cupy.cuda.get_elapsed_time(u[0], u[1])

            slow = max(self.uploads, key=gpu_ms)
            host += (f" | uploads: {len(self.uploads)} ({sum(1 for u in self.uploads if u[3])} by kernel) "
                     f"{sum(u[2] for u in self.uploads):,} B, GPU ms sum {sum(gpu_ms(u) for u in self.uploads):.2f}, "
                     f"slowest {slow[2]:,} B {gpu_ms(slow):.2f} ms at host {(slow[4] - t0) * 1e3:.1f}"
                     f" ({'kernel' if slow[3] else 'copy'})")
        ops = (r.stats or {}).get("operators") or {}
        timed = [(k, getattr(v, "seconds", 0.0)) for k, v in ops.items() if getattr(v, "seconds", 0.0) >= 5e-5]
        if timed:  # the operators' own timers (scans: the streamer's host work; sinks: kernels, builds)
            host += " | op ms: " + " ".join(f"{k}:{sec * 1e3:.2f}" for k, sec in timed)
        early = (r.stats or {}).get("early_scans")
        if early and early.get("started"):
            host += f" | early scans {early}"
        from coprocess_warm_table import _timeline

        co = _timeline(dict(r.stats or {}))
        if co:  # co-processed: the CPU workers' morsels, the feeder's scan loop (ms from the query's start)
            host += f" | co: {co}"
            if deliveries:
                for c in (r.stats or {}).get("coprocess") or []:
                    host += "\n    cpu morsels (start-end ms, row groups): " + " ".join(
                        f"{m[0]:.1f}-{m[1]:.1f}({m[2]})" for m in c.get("morsels") or [])
        cached = "".join(f" | launch over cached pages: {x[3] / 1e6:.1f}M rows, kernel "
                         f"{cupy.cuda.get_elapsed_time(anchor, x[0]):.2f}-{cupy.cuda.get_elapsed_time(anchor, x[1]):.2f} "
                         f"(host {(x[2] - t0) * 1e3:.2f})" for x in self.resident)
        host += cached
        if not self.copies:
            return "no deliveries (nothing streamed: resident pages, or a path this probe does not see)" + host

        def ms(a, b) -> float:
            return cupy.cuda.get_elapsed_time(a, b)

        # the fact scan: the column set that moved the most bytes (the dimensions' scans come first)
        by_cols: dict = {}
        for c in self.copies:
            by_cols[c[4]] = by_cols.get(c[4], 0) + c[2]
        fact = max(by_cols, key=by_cols.get)
        dims = [c for c in self.copies if c[4] != fact]
        dim_line = ""
        if dims:
            dim_line = (f"dims: {len(dims)} deliveries {sum(c[2] for c in dims):,} B ending at "
                        f"{max(ms(anchor, c[1]) for c in dims):.2f} ms | ")
        self.copies = [c for c in self.copies if c[4] == fact]

        starts = [ms(anchor, c[0]) for c in self.copies]
        ends = [ms(anchor, c[1]) for c in self.copies]
        kends = [ms(anchor, k[1]) for k in self.kernels] or [ends[-1]]
        kern = sum(ms(k[0], k[1]) for k in self.kernels)
        nbytes = sum(c[2] for c in self.copies)
        copy_busy = sum(e - s for s, e in zip(starts, ends))
        window = max(max(kends), ends[-1]) - starts[0]
        idle = sum(max(0.0, starts[i + 1] - ends[i]) for i in range(len(starts) - 1))
        host_gaps = [(self.copies[i + 1][3] - self.copies[i][3]) * 1e3 for i in range(len(self.copies) - 1)]
        gpu_copy = [e - s for s, e in zip(starts, ends)]
        gbs = nbytes / (window / 1e3) / 1e9 if window > 0 else 0.0
        per = ""
        if deliveries:  # one line per fact delivery: host submit, copy and kernel intervals (GPU ms)
            lines = []
            for i, c in enumerate(self.copies):
                k = self.kernels[i] if i < len(self.kernels) and len(self.kernels) == len(self.copies) else None
                kline = (f" kernel {ms(anchor, k[0]):.2f}-{ms(anchor, k[1]):.2f} (host {(k[2] - t0) * 1e3:.2f})"
                        if k is not None else "")
                if c[6] is not None:  # (the decode kernels' end on their stream; they wait for the copies)
                    kline = f" decoded {ms(anchor, c[6]):.2f}" + kline
                lines.append(f"    d{i}: {c[5] / 1e6:.1f}M rows {c[2] / 1e6:.1f} MB submit {(c[3] - t0) * 1e3:.2f} "
                             f"copy {starts[i]:.2f}-{ends[i]:.2f} ({c[2] / max(ends[i] - starts[i], 1e-9) / 1e6:.1f} GB/s)"
                             + kline)
            per = "\n" + "\n".join(lines)
        # what follows the last copy on the GPU: its decode (when on a stream of its own) and the last kernel
        last = self.copies[-1]
        decoded = f"decoded +{ms(last[1], last[6]):.2f} " if last[6] is not None else ""
        after = (f"after last copy: {decoded}kernel end +{max(kends) - ends[-1]:.2f} "
                 f"query end +{(t_end - t0) * 1e3 - ends[-1]:.2f} (host clock) | ")
        return (f"{dim_line}{after}fact: deliveries {len(self.copies)} bytes {nbytes:,} first {starts[0]:.2f} window {window:.2f} "
                f"copy {copy_busy:.2f} ({nbytes / max(copy_busy, 1e-9) / 1e6:.1f} GB/s) idle {idle:.2f} "
                f"kern {kern:.2f} host/delivery {statistics.median(host_gaps) if host_gaps else 0:.2f} "
                f"gpu-copy/delivery {statistics.median(gpu_copy):.2f} scan {gbs:.1f} GB/s "
                f"link {100 * gbs / ceiling:.0f}%{host}{per}")


def profiled(db: str, sql: str, opts: dict, runs: int, top: int = 40) -> str:
    """``runs`` warm runs (fresh connections) under cProfile: the functions with the most own time
    and the most calls, per run."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    for _ in range(runs):
        con = hetdb.connect(db, device="gpu", create=False, **opts)
        prof.enable()
        con.sql(sql).arrow()
        prof.disable()
        con.close()
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    return f"  cProfile over {runs} runs (divide by {runs} for one):\n" + "\n".join("  " + ln for ln in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default=None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sample", type=int, default=0,
                    help="N more warm runs of each query and variant under a wall-clock stack sampler "
                         "(gpu_hot_probe.Sampler, every 0.5 ms): where the host's time goes")
    ap.add_argument("--cprofile", type=int, default=0,
                    help="N more warm runs of each query (first variant) under cProfile: calls and "
                         "host time by function (what syncs and launches a query makes)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:k=v,k=v connection options of one variant (repeatable; default one 'base'); "
                         "upload=0: small uploads as copies (backend/gpu/upload.py mode 'off'); factfirst=0: the dimension "
                         "scans primed before the fact scan's first delivery (exec/early_scan.py FACT_FIRST=False); hot=1: "
                         "hot runs on one connection (two untimed runs first) instead of warm ones; aheadpaged=0: "
                         "paged scans beside the device cache deliver nothing ahead (stream_batch.AHEAD_PAGED); aligned=0: "
                         "paged deliveries ask the device cache to admit page by page, not a row group's "
                         "missing pages together (cache/admission.ALIGNED_ADMISSION); splitramp=N: the streamed part of a resident split ramps "
                         "its deliveries up in N steps (resident_split.STREAM_RAMP); splitchunk=N: rows per launch over its cached "
                         "row groups (resident_split.CHUNK_ROWS; 0: one launch); splitside=0: those launches on the consumer's "
                         "stream, between the deliveries' kernels (resident_split.SIDE_STREAM); earlyshare=X: an early fact scan primes up to X of the free device budget "
                         "(early_scan.EARLY_BUDGET_SHARE)")
    ap.add_argument("--vs-duckdb", action="store_true",
                    help="check each variant's answer (its last timed run) against DuckDB's, on the tables' columns "
                         "the queries name, loaded through a CPU connection")
    ap.add_argument("--deliveries", action="store_true",
                    help="one line per fact delivery of the instrumented run: host submit ms, copy and kernel "
                         "GPU ms (from the query's start)")
    args = ap.parse_args()
    from hetdb.backend.gpu import batch as gpu_batch
    from hetdb.backend.gpu import copies as gpu_copies
    from hetdb.backend.gpu import stream as gpu_stream
    from hetdb.backend.gpu import stream_batch as batches
    from hetdb.backend.gpu.codegen import dense_tables
    from hetdb.exec import early_scan as early

    # module switches per variant, as ints (absent: the module's default): primed scans' delivery sizes
    # (stream_batch.TAIL_RAMP, PRIMED_RAMP), a fused pipeline's scan closed once consumed
    # (scan_device.CLOSE_CONSUMED), the fact's first delivery before the dimension scans
    # (early_scan.FACT_FIRST), host-built dense tables filled on the device (dense_tables.SCATTER_ON_DEVICE),
    # the early dimension scans on the fact's streams (early_scan.DIMS_ON_FACT_STREAMS), dimensions of
    # at most this many build rows planned on the host (fusion_host.HOST_PLAN_ROWS; 0: as before session 19)
    from hetdb.exec import fusion_host, small_tail
    from hetdb.exec.operators import scan_device

    knobs = {"tail": (batches, "TAIL_RAMP"), "primedramp": (batches, "PRIMED_RAMP"),
             "closeconsumed": (scan_device, "CLOSE_CONSUMED"), "factfirst": (early, "FACT_FIRST"),
             "warmgroups": (gpu_stream, "WARM_GROUPS"), "keepcopies": (gpu_batch, "KEEP_COPIES"),
             "scatter": (dense_tables, "SCATTER_ON_DEVICE"), "samestream": (early, "DIMS_ON_FACT_STREAMS"),
             "copysort": (gpu_copies, "SORTED"), "copybatch": (gpu_copies, "BATCH_CALL"),
             "firstdeliveries": (early, "FIRST_DELIVERIES"), "planhost": (fusion_host, "HOST_PLAN_ROWS"),
             "smalltail": (small_tail, "WARM_DIRECT"), "pageddecoded": (batches, "PAGED_DECODED"),
             "lazypaged": (batches, "LAZY_PAGED")}
    ramps_default = {k: int(getattr(mod, attr)) for k, (mod, attr) in knobs.items()}
    ramps: dict[str, dict] = {}
    variants = []
    for v in args.variant or ["base:"]:
        name, _, opts = v.partition(":")
        items = [o for o in opts.split(",") if o]
        ramps[name] = {key: int(val) for key, _, val in (o.partition("=") for o in items) if key in ramps_default}
        items = [o for o in items if o.partition("=")[0] not in ramps_default]
        switches = {"upload": "upload=0" not in items, "factfirst": "factfirst=0" not in items,
                    "hot": "hot=1" in items, "aheadpaged": "aheadpaged=0" not in items,
                    "first": "first=1" in items,
                    "after": next((o.split("=")[1] for o in items if o.startswith("after=")),
                                  "first" if "first=1" in items else None),
                    "split": next((int(o.split("=")[1]) for o in items if o.startswith("split=")), None),
                    "aligned": "aligned=0" not in items,
                    "splitramp": next((int(o.split("=")[1]) for o in items if o.startswith("splitramp=")), -1),
                    "splitchunk": next((int(o.split("=")[1]) for o in items if o.startswith("splitchunk=")), -1),
                    "splitside": "splitside=0" not in items,
                    "earlyshare": next((float(o.split("=")[1]) for o in items if o.startswith("earlyshare=")), None),
                    "tierblock": next((int(o.split("=")[1]) for o in items if o.startswith("tierblock=")), 0)}
        variants.append((name, parse_options([o for o in items if o.split("=")[0] not in switches]), switches))
    whole, chunked = link_ceiling()
    print(f"link: pinned H2D {whole:.1f} GB/s one 256 MiB copy, {chunked:.1f} GB/s as 1.25 MiB copies", flush=True)
    tl = Timeline()
    qs = load_queries(args.suite, args.queries.split(",") if args.queries else None)
    medians: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    from types import SimpleNamespace

    from hetdb.backend.gpu import stream_batch, upload
    from hetdb.cache import admission, host_cache
    from hetdb.exec import coprocess_plan, early_scan

    def cut(*_: object) -> None:  # (``timeout`` cut the run: the summary of the queries done)
        print(summary(medians), flush=True)
        sys.stdout.flush()
        os._exit(124)  # (no interpreter teardown: streams, pools and CUDA state are left to the OS)

    import signal

    signal.signal(signal.SIGTERM, cut)
    duck = load_duckdb(args.db, args.suite, qs) if args.vs_duckdb else None
    default_share = early_scan.EARLY_BUDGET_SHARE
    default_after = coprocess_plan.WORKERS_AFTER
    from hetdb.exec import resident_split

    default_ramp, default_chunk = resident_split.STREAM_RAMP, resident_split.CHUNK_ROWS
    for q in qs:
        expected = duck.sql(q.sql).to_arrow_table() if duck is not None else None
        for name, opts, switches in variants:
            for key, (mod, attr) in knobs.items():
                setattr(mod, attr, type(getattr(mod, attr))(ramps[name].get(key, ramps_default[key])))
            upload.mode = "auto" if switches["upload"] else "off"
            early_scan.FACT_FIRST = bool(ramps[name].get("factfirst", ramps_default["factfirst"]))
            stream_batch.AHEAD_PAGED = switches["aheadpaged"]
            coprocess_plan.WORKERS_AFTER = switches["after"] or default_after
            coprocess_plan.FORCED_SPLIT = None if switches["split"] is None else (
                coprocess_plan.cpu_workers(SimpleNamespace(options=SimpleNamespace(threads=opts.get("threads", os.cpu_count())))),
                switches["split"])
            admission.ALIGNED_ADMISSION = switches["aligned"]
            resident_split.STREAM_RAMP = default_ramp if switches["splitramp"] < 0 else switches["splitramp"]
            resident_split.CHUNK_ROWS = default_chunk if switches["splitchunk"] < 0 else switches["splitchunk"]
            resident_split.SIDE_STREAM = switches["splitside"]
            early_scan.EARLY_BUDGET_SHARE = switches["earlyshare"] or default_share
            use_tier_blocks(switches["tierblock"] << 10 or host_cache.DEFAULT_BLOCK_BYTES)
            con = hetdb.connect(args.db, device="gpu", create=False, **opts)
            con.sql(q.sql).arrow()  # host tier loaded, kernels compiled
            con.close()
            coprocess_plan.wait_prepared()  # (co-processing's CPU side, set up on a thread of its own)
            execs, h2d = [], 0
            hot = hetdb.connect(args.db, device="gpu", create=False, **opts) if switches["hot"] else None
            if hot is not None:  # (hot: one connection; its cache filled as far as the budget lets it)
                for _ in range(2):
                    hot.sql(q.sql).arrow()
            for _ in range(args.runs):
                con = hot or hetdb.connect(args.db, device="gpu", create=False, **opts)
                r = con.sql(q.sql)
                got = r.arrow()
                st = dict(r.stats or {})
                if hot is None:
                    con.close()
                execs.append(st.get("exec_seconds", 0.0))
                h2d = st.get("bytes_host_to_device", 0)
                routes = st.get("routes") or {}
                tier = (f" | device cache: {st.get('pages_cached', 0)} pages resident, admitted {routes.get('admitted', 0)} "
                        f"evicted {routes.get('evicted', 0)} bypassed {routes.get('bypassed', 0)}, "
                        f"{routes.get('deliveries', 0)} deliveries")
            ex = statistics.median(execs)
            medians[name].append(ex)
            con = hot or hetdb.connect(args.db, device="gpu", create=False, **opts)
            try:
                line = tl.run(con, q.sql, whole, args.deliveries)
            except Exception as e:  # noqa: BLE001 - a probe reports and goes on
                line = f"timeline failed: {type(e).__name__}: {e}"
            con.close()
            sampled = ""
            if args.sample:
                import threading

                from gpu_hot_probe import Sampler

                sampler = Sampler(0.0005)
                sampler.target = threading.get_ident()
                wall = 0.0
                for _ in range(args.sample):
                    con = hetdb.connect(args.db, device="gpu", create=False, **opts)
                    t = time.perf_counter()
                    sampler.active = True
                    con.sql(q.sql).arrow()
                    sampler.active = False
                    wall += time.perf_counter() - t
                    con.close()
                sampler._stop = True
                sampled = "\n" + sampler.report(args.sample, wall, top=18)
            if args.cprofile and name == variants[0][0]:
                sampled += "\n" + profiled(args.db, q.sql, opts, args.cprofile)
            answer = ""
            if duck is not None:
                answer = " " + check_answer(duck, q, got, expected)
            print(f"{q.name} {name}: exec {ex * 1e3:.1f} ms (runs {' '.join(f'{e * 1e3:.1f}' for e in execs)}) "
                  f"h2d {h2d:,} = {h2d / max(ex, 1e-9) / 1e9:.1f} GB/s of exec = {100 * h2d / max(ex, 1e-9) / 1e9 / whole:.0f}% "
                  f"of the link{answer}{tier} | {line}{sampled}", flush=True)
    print(summary(medians), flush=True)


def use_tier_blocks(block_bytes: int) -> None:
    """The process's pinned host tier made again with blocks of ``block_bytes`` when its blocks differ
    (same limit; its pages are dropped: the variant's untimed run loads them again)."""
    from hetdb.cache import host_cache

    tier = host_cache.shared_host_cache()
    if tier is None or tier.block_bytes == block_bytes:
        return
    if not tier.release_memory():
        print(f"tierblock: the host tier holds pinned pages: blocks stay {tier.block_bytes}", flush=True)
        return
    host_cache._shared = host_cache.HostPageCache(tier.capacity_bytes, block_bytes=block_bytes)


def load_duckdb(db: str, suite: str, qs: list) -> object:
    """A DuckDB connection holding each table of ``suite`` with the columns ``qs`` name (SSB/TPC-H
    column names are unique to their tables), read through a CPU connection."""
    import duckdb
    from scripts_common import SUITE_TABLES

    t0 = time.perf_counter()
    text = " ".join(q.sql for q in qs).lower()
    duck = duckdb.connect()
    con = hetdb.connect(db, device="cpu", create=False)
    for t in SUITE_TABLES[suite]:
        if t not in text:
            continue
        cols = [c for c in con.sql(f'SELECT * FROM "{t}" LIMIT 0').arrow().column_names if c.lower() in text]
        duck.register("incoming", con.sql(f'SELECT {", ".join(cols)} FROM "{t}"').arrow())
        duck.execute(f'CREATE TABLE "{t}" AS SELECT * FROM incoming')
        duck.unregister("incoming")
    con.close()
    print(f"DuckDB {duckdb.__version__}: the queries' columns loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    return duck


def check_answer(duck: object, q: object, got: object, expected: object) -> str:
    """'answer ok', or 'ANSWER DIFFERS: ...' against DuckDB's (the bench's comparison)."""
    from hetdb.bench.compare import compare_tables
    from hetdb.bench.suites import float_tolerances, order_spec

    ordered, order_by = order_spec(q.sql)
    bad = compare_tables(got, expected, ordered, float_rel_tol=float_tolerances(q.sql, expected.num_columns),
                         order_by=order_by)
    return "answer ok" if bad is None else f"ANSWER DIFFERS: {bad[:200]}"


def summary(medians: dict[str, list[float]]) -> str:
    """Per variant: the geomean of the queries' median exec ms, and its ratio to the first variant's."""
    import math

    out = []
    base = None
    done = min((len(xs) for xs in medians.values()), default=0)  # (queries every variant ran)
    for name, xs in medians.items():
        xs = xs[:done]
        if not xs or min(xs) <= 0:
            continue
        g = math.exp(sum(math.log(x) for x in xs) / len(xs)) * 1e3
        base = base or g
        out.append(f"{name} {g:.2f} ms ({g / base:.3f}x)")
    return (f"geomean exec over the {done} queries every variant ran (same process, interleaved): "
            + ", ".join(out))


if __name__ == "__main__":
    sys.exit(main())
