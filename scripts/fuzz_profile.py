"""Where one fuzz-campaign process's time goes (issue 15's campaign throughput), on the CPU or the GPU.

    PYTHONPATH=src python scripts/fuzz_profile.py --device cpu|gpu [--warm 10] [--cases 100] [--seed S]
        [--start 100] [--config NAME ...] [--top 40]

One process (fuzz_worker.Harness: the fuzz databases, DuckDB, a connection per configuration) runs
``--warm`` cases first (kernels compiled, plans cached), then ``--cases`` more under cProfile. Prints
per 100 cases x configurations the CPU seconds of: Numba compiles, NVRTC compiles (cache misses that
reach the compiler), hetdb planning (QueryEngine.planned: parse, bind, optimize, physical plan),
DuckDB's answers, garbage collections (what the process holds is frozen after the warm-up, as the
campaign's workers do), and the rest (hetdb executing, the harness); then cProfile's top functions by own
time and by cumulative time. Thread CPU time of the main thread (the engine's worker threads are not
counted: run with threads=1 configurations to see all of it).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "differential"))

ACC: dict[str, float] = {}
_TL = threading.local()


def _wrap(owner, name: str, key: str) -> None:
    orig = getattr(owner, name)
    ACC.setdefault(key, 0.0)

    def timed(*a, **k):
        if getattr(_TL, key, False):
            return orig(*a, **k)
        setattr(_TL, key, True)
        t = time.thread_time()
        try:
            return orig(*a, **k)
        finally:
            ACC[key] += time.thread_time() - t
            setattr(_TL, key, False)

    setattr(owner, name, timed)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--warm", type=int, default=10)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--start", type=int, default=100000)  # (past the campaign's cases)
    ap.add_argument("--config", action="append")
    ap.add_argument("--values", default="device", help="whose values a case draws (fuzz_worker.VALUES)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=None,
                    help="stop each phase between cases after this long (a GPU's compiles are slow)")
    args = ap.parse_args()

    import diff_fuzz
    import numba.core.dispatcher as D

    compiled: dict[str, list] = {}  # what compiled in the profiled cases: name -> [count, wall s]
    from fuzz_worker import Harness, configurations

    from hetdb.exec import engine as E

    _wrap(D.Dispatcher, "compile", "numba compile")
    orig_compile = D.Dispatcher.compile

    def named(self, sig):
        t = time.perf_counter()
        try:
            return orig_compile(self, sig)
        finally:
            name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
            entry = compiled.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - t

    D.Dispatcher.compile = named
    _wrap(E.QueryEngine, "planned", "plan")
    _wrap(diff_fuzz.FuzzRunner, "reference", "duckdb")
    if args.device == "gpu":
        from hetdb.backend.gpu import compile as C

        _wrap(C, "_compile_cubin", "nvrtc compile")
        inner = C._compile_cubin

        def counted(nvrtc, source, filename, *a, **k):
            t = time.perf_counter()
            try:
                return inner(nvrtc, source, filename, *a, **k)
            finally:
                entry = compiled.setdefault(f"NVRTC {filename}", [0, 0.0])
                entry[0] += 1
                entry[1] += time.perf_counter() - t

        C._compile_cubin = counted
    ACC["gc"] = 0.0
    started: list[float] = []

    def collections(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(time.thread_time())
        elif started:
            ACC["gc"] += time.thread_time() - started.pop()

    gc.callbacks.append(collections)
    configs = configurations(args.device, args.config, args.values)
    t0 = time.perf_counter()
    h = Harness(configs)
    print(f"harness: {len(configs)} configurations {[c.name for c in configs]} in {time.perf_counter() - t0:.1f} s")
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = (lambda: None) if args.seconds is None else (lambda: time.time() + args.seconds)
    h.run(args.seed, args.start, args.warm, deadline())
    print(f"warm-up: up to {args.warm} cases in {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")
    gc.collect()
    gc.freeze()  # as fuzz_worker.run_task does before each task
    for k in ACC:
        ACC[k] = 0.0
    compiled.clear()
    prof = cProfile.Profile()
    t0, c0 = time.perf_counter(), time.thread_time()
    prof.enable()
    r = h.run(args.seed, args.start + args.warm, args.cases, deadline())
    prof.disable()
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    runs = r["done"] * len(configs)
    scale = 100.0 * len(configs) / max(1, runs)  # per 100 cases x configurations
    print(f"profiled: {r['done']} cases x {len(configs)} configurations = {runs} case runs in {wall:.1f} s wall, "
          f"{cpu:.1f} s main-thread CPU ({runs / max(wall, 1e-9):.1f} case runs/s), {len(r['failures'])} failures")
    parts = {k: round(v * scale, 2) for k, v in ACC.items()}
    print(f"per 100 cases x {len(configs)} configurations, CPU s: total {cpu * scale:.1f}", parts,
          f"rest {(cpu - sum(ACC.values())) * scale:.1f}")
    print("seconds per case by configuration (wall, compiles included):",
          {label: round(st["seconds"] / max(1, st["cases"]), 3) for label, st in r["stats"].items()})
    top = sorted(compiled.items(), key=lambda kv: -kv[1][1])[:25]
    print("compiles in the profiled cases (Numba function or NVRTC file: count, wall s, nested included):")
    for name, (count, secs) in top:
        print(f"  {name}: {count}, {secs:.2f}")
    for sort in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).strip_dirs().sort_stats(sort).print_stats(args.top)
        print(f"==== cProfile by {sort}")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:20000])


if __name__ == "__main__":
    main()
