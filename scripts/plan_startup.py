"""Start-up of a cached plan on a fresh connection: from ``con.sql(query)`` until the engine starts
running the plan (and what follows the run until ``arrow()`` returns), for each SSB query on a new
connection to a database whose plans another connection of the process made (the process-wide plan
cache), as ``hetdb bench``'s warm mode does (it connects untimed, then times ``sql`` + ``arrow``).

    PYTHONPATH=src python scripts/plan_startup.py DB [--device cpu] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import hetdb
from hetdb.bench.suites import load_queries
from hetdb.exec import engine as engine_module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    queries = load_queries("ssb")
    with hetdb.connect(args.db, device=args.device) as con:
        for q in queries:
            con.sql(q.sql).arrow()
    started: dict[str, float] = {}
    run = engine_module.QueryEngine._run

    def timed_run(self, *a, **k):
        started["t"] = time.perf_counter()
        try:
            return run(self, *a, **k)
        finally:
            started["end"] = time.perf_counter()

    engine_module.QueryEngine._run = timed_run
    starts, plans, afters = [], [], []
    try:
        for q in queries:
            for _ in range(args.repeat):
                con = hetdb.connect(args.db, device=args.device)
                t0 = time.perf_counter()
                res = con.sql(q.sql)
                res.arrow()
                afters.append(time.perf_counter() - started["end"])
                starts.append(started["t"] - t0)
                plans.append(res.stats["plan_seconds"])
                if not res.stats["plan_cached"]:
                    print(f"{q.name}: the plan was not cached", file=sys.stderr)
                con.close()
    finally:
        engine_module.QueryEngine._run = run
    for name, xs in (("sql() until the plan runs", starts), ("of which the plan look-up", plans),
                     ("the run's end until arrow()", afters)):
        xs = sorted(x * 1e3 for x in xs)
        print(f"{name:28s} median {statistics.median(xs):6.2f} ms  p90 {xs[int(0.9 * len(xs))]:6.2f} ms"
              f"  ({len(xs)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
