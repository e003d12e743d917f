"""Where a hot GPU query's milliseconds go: the device's kernels against the host between them.

    PYTHONPATH=src python scripts/gpu_hot_split.py DB [--suite ssb] [--queries q1.1,q2.1] [--runs 5]
        [--warmup 2] [--replays 20] [--profile q1.1,q2.1] [--variants q1.1] [--tiles 128x4,256x4]
        [--option k=v] [--experiment fused_block256] [--literals]

One connection; per query, after the first run (data into the device cache, kernel compiles) and
``--warmup`` untimed runs, ``--runs`` timed runs, each with: its wall time, the query thread's CPU
time, the device time of every kernel launched through ``backend/gpu/compile.launch`` (CUDA events
around each launch: the generated and the .cu kernels, not CuPy's own element-wise kernels), the
number of those launches and the engine's exec/plan times. Then the query's largest generated dense
kernel (``fused_*``) is replayed alone ``--replays`` times with the arguments of its last launch:
its own time, the device-cache bytes the query read per second of it, its registers and the blocks
per SM the occupancy API allows, and the same launch at other grid sizes (the kernels loop
grid-stride, so any grid computes the same); for the queries in ``--variants``, that kernel
regenerated at other block sizes and items per thread (its page table re-tiled). For the queries in ``--profile``: the median time per
top-level pipeline with the device synchronised after each (host work and its kernels together),
a cProfile of 3 runs (calls per run, top functions by own and cumulative time), a sampling profile of
100 runs (scripts/gpu_hot_probe.py's sampler: ms per run by innermost line and by function on the
stack) and EXPLAIN ANALYZE.

``--experiment NAME[,NAME...]`` measures each query again with each GPU compiler experiment on
(exec/compiled_features.EXPERIMENTS), right after the default, in the same process (the query text
gets a comment, so it is planned and fused anew); ``--experiment no_hot_replay``: again without the
hot replay (exec/hot_replay.py), every hot run through the pipeline driver; ``--experiment
no_direct_finish``: a replay without its direct paths (exec/hot_replay.DIRECT and TAIL,
exec/small_tail.py off): a new accumulator state and the launch's arguments worked out every time
(not the kept launch), the aggregation finalized through its global state, the host tail through
the driver (not its recipe, exec/hot_tail.py). ``--literals`` (SSB) runs each query also with
scripts/gpu_literal_kernels.py's other literal values: the CUDA modules that loaded (none when the
kernels are shared), then its hot wall and kernel times.

The last lines are a table: per query wall, kernels, replayed kernel and "host" = wall - kernels
(what no kernel of ours accounts for: Python, CuPy's small kernels, copies and waits), then per query
issue 10's check: its floor (the device-cache bytes it read / 2.52 TB/s), the limit 2 x floor +
0.2 ms, and whether the median hot wall time is within it. With ``--experiment`` the modes' timed
runs alternate run by run (the host's warming up over the runs weighs on each mode alike).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import pstats
import re
import statistics
import sys
import time
from typing import Any

from scripts_common import parse_options

import hetdb
from hetdb.bench.suites import load_queries


class LaunchTimes:
    """CUDA events around every launch of ``backend/gpu/compile.launch`` (patched wherever a module
    imported it by name); ``names`` maps functions to kernel names (CompiledModule.function)."""

    def __init__(self) -> None:
        import cupy

        from hetdb.backend.gpu import compile as C

        self.cupy = cupy
        self.names: dict[int, str] = {}
        self.pending: list[tuple[str, Any, Any]] = []
        self.calls: list[tuple[float, Any, Any]] = []  # (host time of the launch call, its start, stop events)
        # kernel name -> (fn, grid, block, args, shared) of its last launch while ``record``: not during the
        # timed runs (the arguments hold the launch's device arrays: the engine's leak check after a timed
        # query would find them and collect garbage, tens of milliseconds)
        self.last: dict[str, tuple] = {}
        self.record = False
        self.active = False
        real_launch, real_function = C.launch, C.CompiledModule.function
        probe = self

        def function(module: Any, name: str) -> Any:
            fn = real_function(module, name)
            probe.names[id(fn)] = name
            return fn

        def launch(fn: Any, grid: int, block: int, args: tuple, shared_mem: int = 0) -> None:
            if not probe.active:
                return real_launch(fn, grid, block, args, shared_mem)
            name = probe.names.get(id(fn), "?")
            t_call = time.perf_counter()
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            real_launch(fn, grid, block, args, shared_mem)
            stop.record()
            probe.pending.append((name, start, stop))
            probe.calls.append((t_call, start, stop))
            if probe.record:
                probe.last[name] = (fn, grid, block, args, shared_mem)

        C.CompiledModule.function = function
        C.launch = launch
        for mod in list(sys.modules.values()):
            if getattr(mod, "__name__", "").startswith("hetdb.") and getattr(mod, "launch", None) is real_launch:
                mod.launch = launch

    def begin(self) -> tuple[float, Any]:
        """A query's start: (host time, an event recorded on the idle stream at that time)."""
        self.calls.clear()
        ev = self.cupy.cuda.Event()
        ev.record()
        return time.perf_counter(), ev

    def split(self, begun: tuple[float, Any], end: float) -> tuple[float, float]:
        """(ms of host before the first launch, ms from the last kernel's end to ``end``) of the query
        started at ``begun`` (the device's clock aligned with the host's by the start event)."""
        if not self.calls:
            return float("nan"), float("nan")
        t0, ev = begun
        first_call = self.calls[0][0]
        last_stop = self.calls[-1][2]
        last_stop.synchronize()
        device_end = self.cupy.cuda.get_elapsed_time(ev, last_stop)  # ms after the start event
        return (first_call - t0) * 1e3, (end - t0) * 1e3 - device_end

    def take(self) -> tuple[float, int, dict[str, float]]:
        """(kernel ms, launches, ms by kernel name) since the last take (waits for the device)."""
        self.cupy.cuda.get_current_stream().synchronize()
        by: dict[str, float] = collections.Counter()
        for name, start, stop in self.pending:
            stop.synchronize()
            by[name] += self.cupy.cuda.get_elapsed_time(start, stop)
        n = len(self.pending)
        self.pending.clear()
        return sum(by.values()), n, dict(by)


def occupancy(fn: Any, block: int, shared: int) -> str:
    """Registers, local bytes and blocks per SM of ``fn`` (what this CuPy exposes of them)."""
    out = []
    for attr in ("num_regs", "local_size_bytes", "shared_size_bytes"):
        v = getattr(fn, attr, None)
        if v is not None:
            out.append(f"{attr}={v}")
    try:
        from cupy_backends.cuda.api import driver

        out.append(f"blocks/SM={driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, block, shared)}")
    except Exception as e:  # noqa: BLE001 - a probe reports what it cannot measure
        out.append(f"blocks/SM ? ({type(e).__name__})")
    return " ".join(out)


def replay(probe: LaunchTimes, launch: tuple, grid: int, times: int) -> float:
    """ms per launch of ``launch`` (fn, grid, block, args, shared) at ``grid``, ``times`` launches."""
    cupy = probe.cupy
    fn, _, block, args, shared = launch
    fn((grid,), (block,), args, shared_mem=shared)  # (one untimed: caches, clocks)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(times):
        fn((grid,), (block,), args, shared_mem=shared)
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / times


VARIANTS = ((128, 4, 0), (128, 4, 16), (128, 8, 0), (128, 16, 0), (256, 4, 0), (256, 8, 0))


def parse_tiles(text: str) -> tuple:
    """``--tiles`` "128x4,256x4/8": (threads, items per thread, min blocks per SM) per variant."""
    if not text:
        return VARIANTS
    out = []
    for part in text.split(","):
        shape, _, min_blocks = part.partition("/")
        threads, items = shape.split("x")
        out.append((int(threads), int(items), int(min_blocks or 0)))
    return tuple(out)


def tile_variants(probe: LaunchTimes, name: str, launch: tuple, times: int, variants: tuple = VARIANTS) -> str:
    """The fused kernel ``name`` regenerated at other block sizes and items per thread (its page table
    re-tiled), each launched with the last launch's other arguments: ms per launch."""
    import cupy
    import numpy as np

    from hetdb.backend.gpu.codegen import runtime as R

    pipeline = next((p for p in R._PIPELINES.values() if p.kernel.name == name), None)
    if pipeline is None:
        return "    (kernel not found among the compiled pipelines)"
    fn, grid, block, args, shared = launch
    k = len(pipeline.spec.inputs)
    table_arg, num = args[k + 1], int(args[k + 2])
    host = cupy.asnumpy(table_arg)
    rows = host[2 * num + 1:3 * num + 1]
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    out = []
    for threads, items, min_blocks in variants:
        tile = threads * items
        body = pipeline.kernel.body
        # registers capped so that many blocks fit per SM (0: no cap)
        body = re.sub(r"__launch_bounds__\(FP_BLOCK(, \d+)?\)",
                      f"__launch_bounds__(FP_BLOCK{f', {min_blocks}' if min_blocks else ''})", body)
        body = re.sub(r"#define FP_BLOCK \d+", f"#define FP_BLOCK {threads}", body)
        body = re.sub(r"#define FP_ITEMS \d+", f"#define FP_ITEMS {items}", body)
        body = re.sub(r"#define FP_TILE \d+", f"#define FP_TILE {tile}", body)
        try:
            from hetdb.backend.gpu.compile import load_source

            mod = R.compile_source(load_source("fused_pipeline.cuh") + "\n" + body)
            vfn = mod.function(pipeline.kernel.name)
        except Exception as e:  # noqa: BLE001
            out.append(f"{threads}x{items}/{min_blocks}: compile failed ({type(e).__name__})")
            continue
        tiles = -(-rows // tile)
        table = host.copy()
        table[:num] = np.concatenate([[0], np.cumsum(tiles)[:-1]]) if num else []
        table[num] = int(tiles.sum())
        dev = cupy.asarray(table)
        vargs = list(args)
        vargs[k + 1], vargs[k + 3] = dev, np.int64(int(tiles.sum()))
        try:
            from cupy_backends.cuda.api import driver

            per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(vfn.ptr, threads, shared)
        except Exception:  # noqa: BLE001
            per_sm = 2048 // threads
        g = max(1, min(int(tiles.sum()), per_sm * sms)) if shared else min(int(tiles.sum()), 65536)
        ms = replay(probe, (vfn, g, threads, tuple(vargs), shared), g, times)
        out.append(f"{threads}x{items}/{min_blocks} grid {g} ({per_sm}/SM, {getattr(vfn, 'num_regs', '?')} regs, "
                   f"{getattr(vfn, 'local_size_bytes', '?')} B local): {ms:.3f}")
    return "    tile variants (threads x items / min blocks per SM): " + "; ".join(out)


def per_pipeline(con: Any, sql: str, runs: int) -> str:
    """Median ms per top-level pipeline, the device synchronised before and after each."""
    import cupy

    import hetdb.exec.engine as engine_mod

    real = engine_mod.run_pipeline
    times: dict[int, list[float]] = collections.defaultdict(list)
    what: dict[int, str] = {}

    def timed(ctx, pipe, *a, **k):
        cupy.cuda.get_current_stream().synchronize()
        t = time.perf_counter()
        try:
            return real(ctx, pipe, *a, **k)
        finally:
            cupy.cuda.get_current_stream().synchronize()
            times[pipe.pid].append(time.perf_counter() - t)
            st = ctx.stats.get(pipe.sink.op_id)
            what[pipe.pid] = f"{pipe.sink.describe()[:50]} | {(getattr(st, 'fused', '') or '')[:100]}"

    engine_mod.run_pipeline = timed
    walls = []
    try:
        for _ in range(runs):
            t = time.perf_counter()
            con.sql(sql).arrow()
            walls.append(time.perf_counter() - t)
    finally:
        engine_mod.run_pipeline = real
    wall = statistics.median(walls) * 1e3
    lines = [f"  per pipeline (synchronised), median of {runs} runs of {wall:.2f} ms:"]
    total = 0.0
    for pid in sorted(times):
        ms = statistics.median(times[pid]) * 1e3
        total += ms
        lines.append(f"    p{pid:<3} {ms:6.2f} ms  {what[pid]}")
    lines.append(f"    in no pipeline: {wall - total:.2f} ms")
    return "\n".join(lines)


def profiled(con: Any, sql: str, runs: int, top: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        con.sql(sql).arrow()
    prof.disable()
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumtime").print_stats(r"hetdb", top)  # (the phases: hetdb's functions by cumulative time)
    calls = sum(v[1] for v in st.stats.values()) / runs
    text = "\n".join(line for line in out.getvalue().splitlines() if line.strip())
    return f"  cProfile of {runs} runs: {calls:,.0f} Python calls per run\n{text}"


def sampled(con: Any, sql: str, runs: int, top: int) -> str:
    """``runs`` hot runs under scripts/gpu_hot_probe.py's sampling profiler (the query thread's stack
    every 0.25 ms: wall time by innermost line and by function on the stack, without cProfile's
    per-call overhead)."""
    import threading

    from gpu_hot_probe import Sampler

    sampler = Sampler(0.00025)
    sampler.target = threading.main_thread().ident
    sampler.active = True
    t = time.perf_counter()
    for _ in range(runs):
        con.sql(sql).arrow()
    wall = time.perf_counter() - t
    sampler.active = False
    sampler._stop = True
    return sampler.report(runs, wall, top)


FLOOR_BYTES_PER_S = 2.52e12  # the H100's device-memory read rate issue 10's floor is taken at


def floor_check(resident: int, wall_ms: float) -> str:
    """Issue 10's aim for a hot query: within 2x its device-memory floor (the device-cache bytes it
    references read at FLOOR_BYTES_PER_S) plus 0.2 ms."""
    if not resident:
        return "floor ? (no resident bytes)"
    floor = resident / FLOOR_BYTES_PER_S * 1e3
    limit = 2 * floor + 0.2
    return (f"floor {floor:.3f} ms ({resident / 1e6:.0f} MB / 2.52 TB/s), limit {limit:.3f} ms, wall {wall_ms:.3f} ms: "
            f"{'yes' if wall_ms <= limit else 'no'}")


class Timed:
    """The timed runs of one query text (one mode): their lines' numbers, kept for the medians."""

    def __init__(self, label: str, sql: str) -> None:
        self.label, self.sql = label, sql
        self.walls: list[float] = []
        self.kernels: list[float] = []
        self.pre: list[float] = []
        self.post: list[float] = []
        self.by: dict[str, float] = {}
        self.st: dict = {}

    def run(self, con: Any, probe: LaunchTimes, i: int) -> None:
        begun = probe.begin()
        t, tc = begun[0], time.thread_time()
        res = con.sql(self.sql)
        res.arrow()
        end = time.perf_counter()
        wall, cpu = end - t, time.thread_time() - tc
        before, after = probe.split(begun, end)
        self.pre.append(before)
        self.post.append(after)
        kms, n, self.by = probe.take()
        self.walls.append(wall * 1e3)
        self.kernels.append(kms)
        st = self.st = getattr(res, "stats", None) or {}
        top = ", ".join(f"{k[:22]} {v:.3f}" for k, v in sorted(self.by.items(), key=lambda kv: -kv[1])[:4])
        print(f"  {self.label} run {i}: wall {wall * 1e3:6.2f} ms  cpu {cpu * 1e3:6.2f}  exec "
              f"{st.get('exec_seconds', 0) * 1e3:6.2f}  plan {st.get('plan_seconds', 0) * 1e3:5.2f}  "
              f"kernels {kms:6.3f} ms in {n} launches ({top})  host before the first launch {before:.3f} ms, "
              f"after the last kernel's end {after:.3f} ms  modes {st.get('gpu_pipelines')}", flush=True)

    def resident(self) -> int:
        st = self.st
        return (st.get("routes") or {}).get("bytes", {}).get("gpu_resident", 0) if isinstance(
            st.get("routes"), dict) else 0

    def summary(self) -> None:
        print(f"  {self.label}: median host before the first launch {statistics.median(self.pre):.3f} ms, after the "
              f"last kernel {statistics.median(self.post):.3f} ms; {floor_check(self.resident(), statistics.median(self.walls))}",
              flush=True)


def prepare(con: Any, label: str, sql: str, warmup: int) -> None:
    """The first run (data into the device cache, kernels compile) and ``warmup`` untimed runs."""
    t = time.perf_counter()
    con.sql(sql).arrow()
    print(f"{label}: first run {(time.perf_counter() - t) * 1e3:.1f} ms", flush=True)
    for _ in range(warmup):
        con.sql(sql).arrow()


def measure(con: Any, probe: LaunchTimes, modes: list[tuple[str, str, Any]], args: Any, variants: bool,
            tiles: tuple) -> list[tuple[str, float, float, float | None]]:
    """Per mode ((label, query text, switch on), the default first): the first run and ``--warmup``
    runs, then ``--runs`` timed rounds with one run of each mode per round (interleaved: the host's
    warming up over the runs is the same for every mode; a line each), and the largest fused kernel
    of the last mode run replayed alone after each mode's summary: per mode (label, median wall ms,
    median kernels ms, replayed ms or None)."""
    timed = []
    for label, sql, switch in modes:
        switch()
        prepare(con, label, sql, args.warmup)
        timed.append(Timed(label, sql))
    probe.active = True
    probe.take()
    for i in range(args.runs):
        for (_, _, switch), t in zip(modes, timed):
            switch()
            t.run(con, probe, i)
    # the launches the kernel replays below take: one more (untimed) run of each mode, recorded
    probe.record = True
    for _, sql, switch in modes:
        switch()
        con.sql(sql).arrow()
    probe.take()
    probe.record = probe.active = False
    out = []
    for t in timed:
        t.summary()
        out.append((t.label, statistics.median(t.walls), statistics.median(t.kernels), t.resident()))
    modes[0][2]()
    own = None
    fused = {k: v for k, v in probe.last.items() if k.startswith("fused_")}
    if fused:
        by = timed[-1].by
        name = max(fused, key=lambda k: by.get(k, 0.0))
        launch = fused[name]
        fn, grid, block, _, shared = launch
        own = replay(probe, launch, grid, args.replays)
        resident = timed[0].resident()
        rate = f"{resident / own / 1e6:.0f} GB/s of {resident / 1e6:.0f} MB resident" if resident and own else ""
        print(f"  {name} alone: {own:.3f} ms at grid {grid} x {block} (shared {shared} B) {rate}; "
              f"{occupancy(fn, block, shared)}", flush=True)
        grids = sorted({132, 264, 528, 1056, 2112, 4224, 8448, 65536} - {grid})
        print("    other grids: " + ", ".join(f"{g}: {replay(probe, launch, g, max(3, args.replays // 4)):.3f}"
                                              for g in grids), flush=True)
        if variants:
            print(tile_variants(probe, name, launch, max(3, args.replays // 4), tiles), flush=True)
    probe.last.clear()
    return [(label, w, k, own, resident) for label, w, k, resident in out]


def literal_runs(con: Any, probe: LaunchTimes, name: str, sql: str, args: Any) -> str:
    """The query with other literal values (scripts/gpu_literal_kernels.py): its first run and the CUDA
    modules it loaded (compiled or from the disk cache: none when its kernels are the first set's),
    then ``--runs`` hot runs; the table's columns."""
    from hetdb.backend.gpu.compile import compile_counts

    before = sum(compile_counts().values())
    t = time.perf_counter()
    con.sql(sql).arrow()
    first = (time.perf_counter() - t) * 1e3
    modules = sum(compile_counts().values()) - before
    for _ in range(args.warmup):
        con.sql(sql).arrow()
    probe.active = True
    probe.take()
    walls, kernels = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        con.sql(sql).arrow()
        walls.append((time.perf_counter() - t) * 1e3)
        kernels.append(probe.take()[0])
    probe.active = False
    probe.last.clear()
    wall, kms = statistics.median(walls), statistics.median(kernels)
    print(f"  other literals: first run {first:.1f} ms, {modules} modules loaded; hot wall {wall:.2f} ms, "
          f"kernels {kms:.3f} ms", flush=True)
    return f"  | {modules:3d} {wall:9.2f} {kms:10.3f}"


_USABLE: list = []  # exec/hot_replay.usable while ``no_hot_replay`` replaces it


def _switch(experiment: str, on: bool) -> None:
    """Switch the GPU compiler's experiment (exec/compiled_features.EXPERIMENTS) on or off;
    ``no_hot_replay``: hot runs go through the pipeline driver (exec/hot_replay.py never replays; the
    option gpu_hot_replay=false would make a new engine, its device cache empty)."""
    if not experiment:
        return
    if experiment == "no_direct_finish":
        from hetdb.exec import hot_replay, small_tail

        small_tail.ENABLED[0] = hot_replay.DIRECT[0] = hot_replay.TAIL[0] = not on
        return
    if experiment == "no_hot_replay":
        from hetdb.exec import hot_replay

        if not _USABLE:
            _USABLE.append(hot_replay.usable)
        hot_replay.usable = (lambda *a, **k: False) if on else _USABLE[0]
        return
    from hetdb.exec import compiled_features

    if on:
        compiled_features.enabled.add(experiment)
    else:
        compiled_features.enabled.discard(experiment)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--profile", default="", help="queries to profile (per pipeline, cProfile, EXPLAIN ANALYZE)")
    ap.add_argument("--variants", default="", help="queries whose fused kernel is also regenerated at other "
                    "block sizes and items per thread (a compile each)")
    ap.add_argument("--tiles", default="", help="the tile variants of --variants: threads x items[/min blocks per "
                    "SM], comma-separated (default: " + ",".join(f"{a}x{b}/{c}" for a, b, c in VARIANTS) + ")")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--option", action="append", default=[], help="connection option name=value")
    ap.add_argument("--experiment", default="", help="GPU compiler experiments (exec/compiled_features), comma-"
                    "separated: each query measured with each of them on, run by run with the default (same process)")
    ap.add_argument("--literals", action="store_true", help="SSB: each query also with other literal values "
                    "(scripts/gpu_literal_kernels.py): modules it loads, hot times")
    args = ap.parse_args(argv)
    queries = load_queries(args.suite, [q for q in args.queries.split(",") if q] or None)
    profile = {q for q in args.profile.split(",") if q}
    variants = {q for q in args.variants.split(",") if q}
    tiles = parse_tiles(args.tiles)
    probe = LaunchTimes()
    rows = []
    experiments = [e for e in args.experiment.split(",") if e]
    modes = [""] + experiments

    def switch(mode: str) -> None:
        for e in experiments:
            _switch(e, e == mode)

    with hetdb.connect(args.db, device="gpu", **parse_options(args.option)) as con:
        for q in queries:
            # (a text of its own per experiment: a plan of its own, not the default's cached plan and fused state)
            measured = measure(con, probe, [(q.name + (f" +{m}" if m else ""), f"/* {m} */ {q.sql}" if m else q.sql,
                                             lambda m=m: switch(m))
                                            for m in modes], args, q.name in variants, tiles)
            for label, wall_med, k_med, own, resident in measured:
                extra = ""
                if args.literals and label == q.name:
                    from gpu_literal_kernels import variant

                    extra = literal_runs(con, probe, q.name, variant(q.name, q.sql), args)
                rows.append((label, wall_med, k_med, own, extra, resident))
            if q.name in profile:
                print(per_pipeline(con, q.sql, 3), flush=True)
                print(profiled(con, q.sql, 3, args.top), flush=True)
                print(sampled(con, q.sql, 100, args.top), flush=True)
                text = con.explain(q.sql, analyze=True)
                print("\n".join(line for line in text.splitlines()
                                if "=>" in line or line.startswith(("Planning", "Total", "GPU"))), flush=True)
        switch("")
    print(f"{'query':22} wall ms  kernels ms  fused alone ms  host ms (wall - kernels)"
          + ("  | other literals: modules, wall ms, kernels ms" if args.literals else ""))
    for name, w, k, own, extra, _ in rows:
        print(f"{name:22} {w:7.2f} {k:11.3f} {own if own is not None else float('nan'):15.3f} {w - k:9.2f}{extra}")
    print("issue 10's aim: hot wall within 2x the device-memory floor + 0.2 ms")
    met = default = 0
    for name, w, _, _, _, resident in rows:
        verdict = floor_check(resident, w)
        if " +" not in name:  # (the default mode's rows)
            default += 1
            met += verdict.endswith("yes")
        print(f"{name:22} {verdict}")
    print(f"{met} of {default} queries within the aim (default mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
