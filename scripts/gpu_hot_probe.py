"""Where a hot query's wall time goes: per-run timings and a low-overhead sampling profile.

    PYTHONPATH=src python scripts/gpu_hot_probe.py DB [--suite tpch] [--queries q02,q11,q22,q10,q18]
        [--runs 10] [--warmup 2] [--device gpu] [--connections 2] [--sample-ms 0.5] [--cprofile 3]
        [--pause-ms 500] [--option k=v]

Per connection of one process (the first one loads the data cold, as the bench's hot mode does) and
per query: ``--warmup`` untimed runs (kernel compiles stay out of the profile), then every run's wall
time next to the query thread's CPU time (wall - cpu: the host waiting, mostly on the device), the
engine's exec/plan seconds, host->device bytes, the garbage collections that ran inside it (count and
ms, by generation) and the device bytes the leak check found; then a sampling profile of the timed
runs (a thread reads the query thread's stack every ``--sample-ms``: wall time, device waits
included, unlike cProfile's CPU-side view) as ms per run by innermost line and by function on the
stack; with ``--cprofile N``, N more runs under cProfile (calls per run: how many CuPy calls and
launches a run makes). Ends with one EXPLAIN ANALYZE per query (its per-pipeline times).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import io
import pstats
import re
import statistics
import sys
import threading
import time

from scripts_common import parse_options

import hetdb
from hetdb.bench.suites import load_queries


class GcWatch:
    """Collections (count, seconds) per generation since the last ``take``."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}
        self.done: collections.Counter = collections.Counter()
        self.seconds: collections.Counter = collections.Counter()
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict) -> None:
        g = info.get("generation", -1)
        if phase == "start":
            self.started[g] = time.perf_counter()
        else:
            self.done[g] += 1
            self.seconds[g] += time.perf_counter() - self.started.pop(g, time.perf_counter())

    def take(self) -> str:
        out = " ".join(f"g{g}:{self.done[g]}/{self.seconds[g] * 1e3:.1f}ms" for g in sorted(self.done))
        self.done.clear()
        self.seconds.clear()
        return out or "-"


class Sampler:
    """Samples one thread's Python stack every ``period`` seconds while ``active``."""

    def __init__(self, period: float) -> None:
        self.period = period
        self.target: int | None = None
        self.active = False
        self.samples = 0
        self.leaf: collections.Counter = collections.Counter()
        self.cum: collections.Counter = collections.Counter()
        self._stop = False
        threading.Thread(target=self._loop, daemon=True, name="probe-sampler").start()

    def reset(self) -> None:
        self.samples = 0
        self.leaf.clear()
        self.cum.clear()

    def _loop(self) -> None:
        while not self._stop:
            time.sleep(self.period)
            if not self.active or self.target is None:
                continue
            frame = sys._current_frames().get(self.target)
            if frame is None:
                continue
            self.samples += 1
            first = True
            seen = set()
            while frame is not None:
                code = frame.f_code
                name = f"{_short(code.co_filename)}:{code.co_name}"
                if first:
                    self.leaf[f"{_short(code.co_filename)}:{frame.f_lineno} {code.co_name}"] += 1
                    first = False
                if name not in seen:
                    seen.add(name)
                    self.cum[name] += 1
                frame = frame.f_back

    def report(self, runs: int, wall: float, top: int = 30) -> str:
        if not self.samples:
            return "  (no samples)"
        per = wall / self.samples / runs * 1e3  # ms of one run per sample
        lines = [f"  {self.samples} samples over {runs} runs ({wall / runs * 1e3:.1f} ms per run)",
                 "  innermost line (ms per run):"]
        lines += [f"    {n * per:7.2f}  {k}" for k, n in self.leaf.most_common(top)]
        lines.append("  on the stack (ms per run):")
        lines += [f"    {n * per:7.2f}  {k}" for k, n in self.cum.most_common(top + 20)]
        return "\n".join(lines)


def _routes(routes) -> str:
    """The run's pages by path and cache decisions, without the zero counts."""
    if not isinstance(routes, dict):
        return "-"
    flat = []
    for k, v in routes.items():
        if isinstance(v, dict):
            flat += [f"{k}.{a}={b}" for a, b in v.items() if b]
        elif v:
            flat.append(f"{k}={v}")
    return " ".join(flat) or "-"


def _short(path: str) -> str:
    for marker in ("/hetdb/", "/site-packages/", "/lib/python"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker):]
    return path


class Timed:
    """Wall seconds spent in some functions (patched in place), per ``take``."""

    def __init__(self, targets: list[tuple[object, str]]) -> None:
        self.seconds: collections.Counter = collections.Counter()
        for owner, name in targets:
            self._wrap(owner, name)

    def _wrap(self, owner: object, name: str) -> None:
        fn = getattr(owner, name)
        label = f"{getattr(owner, '__name__', owner)}.{name}"

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.seconds[label] += time.perf_counter() - t

        setattr(owner, name, timed)

    def take(self) -> str:
        out = " ".join(f"{k.split('.')[-1]}={v * 1e3:.2f}ms" for k, v in sorted(self.seconds.items()))
        self.seconds.clear()
        return out or "-"


def cycles(con, sql: str) -> str:
    """Run ``sql`` once with the collector off; the types of what only a collection frees."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        con.sql(sql).arrow()
        found = gc.collect()
        kinds = collections.Counter(type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return f"{found} objects in cycles: " + ", ".join(f"{k} x{n}" for k, n in kinds.most_common(12))


def profiled(con, sql: str, runs: int, top: int) -> str:
    """``runs`` runs of ``sql`` under cProfile: the top functions by own time, with calls per run."""
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    for _ in range(runs):
        con.sql(sql).arrow()
    prof.disable()
    wall = (time.perf_counter() - t) / runs
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(top)
    calls = sum(v[1] for v in st.stats.values()) / runs
    return (f"  cProfile over {runs} runs ({wall * 1e3:.1f} ms per run under the profiler; "
            f"{calls:,.0f} Python calls per run)\n" + out.getvalue())


def per_pipeline(con, sql: str, runs: int, sync: bool) -> str:
    """``runs`` runs of ``sql`` with every pipeline the engine starts timed (the device synchronised
    after each, so a pipeline's queued launches count for it): median ms per pipeline with how it
    ran, and what of the run's wall time no pipeline took (planning, result, leak check)."""
    import hetdb.exec.engine as engine_mod

    real = engine_mod.run_pipeline
    times: dict[int, list[float]] = collections.defaultdict(list)
    what: dict[int, str] = {}
    wait = None
    if sync:
        import cupy

        def wait() -> None:
            cupy.cuda.get_current_stream().synchronize()

    def timed(ctx, pipe, *a, **k):
        if wait:
            wait()
        t = time.perf_counter()
        try:
            return real(ctx, pipe, *a, **k)
        finally:
            if wait:
                wait()
            times[pipe.pid].append(time.perf_counter() - t)
            st = ctx.stats.get(pipe.sink.op_id)
            what[pipe.pid] = f"{pipe.sink.describe()[:60]} | {(getattr(st, 'fused', '') or '')[:110]}"

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
    lines = [f"  per pipeline, median of {runs} runs (run {wall:.2f} ms, synchronised after each pipeline):"]
    total = 0.0
    for pid in sorted(times):
        ms = statistics.median(times[pid]) * 1e3 * len(times[pid]) / runs
        total += ms
        lines.append(f"    p{pid:<3} {ms:7.2f} ms  {what[pid]}")
    lines.append(f"    in no pipeline: {wall - total:.2f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="tpch", help="the bench suite the queries are from (tpch, ssb)")
    ap.add_argument("--queries", default="q02,q11,q22,q10,q18")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs after the first (compiles)")
    ap.add_argument("--cprofile", type=int, default=0, help="runs under cProfile after the timed ones")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--option", action="append", default=[], help="connection option name=value")
    ap.add_argument("--pipelines", type=int, default=3,
                    help="runs timed per top-level pipeline (the device synchronised after each)")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--connections", type=int, default=2)
    ap.add_argument("--sample-ms", type=float, default=0.5)
    ap.add_argument("--streamed", action="store_true", help="run through con.execute().fetchall() as well")
    ap.add_argument("--pause-ms", type=float, default=0.0,
                    help="sleep this long (untimed) before each timed run: the device and the cores idle "
                         "between runs, as between queries of a bench while DuckDB runs")
    args = ap.parse_args(argv)
    qs = {q.name: q.sql for q in load_queries(args.suite)}
    names = args.queries.split(",")
    watch = GcWatch()
    sampler = Sampler(args.sample_ms / 1e3)
    sampler.target = threading.main_thread().ident
    from hetdb.exec.engine import QueryEngine
    from hetdb.storage.database import Database

    targets: list[tuple[object, str]] = [(QueryEngine, "planned"), (Database, "table")]
    if args.device == "gpu":
        from hetdb.backend.gpu import compile as gpu_compile
        from hetdb.exec.device import DeviceResources

        targets += [(DeviceResources, "snapshot"), (DeviceResources, "leaked_bytes"),
                    (DeviceResources, "keep_compressed"), (gpu_compile, "_compile_cubin")]
    timed = Timed(targets)
    for c in range(args.connections):
        con = hetdb.connect(args.db, device=args.device, **parse_options(args.option))
        for n in names:
            t = time.perf_counter()
            con.sql(qs[n]).arrow()
            watch.take()
            print(f"conn {c} {n}: first run {(time.perf_counter() - t) * 1e3:.1f} ms", flush=True)
            for i in range(args.warmup):
                t = time.perf_counter()
                con.sql(qs[n]).arrow()
                print(f"  warm-up {i}: {(time.perf_counter() - t) * 1e3:7.2f} ms  gc {watch.take()}  "
                      f"in {timed.take() if timed else '-'}", flush=True)
            walls = []
            sampler.reset()
            for i in range(args.runs):
                if args.pause_ms:
                    time.sleep(args.pause_ms / 1e3)
                sampler.active = True
                t, tc = time.perf_counter(), time.thread_time()
                res = con.sql(qs[n])
                res.arrow()
                wall, cpu = time.perf_counter() - t, time.thread_time() - tc
                sampler.active = False
                walls.append(wall)
                st = getattr(res, "stats", None) or {}
                print(f"  run {i}: {wall * 1e3:7.2f} ms  cpu {cpu * 1e3:7.2f}  exec {st.get('exec_seconds', 0) * 1e3:7.2f}  "
                      f"plan {st.get('plan_seconds', 0) * 1e3:5.2f}  h2d {st.get('bytes_host_to_device')}  "
                      f"leak {st.get('gpu_leaked_bytes')}  gc {watch.take()}  "
                      f"in {timed.take() if timed else '-'}  modes {st.get('gpu_pipelines')}  "
                      f"routes {_routes(st.get('routes'))}", flush=True)
            print(f"conn {c} {n}: median {statistics.median(walls) * 1e3:.2f} ms, "
                  f"min {min(walls) * 1e3:.2f} ms", flush=True)
            print(sampler.report(args.runs, sum(walls), args.top), flush=True)
            if args.cprofile:
                print(profiled(con, qs[n], args.cprofile, args.top), flush=True)
            if args.pipelines:
                print(per_pipeline(con, qs[n], args.pipelines, args.device == "gpu"), flush=True)
            print(f"  python objects tracked: {len(gc.get_objects()):,}; {cycles(con, qs[n])}", flush=True)
            if args.streamed:
                ts = []
                for _ in range(args.runs):
                    t = time.perf_counter()
                    con.execute(qs[n]).fetchall()
                    ts.append(time.perf_counter() - t)
                print(f"conn {c} {n}: streamed execute median {statistics.median(ts) * 1e3:.2f} ms "
                      f"gc {watch.take()}", flush=True)
            if c == 0:
                text = con.explain(qs[n], analyze=True)
                print("\n".join(line for line in text.splitlines()
                                if "=>" in line or line.startswith(("Planning", "Total", "GPU"))), flush=True)
                ops = sum(float(t) for t in re.findall(r"time=([0-9.]+) ms", text))
                print(f"  operator times sum to {ops:.1f} ms (the rest of Total is in no operator)", flush=True)
        con.close()
    sampler._stop = True
    return 0


if __name__ == "__main__":
    sys.exit(main())
