"""Effective parallelism of CPU queries: wall time and process CPU time per query at several thread
counts (CPU time / wall time = cores kept busy). Usage: python scripts/cpu_utilization.py DB SUITE T1,T2,..."""

import sys
import time

import hetdb
from hetdb.bench.suites import load_queries


def main() -> None:
    db, suite, threads = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3].split(",")]
    queries = load_queries(suite, None)
    for t in threads:
        con = hetdb.connect(db, device="cpu", threads=t)
        for q in queries:
            con.sql(q.sql).arrow()
            best = None
            for _ in range(3):
                w0, c0 = time.perf_counter(), time.process_time()
                con.sql(q.sql).arrow()
                w, c = time.perf_counter() - w0, time.process_time() - c0
                if best is None or w < best[0]:
                    best = (w, c)
            w, c = best
            print(f"threads={t:2d} {q.name:6s} wall {w * 1e3:8.1f} ms  cpu {c * 1e3:8.1f} ms  busy cores {c / w:5.2f}",
                  flush=True)
        con.close()


if __name__ == "__main__":
    main()
