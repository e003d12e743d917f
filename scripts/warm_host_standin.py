"""Host cost of warm runs (a fresh connection per run, pages in the process's pinned host tier) on a
machine without a GPU, through the CuPy stand-in (scripts/host_only_gpu.py): per query the median
wall time, CuPy-level calls per run (device -> host waits, uploads), and a cProfile of hetdb's
functions over the runs.

    PYTHONPATH=src python scripts/warm_host_standin.py DB [--queries q2.1,q3.1,q4.1] [--runs 20]
        [--rows] [--top 25]

``--rows``: the dimension pipelines run operator at a time (HETDB_GPU_COMPILE_OFF=row_sinks, NumPy
filters), so the fused plan's dense builds and compactions see the real filtered dimension rows (the
stand-in's compiled row kernels select nothing). A measuring aid only."""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--queries", default="q2.1,q3.1,q4.1")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--rows", action="store_true")
    ap.add_argument("--callers", default="")
    ap.add_argument("--uploads", action="store_true", help="where host -> device copies and waits come from")
    args = ap.parse_args()
    if args.rows:
        os.environ["HETDB_GPU_COMPILE_OFF"] = ",".join(
            [*filter(None, os.environ.get("HETDB_GPU_COMPILE_OFF", "").split(",")), "row_sinks"])
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import host_only_gpu as H

    H.install()
    import hetdb
    from hetdb.bench.suites import load_queries

    H._no_compile()
    from host_only_cupy import CALLS

    sites: dict[str, int] = {}
    if args.uploads:
        import traceback

        import cupy

        def site(kind: str) -> None:
            frames = [f for f in traceback.extract_stack()[:-2] if "/hetdb/" in f.filename]
            where = " < ".join(f"{f.filename.split('/hetdb/')[-1]}:{f.lineno}" for f in reversed(frames[-5:]))
            sites[f"{kind} {where}"] = sites.get(f"{kind} {where}", 0) + 1

        plain_asarray, plain_get = cupy.asarray, H.ndarray.get

        def asarray(a, *p, **k):
            if not isinstance(a, H.ndarray):
                site("H2D")
            return plain_asarray(a, *p, **k)

        def get(self, *p, **k):
            site("D2H")
            return plain_get(self, *p, **k)

        cupy.asarray, H.ndarray.get = asarray, get

    for q in load_queries("ssb", args.queries.split(",")):
        def run(q=q) -> None:
            con = hetdb.connect(args.db, device="gpu", create=False)
            con.sql(q.sql).arrow()
            con.close()

        for _ in range(3):
            run()
        walls = []
        for _ in range(args.runs):
            t = time.perf_counter()
            run()
            walls.append((time.perf_counter() - t) * 1e3)
        CALLS.clear()
        sites.clear()
        run()
        for k, v in sorted(sites.items()):
            print(f"  {v} x {k}")
        calls = sorted(CALLS.items(), key=lambda kv: -kv[1])
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.runs):
            run()
        prof.disable()
        out = io.StringIO()
        ps = pstats.Stats(prof, stream=out)
        ncalls = sum(v[1] for v in ps.stats.values()) / args.runs
        print(f"=== {q.name}: median {statistics.median(walls):.2f} ms (min {min(walls):.2f}), "
              f"{ncalls:,.0f} Python calls per run", flush=True)
        print("  CuPy-level calls per run: " + ", ".join(f"{k} x{v}" for k, v in calls), flush=True)
        ps.sort_stats("cumtime").print_stats(r"hetdb", args.top)
        if args.callers:
            ps.print_callers(args.callers)
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
