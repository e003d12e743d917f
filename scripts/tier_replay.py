"""Replay the SSB queries' GPU page accesses through the GPU tier under several policies and budgets
(no GPU needed): link bytes per query.

    PYTHONPATH=src python scripts/tier_replay.py DB [--sf-from 1 --sf-to 20] [--runs 2]
        [--fractions 0.1,0.25,0.5] [--compressed 0|1] [--order bench|suite] [--admission reuse|first]

DB: an SSB database (``hetdb generate ssb --sf 1 DB``). ``--sf-to`` scales the traced page sizes
to that scale factor from the manifest (cache/trace.py). The budget is a fraction of the data's
bytes on disk, as ``scripts/gpu-bench.sh ssb-gpu-limit`` sets it. ``--order bench`` runs each
query ``--runs`` times in a row (hetdb bench's hot mode: a warm-up and the timed repeats);
``--order suite`` runs the whole suite ``--runs`` times.
"""

from __future__ import annotations

import argparse
import sys

import hetdb
from hetdb.bench.suites import load_queries
from hetdb.cache.replay import POLICIES, replay
from hetdb.cache.trace import data_bytes, scale, ssb_factors, suite_trace, table_rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--sf-from", type=float, default=1.0)
    ap.add_argument("--sf-to", type=float, default=None)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--fractions", default="0.1,0.25,0.5")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--compressed", type=int, choices=(0, 1), default=None,
                    help="pages kept compressed on the GPU (default: gpu_compressed_cache's default, on)")
    ap.add_argument("--order", choices=("bench", "suite"), default="bench")
    ap.add_argument("--per-query", action="store_true", help="a table of link MiB per query")
    ap.add_argument("--admission", default="reuse", choices=("reuse", "first"),
                    help="gpu_cache_admission replayed (default: the connection's default, reuse)")
    args = ap.parse_args(argv)

    con = hetdb.connect(args.db, device="cpu")
    queries = [(q.name, q.sql) for q in load_queries("ssb")]
    trace = suite_trace(con, queries, compressed=None if args.compressed is None else bool(args.compressed))
    factors = ssb_factors(args.sf_from, args.sf_to) if args.sf_to else {}
    if factors:
        trace = scale(trace, table_rows(con), factors)
    data = data_bytes(con, factors=factors)
    if args.order == "bench":
        runs = [q for q in trace for _ in range(args.runs)]
    else:
        runs = [q for _ in range(args.runs) for q in trace]
    referenced = sum(p.link for p in runs[0].pages())
    print(f"data on disk {data / 2**20:,.1f} MiB; {len(runs)} query runs; "
          f"{sum(len(q.pages()) for q in runs):,} page accesses; q1.1 moves {referenced / 2**20:,.1f} MiB "
          f"uncached")
    policies = args.policies.split(",")
    for fraction in (float(f) for f in args.fractions.split(",")):
        limit = int(data * fraction)
        results = {p: replay(runs, limit, p, admission=args.admission) for p in policies}
        print(f"\n## gpu_memory_limit {fraction:.0%} of the data = {limit / 2**20:,.1f} MiB "
              f"(cache {limit / 2 / 2**20:,.1f} MiB)")
        print("policy   total link MiB   of LRU   resident pages at the end   replay s")
        lru = results.get("lru")
        for p, r in results.items():
            rel = f"{r.total_link_bytes / lru.total_link_bytes:7.1%}" if lru and lru.total_link_bytes else "      -"
            print(f"{p:8s} {r.total_link_bytes / 2**20:14,.1f}   {rel}   {len(r.cache):25d}   {r.seconds:8.2f}")
        if args.per_query:
            names = list(dict.fromkeys(q.name for q in runs))
            print(f"link MiB per query, summed over its {args.runs} runs; then admitted/evicted/bypassed "
                  f"pages of {policies[0]}")
            print("query  " + "  ".join(f"{p:>9s}" for p in policies))
            for name in names:
                idx = [i for i, q in enumerate(runs) if q.name == name]
                first = results[policies[0]]
                decisions = [sum(first.decisions[i][j] for i in idx) for j in range(3)]
                print(f"{name:6s} " + "  ".join(f"{sum(results[p].link_bytes[i] for i in idx) / 2**20:9.1f}"
                                                for p in policies) + "   " + "/".join(map(str, decisions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
