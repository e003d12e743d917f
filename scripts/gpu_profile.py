"""Where a query's time goes on the GPU: cProfile of repeated runs of suite queries on one connection.

    PYTHONPATH=src python scripts/gpu_profile.py DB --suite ssb --queries q1.1,q2.1 [--limit-fraction 0.1]
        [--repeat 5] [--top 40] [--device gpu] [--out DIR]

With ``--limit-fraction`` the connection's gpu_memory_limit is that share of the database's bytes on
disk (as ``gpu-bench.sh ssb-gpu-limit``). One untimed warm-up run per query, then ``--repeat`` runs
under the profiler; prints wall time per run and the top functions by own and cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

from scripts_common import dir_bytes, parse_options

import hetdb
from hetdb.bench.suites import load_queries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1")
    ap.add_argument("--limit-fraction", type=float, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--option", action="append", default=[], help="connection option name=value")
    args = ap.parse_args(argv)
    options = parse_options(args.option)
    if args.limit_fraction is not None:
        options["gpu_memory_limit"] = int(dir_bytes(args.db) * args.limit_fraction)
    queries = load_queries(args.suite, args.queries.split(","))
    with hetdb.connect(args.db, device=args.device, **options) as con:
        for q in queries:
            con.sql(q.sql).arrow()
            prof = cProfile.Profile()
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                prof.enable()
                con.sql(q.sql).arrow()
                prof.disable()
                times.append(time.perf_counter() - t)
            print(f"== {q.name} {options}: runs {', '.join(f'{x * 1e3:.1f}' for x in times)} ms")
            for key in ("tottime", "cumulative"):
                s = io.StringIO()
                pstats.Stats(prof, stream=s).sort_stats(key).print_stats(args.top)
                print(s.getvalue())
            if args.out:
                prof.dump_stats(os.path.join(args.out, f"{q.name}.prof"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
