"""First-query latency of a fresh process: import + connect, the first SSB query (kernels loaded from
the on-disk cache, or compiled when it is cold) and the same query again.
Usage: python scripts/first_query.py DB [THREADS]"""

import os
import sys
import time

w0, c0 = time.perf_counter(), time.process_time()
import hetdb  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402


def main() -> None:
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
    con = hetdb.connect(sys.argv[1], device="cpu", threads=threads)
    q = load_queries("ssb")[0]
    w1, c1 = time.perf_counter(), time.process_time()
    con.sql(q.sql).arrow()
    w2, c2 = time.perf_counter(), time.process_time()
    con.sql(q.sql).arrow()
    w3, c3 = time.perf_counter(), time.process_time()
    print(f"import+connect {w1 - w0:.2f} s (cpu {c1 - c0:.2f} s); first query {q.name} {w2 - w1:.2f} s "
          f"(cpu {c2 - c1:.2f} s); again {1e3 * (w3 - w2):.0f} ms (cpu {1e3 * (c3 - c2):.0f} ms); "
          f"kernel cache {os.environ.get('NUMBA_CACHE_DIR')}")


if __name__ == "__main__":
    main()
