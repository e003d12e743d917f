"""Does a GPU budget drift between runs? One query run N times on one connection under a
gpu_memory_limit: after each run, the bytes it moved host->device and what the device budget, page
cache and operator accounting hold (a run that moves more than the one before it, with nothing else
running, means something held device memory across queries).

    PYTHONPATH=src python scripts/gpu_budget_drift.py DB --suite ssb --queries q4.1 --limit-mib 192 \
        [--runs 8] [--option gpu_batch_bytes=0]
"""

from __future__ import annotations

import argparse

from scripts_common import parse_options

import hetdb
from hetdb.bench.suites import load_queries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q4.1")
    ap.add_argument("--limit-mib", type=int, default=192)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--option", action="append", default=[], help="connection option name=value")
    args = ap.parse_args(argv)
    options = parse_options(args.option)
    wanted = args.queries.split(",")
    queries = [q for q in load_queries(args.suite) if q.name in wanted]
    mib = 1 << 20
    with hetdb.connect(args.db, device="gpu", gpu_memory_limit=args.limit_mib * mib, **options) as con:
        for q in queries:
            for run in range(args.runs):
                res = con.sql(q.sql)
                res.fetchall()
                dev = con._get_engine().device
                cache, mem = dev.cache, dev.memory
                print(f"{q.name} run {run}: h2d {int(res.stats['bytes_host_to_device']) / mib:8.1f} MiB | "
                      f"budget used {dev.budget.used_bytes / mib:7.1f} | cache {cache.used_bytes / mib:7.1f} "
                      f"MiB in {len(cache)} pages (pinned {cache.pinned_bytes() / mib:.1f}, kept "
                      f"{cache.kept_bytes() / mib:.1f}, reserved {cache.reserved_bytes / mib:.1f}) | operators "
                      f"{mem._used / mib:.1f} over {mem._over / mib:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
