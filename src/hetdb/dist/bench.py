"""Shuffle measurement: the SSB or TPC-H queries on N workers with and without compressed shuffles
(and optionally split into logical hosts), reporting per query the exchange bytes (raw Arrow vs on
the wire), messages, encode/decode seconds and the query time.

    python -m hetdb.dist.bench DB {ssb,tpch} --workers 2 4 [--hosts 2] [--repeat 2] [--queries q1 q3]
        [--exchange collective]

Each configuration runs every query ``repeat`` times and keeps the fastest run (its byte counts do
not depend on the run)."""

from __future__ import annotations

import argparse
import json
import time

from hetdb.bench.suites import load_queries

# The repartitioned join of issue 12's measurement: lineitem with orders on the order key, carrying
# o_orderpriority (both sides are shuffled: orders is far past the broadcast limit).
JOIN_SQL = ("select o_orderpriority, count(*) c, sum(l_quantity) q from lineitem join orders "
            "on l_orderkey = o_orderkey group by o_orderpriority")


def _suite(name: str) -> dict[str, str]:
    queries = {q.name: q.sql for q in load_queries(name)}
    if name == "tpch":
        queries["join_lo"] = JOIN_SQL
    return queries


def measure(path: str, suite: str, workers: int, compress: bool, hosts: int, repeat: int,
            names: list[str] | None, exchange: str = "auto") -> list[dict]:
    import hetdb

    opts = {"shuffle_compression": compress, "exchange": exchange}
    if hosts > 1:
        opts["worker_hosts"] = [w * hosts // workers for w in range(workers)]
    rows = []
    with hetdb.connect(path, device="cpu", workers=workers, **opts) as con:
        for q, sql in _suite(suite).items():
            if names and q not in names:
                continue
            best = None
            for _ in range(repeat):
                t0 = time.perf_counter()
                stats = con.sql(sql).stats
                wall = time.perf_counter() - t0
                if best is None or wall < best[0]:
                    best = (wall, stats)
            wall, stats = best
            runs = [s for s in stats["stages"] if not s.get("relay")]
            # messages between the two halves of the workers (the hosts of --hosts 2; in a one-level
            # run on one host: those that would cross if the halves were two hosts)
            half = [w * 2 // workers for w in range(workers)]
            sent = [(s["worker"], m[0], m[4]) for s in stats["stages"] for m in s["messages"]]
            across = [x for x in sent if half[x[0]] != half[x[1]]]
            rows.append({"query": q, "workers": workers, "hosts": max(1, hosts), "compress": compress,
                         "exchange": stats["exchange"], "rows": stats["rows"],
                         "seconds": round(wall, 4),
                         "raw": stats["bytes_shuffled_raw"], "wire": stats["bytes_shuffled"],
                         "messages": stats["messages"], "messages_across_halves": len(across),
                         "bytes_across_halves": sum(x[2] for x in across),
                         "encode_s": round(sum(s["encode_seconds"] for s in runs), 4),
                         "decode_s": round(sum(s["decode_seconds"] for s in runs), 4)})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m hetdb.dist.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("suite", choices=["ssb", "tpch"])
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--hosts", type=int, default=1, help="logical hosts the workers are split into")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--queries", nargs="*")
    ap.add_argument("--modes", nargs="+", default=["off", "on"], choices=["off", "on", "across_hosts"],
                    help="shuffle_compression settings to measure (the first is the baseline)")
    ap.add_argument("--exchange", default="auto", choices=["auto", "object_store", "collective"],
                    help="transport of hash and broadcast exchanges (collective: through a group, as GPU "
                         "workers exchange over NCCL)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    import ray

    ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    rows = []
    for n in args.workers:
        for mode in args.modes:
            compress = {"off": False, "on": True}.get(mode, mode)
            got = measure(args.db, args.suite, n, compress, args.hosts, args.repeat, args.queries, args.exchange)
            rows.extend(got)
            raw, wire = sum(r["raw"] for r in got), sum(r["wire"] for r in got)
            print(f"{args.suite} workers={n} hosts={args.hosts} compression={mode} exchange={got[0]['exchange']}: "
                  f"shuffled raw={raw:,} wire={wire:,} ({raw / max(1, wire):.2f}x) "
                  f"messages={sum(r['messages'] for r in got):,} "
                  f"(between worker halves: {sum(r['messages_across_halves'] for r in got):,} = "
                  f"{sum(r['bytes_across_halves'] for r in got):,} bytes) "
                  f"encode={sum(r['encode_s'] for r in got):.2f}s decode={sum(r['decode_s'] for r in got):.2f}s "
                  f"query time={sum(r['seconds'] for r in got):.2f}s", flush=True)
    base = {"off": False, "on": True}.get(args.modes[0], args.modes[0])
    print(f"{'query':8} {'n':>2} {'mode':>12} {'raw MB':>9} {'wire MB':>9} {'ratio':>6} {'s':>7} {'base s':>7}")
    for r in rows:
        if r["compress"] != base:
            b = next(x for x in rows if x["compress"] == base and x["query"] == r["query"]
                     and x["workers"] == r["workers"])
            print(f"{r['query']:8} {r['workers']:>2} {str(r['compress']):>12} {r['raw'] / 1e6:9.2f} "
                  f"{r['wire'] / 1e6:9.2f} {r['raw'] / max(1, r['wire']):6.2f} {r['seconds']:7.2f} "
                  f"{b['seconds']:7.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    ray.shutdown()


if __name__ == "__main__":
    main()
