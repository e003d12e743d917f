"""Where a CPU query's wall time goes between parallel and serial phases, per pipeline.

Usage: python scripts/cpu_phases.py DB SUITE THREADS[,THREADS...] [--profile N] [--configs C1,C2] [QUERY ...]
(several thread counts: one connection each, in that order, in one process; ``--configs``: the same per
configuration, ``all`` (the defaults) or thresholds of backend/cpu/tuning.py, name=value joined by '+')

Each query runs once to warm up, then three times (medians are printed). Per pipeline: its wall
time, the wall of its worker phase (first worker start to last worker end: the part that runs on
``threads`` workers) and, inside the workers, the thread CPU time spent in compiled loops (``nogil``)
against the rest (scan reads, per-morsel Python: GIL-held at least in part). Everything outside the
worker phase (planning, building the hash table after the workers, the aggregation's merge, sorts,
the result's conversion) is serial unless the operator itself runs kernels on several threads.
At THREADS=1 ``serial`` + ``workers``/16 estimates the 16-thread time if the workers scaled
perfectly; the ``gil`` share of the workers is what several workers cannot run at once.

``--profile N``: the N functions that took the most time of the calling thread outside the worker
phases (cProfile over the three measured runs, per run), each marked ``[parallel]`` when it is a Numba
kernel with ``parallel=True`` (its time shrinks with the kernel threads; everything else in the list is
one thread's work: the serial phases to parallelise).
"""

from __future__ import annotations

import collections
import cProfile
import pstats
import resource
import sys
import threading
import time

import hetdb
from hetdb.backend.cpu import tuning
from hetdb.bench.suites import load_queries
from hetdb.exec import compiled_cpu, compiled_cpu_kernels, pipeline

_local = threading.local()


class _Probe:
    """The timings of one query run."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pipes: list[dict] = []
        self.current: dict | None = None

    def worker(self, t0: float, t1: float, cpu: float, kernel: float) -> None:
        with self.lock:
            p = self.current
            if p is None:
                return
            p["start"] = min(p.get("start", t0), t0)
            p["end"] = max(p.get("end", t1), t1)
            p["cpu"] += cpu
            p["kernel"] += kernel


PROBE = _Probe()


def _label(pipe) -> str:
    src = pipe.source
    name = type(src).__name__
    scan = getattr(src, "scan", None)
    if scan is not None and getattr(scan, "table", None):
        name += f"({scan.table})"
    return f"{name}->{type(pipe.sink).__name__}"


PROFILE: list[cProfile.Profile | None] = [None]  # the calling thread's profile of the serial phases


def _wrap_work(cls) -> None:
    work = cls.work

    def timed(self) -> None:
        _local.kernel = 0.0
        prof = PROFILE[0] if threading.current_thread() is threading.main_thread() else None
        if prof is not None:
            prof.disable()  # (one worker on the calling thread: its time is not serial)
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            work(self)
        finally:
            PROBE.worker(t0, time.perf_counter(), time.thread_time() - c0, _local.kernel)
            if prof is not None:
                prof.enable()

    cls.work = timed


def _wrap_compile() -> None:
    compile_spec = compiled_cpu_kernels.compile_spec

    def timed_compile(spec):
        k = compile_spec(spec)
        fn = k.fn

        def run(*args):
            c0 = time.thread_time()
            try:
                return fn(*args)
            finally:
                _local.kernel = getattr(_local, "kernel", 0.0) + time.thread_time() - c0

        k.fn = run
        return k

    compiled_cpu_kernels.compile_spec = timed_compile


def _wrap_pipeline() -> None:
    run_pipeline = pipeline.run_pipeline

    def timed(ctx, pipe, pool, threads):
        entry = {"label": _label(pipe), "cpu": 0.0, "kernel": 0.0}
        PROBE.current = entry
        t0 = time.perf_counter()
        try:
            run_pipeline(ctx, pipe, pool, threads)
        finally:
            entry["wall"] = time.perf_counter() - t0
            entry["fused"] = ctx.stat(pipe.sink.op_id).fused or ""
            PROBE.current = None
            PROBE.pipes.append(entry)

    pipeline.run_pipeline = timed
    import hetdb.exec.engine as engine

    engine.run_pipeline = timed


def _parallel_kernels() -> set[tuple[str, str]]:
    """(file, name) of every loaded Numba kernel compiled with ``parallel=True``."""
    from numba.core.registry import CPUDispatcher

    out = set()
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith("hetdb"):
            continue
        for v in list(vars(mod).values()):
            if isinstance(v, CPUDispatcher) and v.targetoptions.get("parallel"):
                out.add((v.py_func.__code__.co_filename, v.py_func.__name__))
    return out


def _print_profile(prof: cProfile.Profile, top: int, runs: int) -> None:
    stats = pstats.Stats(prof).stats
    par = _parallel_kernels()
    rows = sorted(((tt, nc, f) for f, (_, nc, tt, _, _) in stats.items()), reverse=True)
    skip = ("acquire", "wait", "result")  # waiting for the workers
    shown = 0
    for tt, nc, (file, line, name) in rows:
        if any(name.endswith(w) or f"'{w}'" in name for w in skip):
            continue
        where = name if file == "~" else f"{file.split('/src/')[-1].split('site-packages/')[-1]}:{line}({name})"
        print(f"        {tt / runs * 1e3:7.2f} ms {nc / runs:6.0f} calls  {'[parallel] ' if (file, name) in par else ''}{where}")
        shown += 1
        if shown >= top:
            break


def main() -> None:
    db, suite = sys.argv[1], sys.argv[2]
    args = sys.argv[4:]
    top = 0
    if "--profile" in args:
        i = args.index("--profile")
        top = int(args[i + 1])
        del args[i:i + 2]
    configs = ["all"]
    if "--configs" in args:
        i = args.index("--configs")
        configs = args[i + 1].split(",")
        del args[i:i + 2]
    names = set(args)
    _wrap_work(pipeline._Run)
    _wrap_work(compiled_cpu._Worker)
    _wrap_compile()
    _wrap_pipeline()
    for threads in [int(t) for t in sys.argv[3].split(",")]:
        for config in configs:
            # a configuration: thresholds of backend/cpu/tuning.py, name=value joined by '+' ("all": as they are)
            old = dict(tuning.values)
            if config != "all":
                tuning.values.update(tuning.parse(config.replace("+", ",")))
            if len(configs) > 1:
                print(f"== configuration {config}", flush=True)
            try:
                with hetdb.connect(db, device="cpu", threads=threads) as con:
                    _measure(con, suite, threads, names, top)
            finally:
                tuning.values.update(old)


def _measure(con, suite: str, threads: int, names: set[str], top: int = 0) -> None:
    totals = collections.defaultdict(float)
    for q in load_queries(suite):
        if names and q.name not in names:
            continue
        con.sql(q.sql).arrow()
        runs = []
        prof = PROFILE[0] = cProfile.Profile() if top else None
        for _ in range(3):
            PROBE.pipes = []
            t0, c0, r0 = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
            if prof is not None:
                prof.enable()
            con.sql(q.sql).arrow()
            if prof is not None:
                prof.disable()
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            runs.append((time.perf_counter() - t0, time.process_time() - c0, PROBE.pipes,
                         r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt, r1.ru_nivcsw - r0.ru_nivcsw))
        runs.sort(key=lambda r: r[0])
        wall, cpu, pipes, sys_s, faults, preempted = runs[1]
        workers = sum(p["end"] - p["start"] for p in pipes if "start" in p)
        in_pipes = sum(p["wall"] for p in pipes)
        serial = wall - workers
        kern = sum(p["kernel"] for p in pipes)
        wcpu = sum(p["cpu"] for p in pipes)
        print(f"{q.name}: threads={threads} wall {wall * 1e3:.1f} ms cpu {cpu * 1e3:.1f} ms (system "
              f"{sys_s * 1e3:.1f} ms, {faults} minor faults, {preempted} preemptions) | workers "
              f"{workers * 1e3:.1f} ms (thread cpu {wcpu * 1e3:.1f}, in compiled loops {kern * 1e3:.1f}, "
              f"busy workers {wcpu / workers if workers else 0.0:.1f} of {threads}) | "
              f"serial {serial * 1e3:.1f} ms (outside pipelines {(wall - in_pipes) * 1e3:.1f}) | "
              f"16-thread estimate {(serial + workers * threads / 16) * 1e3:.1f} ms")
        for p in pipes:
            w = p["end"] - p["start"] if "start" in p else 0.0
            print(f"    {p['wall'] * 1e3:7.1f} ms  workers {w * 1e3:7.1f}  after/before {(p['wall'] - w) * 1e3:6.1f}  "
                  f"cpu {p['cpu'] * 1e3:6.1f} loops {p['kernel'] * 1e3:6.1f} busy {p['cpu'] / w if w else 0.0:4.1f}  "
                  f"{p['label']}  [{p['fused'][:70]}]")
        if prof is not None:
            PROFILE[0] = None
            print(f"    calling thread outside the workers, per run (cProfile: adds its own overhead), top {top}:")
            _print_profile(prof, top, 3)
        totals["wall"] += wall
        totals["serial"] += serial
        totals["workers"] += workers
    if totals["wall"]:
        print(f"total wall {totals['wall'] * 1e3:.1f} ms, serial {totals['serial'] * 1e3:.1f} ms "
              f"({100 * totals['serial'] / totals['wall']:.0f}%), workers {totals['workers'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
