"""What a second `make demo` measures, with process CPU time beside the wall time: import and
connect, then the 13 SSB queries once each in this fresh process (kernels from the on-disk cache
when it is warm). Usage: python scripts/demo_timing.py DB [THREADS]"""

from __future__ import annotations

import sys
import time

w0, c0 = time.perf_counter(), time.process_time()
import hetdb  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402


def main() -> None:
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    con = hetdb.connect(sys.argv[1], device="cpu", threads=threads)
    w1, c1 = time.perf_counter(), time.process_time()
    wall = cpu = 0.0
    parts = []
    for q in load_queries("ssb"):
        w, c = time.perf_counter(), time.process_time()
        con.sql(q.sql).arrow()
        dw, dc = time.perf_counter() - w, time.process_time() - c
        wall += dw
        cpu += dc
        parts.append(f"{q.name} {dw * 1e3:.0f}/{dc * 1e3:.0f}")
    print(f"import+connect {w1 - w0:.2f} s (cpu {c1 - c0:.2f} s); 13 queries wall {wall:.2f} s cpu {cpu:.2f} s; "
          "per query wall/cpu ms: " + ", ".join(parts))


if __name__ == "__main__":
    main()
