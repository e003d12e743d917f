"""Under a gpu_memory_limit, does each hot run of a query move over the link what the trace replay
(cache/replay.py) says it must? Each query runs ``--runs`` times in a row on one GPU connection (as
``hetdb bench --mode hot``: a warm-up and the timed repeats); per run the exec time, the bytes moved
host->device, the operators' peak device reservation and the cache's decisions are printed next to
the replay of the same sequence with each run's working memory (the benefit policy, the connection's
``gpu_cache_admission``), and the clairvoyant policy's total as the floor. A run that moves more than
its replay holds device memory the replay does not see (deliveries, decoded copies) evicting pages.

    PYTHONPATH=src:scripts python scripts/budget_replay_probe.py DB [--queries q1.1,q2.1,q3.1,q4.1]
        [--limit-fraction 0.1] [--runs 4] [--variant NAME:k=v,k=v ...]

The limit is a share of the database's bytes on disk (as ``scripts/gpu-bench.sh ssb-gpu-limit``), or
``--limit-bytes``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import replace

from scripts_common import dir_bytes, parse_options

import hetdb
from hetdb.bench.suites import load_queries

MB = 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q2.1,q3.1,q4.1")
    ap.add_argument("--limit-fraction", type=float, default=0.1)
    ap.add_argument("--limit-bytes", type=int, default=None, help="the limit in bytes (instead of a fraction)")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--warm", type=int, default=0,
                    help="then N warm runs of each query and variant (a fresh connection each: pages in "
                         "the pinned host tier, none on the GPU): median exec ms and MB moved")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:k=v,k=v connection options of one variant (repeatable; default one 'base')")
    args = ap.parse_args(argv)
    from hetdb.cache.replay import replay
    from hetdb.cache.trace import suite_trace

    queries = [(q.name, q.sql) for q in load_queries(args.suite, args.queries.split(","))]
    data = dir_bytes(args.db)
    limit = args.limit_bytes or int(data * args.limit_fraction)
    print(f"gpu_memory_limit {limit / MB:,.1f} MB = {limit / data:.1%} of {args.db}'s bytes on disk; "
          f"{args.runs} runs of each query in a row on one connection", flush=True)
    for spec in args.variant or ["base:"]:
        name, _, opts = spec.partition(":")
        options = parse_options([o for o in opts.split(",") if o])
        rows = []
        with hetdb.connect(args.db, device="gpu", create=False, gpu_memory_limit=limit, **options) as con:
            engine = con._get_engine()
            device = engine.device
            compressed = device.keep_compressed(con.options.gpu_compressed_cache, engine.db)
            admission = con.options.gpu_cache_admission
            for qname, sql in queries:
                for run in range(args.runs):
                    res = con.sql(sql)
                    res.fetchall()
                    st = res.stats
                    routes = st.get("routes") or {}
                    rows.append((qname, run, st["exec_seconds"], int(st["bytes_host_to_device"]),
                                 int(device.memory.peak), routes.get("admitted", 0), routes.get("evicted", 0),
                                 routes.get("bypassed", 0), int(st.get("gpu_cache_bytes") or 0)))
                    # (as it goes: a run cut by a timeout still shows what it measured)
                    print(f"  {name} {qname} run {run}: {rows[-1][2] * 1e3:.1f} ms, {rows[-1][3] / MB:.1f} MB moved",
                          flush=True)
        with hetdb.connect(args.db, device="cpu", create=False) as cpu:
            trace = {q.name: q for q in suite_trace(cpu, queries, compressed)}
        runs = [replace(trace[r[0]], working=r[4]) for r in rows]
        predicted = replay(runs, limit, "benefit", admission=admission)
        floor = replay(runs, limit, "oracle", admission=admission)
        print(f"\n## {name} {options or ''} (pages kept {'compressed' if compressed else 'decoded'}, "
              f"admission {admission})")
        print("query run   exec ms   h2d MB  replay MB  oracle MB  operators MB  admitted/evicted/bypassed  cache MB")
        for r, want, best in zip(rows, predicted.link_bytes, floor.link_bytes):
            print(f"{r[0]:5s} {r[1]:3d} {r[2] * 1e3:9.1f} {r[3] / MB:8.1f} {want / MB:10.1f} {best / MB:10.1f} "
                  f"{r[4] / MB:13.1f}  {r[5]:>8d}/{r[6]}/{r[7]:<12d} {r[8] / MB:8.1f}")
        hot = [r[2] for r in rows if r[1] > 0]
        geo = math.exp(statistics.fmean(math.log(x) for x in hot)) * 1e3 if hot and min(hot) > 0 else 0.0
        if args.warm:
            print(warm(args.db, queries, limit, options, args.warm))
        print(f"total: measured {sum(r[3] for r in rows) / MB:,.1f} MB, replayed {predicted.total_link_bytes / MB:,.1f} "
              f"(no room for {getattr(predicted, 'short_bytes', 0) / MB:,.1f}), "
              f"oracle {floor.total_link_bytes / MB:,.1f}; geomean exec of runs after the first {geo:.2f} ms", flush=True)
    return 0


def warm(db: str, queries: list[tuple[str, str]], limit: int, options: dict, runs: int) -> str:
    """Per query: the median exec ms and MB moved of ``runs`` runs, each on a fresh connection."""
    out, times = [], []
    for qname, sql in queries:
        execs, moved = [], 0
        for _ in range(runs):
            with hetdb.connect(db, device="gpu", create=False, gpu_memory_limit=limit, **options) as con:
                res = con.sql(sql)
                res.fetchall()
                execs.append(res.stats["exec_seconds"])
                moved = int(res.stats["bytes_host_to_device"])
        times.append(statistics.median(execs))
        out.append(f"{qname} {times[-1] * 1e3:.1f} ms {moved / MB:.1f} MB")
    geo = math.exp(statistics.fmean(math.log(x) for x in times)) * 1e3 if min(times) > 0 else 0.0
    return f"warm (fresh connection per run, median of {runs}): " + ", ".join(out) + f"; geomean {geo:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
