"""EXPLAIN ANALYZE of suite queries after one untimed run (hot), on one connection.

    PYTHONPATH=src python scripts/gpu_explain.py DB --suite tpch --queries q02,q10 [--device gpu]
        [--limit-fraction F] [--option name=value ...]
"""

from __future__ import annotations

import argparse
import time

from scripts_common import dir_bytes, parse_options

import hetdb
from hetdb.bench.suites import load_queries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="tpch")
    ap.add_argument("--queries", default="q01")
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--limit-fraction", type=float, default=None)
    ap.add_argument("--option", action="append", default=[])
    args = ap.parse_args(argv)
    options = parse_options(args.option)
    if args.limit_fraction is not None:
        options["gpu_memory_limit"] = int(dir_bytes(args.db) * args.limit_fraction)
    with hetdb.connect(args.db, device=args.device, **options) as con:
        for q in load_queries(args.suite, args.queries.split(",")):
            con.sql(q.sql).arrow()
            t = time.perf_counter()
            con.sql(q.sql).arrow()
            took = time.perf_counter() - t
            print(f"== {q.name} {options}: hot {took * 1e3:.1f} ms")
            print(con.explain(q.sql, analyze=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
