"""A warm GPU query's host phases and the host->device transfers each makes, without a GPU.

    PYTHONPATH=src python scripts/warm_host_phases.py DB [--suite ssb] [--queries q2.1,q3.1,q4.1]
        [--runs 5] [--option k=v ...] [--profile]

Runs each query warm (a fresh connection per run; the process's pinned host tier holds the pages after
an untimed first run) with ``scripts/host_only_gpu.py``'s stand-in CuPy, so only the engine's Python
runs (copies are memmoves, launches do nothing, nothing waits). Per query: the median host ms of each
phase (the early scans' start, each pipeline; exec/engine.run_pipeline) and, per phase, the CuPy-level
transfers it made: host->device copies (``runtime.memcpyAsync``; ``cupy.asarray (host -> device)``;
``ndarray.set``), upload kernels (backend/gpu/upload.py) and device->host copies (``.get``,
``cupy.asnumpy``). A host->device copy made after the early scan primed the fact scan queues behind
those copies on a GPU (backend/gpu/upload.py); this says which phase makes them. ``--profile``: a
cProfile of the last run (hetdb functions by cumulative time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_only_gpu  # noqa: E402
from host_only_cupy import CALLS  # noqa: E402

WATCH = ("runtime.memcpyAsync", "cupy.asarray (host -> device)", "ndarray.set", "cupy.asnumpy (device -> host, waits)",
         "ndarray.get", "upload_words")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q2.1,q3.1,q4.1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--option", action="append", default=[])
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    host_only_gpu.install()
    from scripts_common import parse_options

    import hetdb
    from hetdb.bench.suites import load_queries
    from hetdb.exec import early_scan, engine

    host_only_gpu._no_compile()
    launches: dict[str, int] = {}
    orig_call = host_only_gpu._Function.__call__

    def call(self, *a, **k):
        launches[self.name] = launches.get(self.name, 0) + 1
        CALLS[self.name] = CALLS.get(self.name, 0) + 1
        return orig_call(self, *a, **k)

    host_only_gpu._Function.__call__ = call
    phases: list[tuple[str, float, float, dict]] = []
    orig_pipeline, orig_early = engine.run_pipeline, early_scan.start_early_scans

    def watched(what: str, fn, *a):
        before = {k: CALLS.get(k, 0) for k in WATCH}
        t = time.perf_counter()
        try:
            return fn(*a)
        finally:
            phases.append((what, t, time.perf_counter(), {k: CALLS.get(k, 0) - before[k] for k in WATCH}))

    def run_pipeline(ctx, pipe, pool, threads):
        src = getattr(getattr(pipe.source, "scan", None), "table", None) or type(pipe.source).__name__
        return watched(f"p{pipe.pid}:{src}", orig_pipeline, ctx, pipe, pool, threads)

    def start_early(ctx, physical, skipped=frozenset()):
        return watched("early", orig_early, ctx, physical, skipped)

    engine.run_pipeline = run_pipeline
    early_scan.start_early_scans = start_early
    opts = parse_options(args.option)
    qs = {q.name: q.sql for q in load_queries(args.suite)}
    for name in args.queries.split(","):
        sql = qs[name]
        with hetdb.connect(args.db, device="gpu", **opts) as con:  # loads the host tier
            con.sql(sql).arrow()
        per: dict[str, list[float]] = {}
        moved: dict[str, dict] = {}
        walls = []
        prof = cProfile.Profile() if args.profile else None
        for r in range(args.runs):
            phases.clear()
            with hetdb.connect(args.db, device="gpu", **opts) as con:
                if prof is not None and r == args.runs - 1:
                    prof.enable()
                t0 = time.perf_counter()
                con.sql(sql).arrow()
                walls.append(time.perf_counter() - t0)
                if prof is not None:
                    prof.disable()
            for what, a, b, counts in phases:
                per.setdefault(what, []).append((b - a) * 1e3)
                moved[what] = counts
        parts = []
        for what, ms in per.items():
            c = {k: v for k, v in moved[what].items() if v}
            parts.append(f"{what} {statistics.median(ms):.2f} ms" + (f" {c}" if c else ""))
        print(f"{name}: wall {statistics.median(walls) * 1e3:.2f} ms | " + " | ".join(parts), flush=True)
        if prof is not None:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumtime").print_stats(r"hetdb", 40)
            print("\n".join(ln for ln in out.getvalue().splitlines() if ln.strip()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
