"""CPU+GPU co-processing against the GPU alone, on scans under a budget (pages from the pinned host tier).

    PYTHONPATH=src python scripts/gpu_coprocess_rate.py DB [--suite ssb] [--queries q1.1,q2.1,q3.1,q4.1]
        [--limit-fraction 0.1] [--modes off,auto,on] [--repeat 5] [--threads N] [--json OUT.json]

Per query and ``gpu_coprocess`` mode, on one connection each (``gpu_memory_limit`` at
``--limit-fraction`` of the database's bytes on disk, so the fact table streams from the pinned host
tier): the median wall time of ``--repeat`` runs after one warm-up run, the answer compared with the
mode "off" answer, and the co-processing line of the last run's EXPLAIN ANALYZE (row groups each side
took and the CPU's and GPU's time per row group measured in the scan, or why it was not
co-processed). The CPU rates measured by one mode's runs carry over to the next (process-wide, as
in a long-lived process).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time

from scripts_common import add_suite_arguments, dir_bytes

import hetdb
from hetdb.bench.suites import load_queries


def _notes(plan: str) -> list[str]:
    return sorted({m.group(0) for m in re.finditer(r"\((?:CPU\+GPU co-processing|not co-processed)[^)]*\)", plan)})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_suite_arguments(ap)
    ap.add_argument("--modes", default="off,auto,on")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    limit = int(dir_bytes(args.db) * args.limit_fraction) if args.limit_fraction else None
    queries = load_queries(args.suite, args.queries.split(","))
    report: dict = {"db": args.db, "gpu_memory_limit": limit, "runs": {}}
    answers: dict[str, list] = {}
    print(f"gpu_memory_limit={limit}")
    for mode in args.modes.split(","):
        options: dict = {"gpu_coprocess": mode}
        if limit:
            options["gpu_memory_limit"] = limit
        if args.threads:
            options["threads"] = args.threads
        with hetdb.connect(args.db, device="gpu", **options) as con:
            for q in queries:
                rows = sorted(con.sql(q.sql).fetchall(), key=repr)
                walls = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    con.sql(q.sql).fetchall()
                    walls.append(time.perf_counter() - t0)
                same = answers.setdefault(q.name, rows) == rows
                notes = _notes(con.explain(q.sql, analyze=True))
                ms = statistics.median(walls) * 1e3
                report["runs"][f"{q.name} {mode}"] = {"median_ms": ms, "walls_ms": [w * 1e3 for w in walls],
                                                      "same_answer": same, "notes": notes}
                print(f"{q.name} gpu_coprocess={mode}: {ms:.1f} ms (runs {', '.join(f'{w * 1e3:.1f}' for w in walls)})"
                      f"{'' if same else ' ANSWER DIFFERS FROM off'} {' '.join(notes)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
