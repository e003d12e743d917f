"""Host work per page and link rate of GPU scans under a budget: batched deliveries vs page by page.

    PYTHONPATH=src python scripts/gpu_scan_rate.py DB [--suite ssb] [--queries q1.1,q2.1,q3.1,q4.1]
        [--limit-fraction 0.1] [--batches 0,64MB] [--repeat 5] [--table lineorder]
        [--columns lo_orderdate,lo_quantity,lo_extendedprice,lo_discount] [--compressed 0,1] [--json OUT.json]

Measures, once per ``gpu_batch_bytes`` value of ``--batches`` (0: the per-row-group, per-page path) and
per ``gpu_compressed_cache`` value of ``--compressed`` (1: encoded pages stay encoded on the GPU):

* ``stream``: a bare ``PageStreamer`` over ``--columns`` of ``--table`` with the pinned host tier
  filled first (a warm scan: every page is a host->GPU copy), the consumer doing nothing. Reported:
  ``host_us_per_page`` (the Python loop's wall time, which never waits on the GPU, over the pages),
  ``link_gbps`` (bytes copied over the time to the last copy's completion) and its fraction of the
  pinned host->GPU bandwidth measured in the same run (``measure_bandwidth``).
* ``queries``: the suite's queries on one connection with ``gpu_memory_limit`` at ``--limit-fraction``
  of the database's bytes on disk: median hot ms, bytes host->GPU, pages by path, link GB/s end to end
  (bytes host->GPU over the median wall time) and the main thread's CPU µs per page moved.

Prints one line per measurement and writes everything to ``--json`` when given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from scripts_common import add_suite_arguments, dir_bytes, parse_options

import hetdb
from hetdb.bench.suites import load_queries
from hetdb.config import parse_bytes


def stream_rate(db: str, table: str, columns: list[str], batch_bytes: int, limit: int | None,
                repeat: int, compressed: bool = False) -> dict:
    import cupy

    from hetdb.backend.gpu.memory import DeviceMemoryBudget
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache.host_cache import shared_host_cache
    from hetdb.storage import Database

    reader = Database.open(db, create=False).table(table)
    host = shared_host_cache()
    budget = DeviceMemoryBudget(limit or (8 << 30))
    with PageStreamer(reader, columns, budget=budget, host_cache=host) as s:  # fill the host tier
        for _ in s:
            pass
    runs = []
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        steps = 0
        with PageStreamer(reader, columns, budget=budget, host_cache=host, batch_bytes=batch_bytes,
                          compressed=compressed) as s:
            for _rgs, _batches in s.deliveries():
                steps += 1
            loop = time.perf_counter() - start
        cupy.cuda.Device().synchronize()
        total = time.perf_counter() - start
        st = s.stats
        pages = st.pages_host + st.pages_read + st.pages_cached
        runs.append({"loop_s": loop, "total_s": total, "pages": pages, "steps": steps,
                     "bytes_h2d": st.bytes_h2d, "pages_host": st.pages_host})
    best = min(runs, key=lambda r: r["total_s"])
    return {"host_us_per_page": statistics.median(r["loop_s"] for r in runs) / best["pages"] * 1e6,
            "link_gbps": best["bytes_h2d"] / best["total_s"] / 1e9,
            "median_total_ms": statistics.median(r["total_s"] for r in runs) * 1e3, **best}


def query_rates(db: str, suite: str, names: list[str], options: dict, repeat: int) -> dict:
    out = {}
    with hetdb.connect(db, device="gpu", **options) as con:
        for q in load_queries(suite, names):
            con.sql(q.sql).arrow()
            walls, cpus, stats = [], [], None
            for _ in range(repeat):
                c0, t0 = time.thread_time(), time.perf_counter()
                res = con.sql(q.sql)
                res.arrow()
                walls.append(time.perf_counter() - t0)
                cpus.append(time.thread_time() - c0)
                stats = res.stats
            pages = sum((stats.get("routes") or {}).get("pages", {}).values())
            wall = statistics.median(walls)
            out[q.name] = {"median_ms": wall * 1e3, "bytes_h2d": stats["bytes_host_to_device"],
                           "pages_by_path": (stats.get("routes") or {}).get("pages", {}),
                           "link_gbps": stats["bytes_host_to_device"] / wall / 1e9,
                           "cpu_us_per_page": statistics.median(cpus) / max(1, pages) * 1e6,
                           "deliveries": (stats.get("routes") or {}).get("deliveries", 0)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_suite_arguments(ap)
    ap.add_argument("--batches", default="0,64MB")
    ap.add_argument("--table", default="lineorder")
    ap.add_argument("--columns", default="lo_orderdate,lo_quantity,lo_extendedprice,lo_discount")
    ap.add_argument("--compressed", default="0", help="gpu_compressed_cache values to measure: 0, 1 or 0,1")
    ap.add_argument("--option", action="append", default=[],
                    help="connection option name=value for the queries (e.g. gpu_coprocess=auto)")
    ap.add_argument("--stream", type=int, default=1, help="0: skip the bare stream measurement")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from hetdb.backend.gpu import measure_bandwidth

    pinned = measure_bandwidth(64 << 20)["h2d_pinned_gbps"]
    limit = int(dir_bytes(args.db) * args.limit_fraction) if args.limit_fraction else None
    report: dict = {"db": args.db, "h2d_pinned_gbps": pinned, "gpu_memory_limit": limit, "runs": {}}
    print(f"pinned host->GPU: {pinned:.1f} GB/s; gpu_memory_limit={limit}")
    for text in args.batches.split(","):
        for comp in (bool(int(c)) for c in args.compressed.split(",")):
            batch = parse_bytes(text)
            label = f"gpu_batch_bytes={text} compressed={int(comp)}"
            got = None
            if args.stream:
                got = stream_rate(args.db, args.table, args.columns.split(","), batch, limit, args.repeat, comp)
                print(f"stream {label}: {got['host_us_per_page']:.1f} us/page host, "
                      f"{got['link_gbps']:.1f} GB/s ({got['link_gbps'] / pinned:.0%} of pinned), "
                      f"{got['pages']} pages in {got['steps']} steps, {got['median_total_ms']:.1f} ms")
            options = {"gpu_batch_bytes": batch, "gpu_compressed_cache": comp, **parse_options(args.option)}
            if args.option:
                label += " " + " ".join(args.option)
            if limit:
                options["gpu_memory_limit"] = limit
            queries = query_rates(args.db, args.suite, args.queries.split(","), options, args.repeat)
            for name, q in queries.items():
                print(f"  {name} {label}: {q['median_ms']:.1f} ms, {q['link_gbps']:.1f} GB/s "
                      f"({q['link_gbps'] / pinned:.0%} of pinned), {q['cpu_us_per_page']:.1f} us CPU/page, "
                      f"paths {q['pages_by_path']}, {q['deliveries']} deliveries")
            report["runs"][label] = {"stream": got, "queries": queries}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
