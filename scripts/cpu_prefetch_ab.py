"""Compiled CPU loops with and without the prefetching lookup passes (codegen/probe_prefetch.py), in
one process, runs alternating, per query the best of N.

Usage: python scripts/cpu_prefetch_ab.py DB SUITE THREADS ROUNDS [QUERY ...]

"off" raises the build size from which a probe is prefetched (compiled_cpu_kernels.PREFETCH_BYTES)
past any build, "on" keeps the default; "residual" is "on" with pipelines compiled whatever the size
of the builds beside an inner join's residual (compiled_cpu._RESIDUAL_BUILD_ROWS: TPC-H q07's orders
pipeline runs operator at a time otherwise). The generated loops are dropped between modes so each
query compiles its own (cached on disk after the first round)."""

from __future__ import annotations

import sys
import time

import hetdb
from hetdb.bench.suites import load_queries
from hetdb.exec import compiled_cpu, compiled_cpu_kernels


def main() -> None:
    db, suite, threads, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    names = set(sys.argv[5:])
    queries = [q for q in load_queries(suite) if not names or q.name in names]
    default = compiled_cpu_kernels.PREFETCH_BYTES
    residual = compiled_cpu._RESIDUAL_BUILD_ROWS
    modes = (("on", default, residual), ("off", 1 << 62, residual), ("residual", default, 1 << 62))
    best: dict[tuple[str, str], float] = {}
    with hetdb.connect(db, device="cpu", threads=threads) as con:
        for _ in range(rounds):
            for mode, limit, rows in modes:
                compiled_cpu_kernels.PREFETCH_BYTES = limit
                compiled_cpu._RESIDUAL_BUILD_ROWS = rows
                compiled_cpu_kernels._SPEC_KERNELS.clear()
                for q in queries:
                    con.sql(q.sql).arrow()  # the plan's loops for this mode
                    t0 = time.perf_counter()
                    con.sql(q.sql).arrow()
                    ms = (time.perf_counter() - t0) * 1e3
                    key = (q.name, mode)
                    best[key] = min(best.get(key, ms), ms)
    compiled_cpu_kernels.PREFETCH_BYTES = default
    compiled_cpu._RESIDUAL_BUILD_ROWS = residual
    for q in queries:
        on, off, res = (best[(q.name, m)] for m, _, _ in modes)
        print(f"{q.name:6s} threads={threads} prefetch on {on:8.1f} ms  off {off:8.1f} ms  off/on {off / on:5.2f}x"
              f"  | residual compiled {res:8.1f} ms  on/residual {on / res:5.2f}x", flush=True)


if __name__ == "__main__":
    main()
