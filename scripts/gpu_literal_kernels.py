"""CUDA modules compiled when the 13 SSB queries run with other literal values (literals are kernel
parameters: codegen/expr_cuda.literal_params), and the hot time of each value set.

    PYTHONPATH=src python3 scripts/gpu_literal_kernels.py SSB_DB [--runs 3] [--fresh-cache] [--option k=v]

One GPU connection (with ``--fresh-cache`` a new ``HETDB_KERNEL_CACHE``: every module this process needs
is compiled, none comes from an earlier run's disk cache). Per query: set A (the suite's literals)
cold, set A again (over the pages it left in the device cache: a hot scan has kernels of its own),
then set B (``SSB_VARIANTS``: other years, discounts, quantities, regions, brands, cities) for the
first time, each with the CUDA modules it made (NVRTC compiles, their seconds, and loads from the
disk cache), then ``--runs`` hot runs of each set alternating (median ms).
Set B should compile nothing unless its plan differs (a join order or the columns a dense kernel
loads first follow the data the values select: the line says so by its compile count). The answers
of the two sets are not compared here (tests/exec/test_gpu_literal_kernels.py compares them with
DuckDB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

# per SSB query: (literal in the suite's text, its replacement); tests/exec/test_gpu_literal_kernels.py
# uses them too
SSB_VARIANTS = {
    "q1.1": [("1993", "1995"), ("between 1 and 3", "between 2 and 4"), ("< 25", "< 30")],
    "q1.2": [("199401", "199502"), ("between 4 and 6", "between 3 and 5"), ("between 26 and 35", "between 20 and 30")],
    "q1.3": [("= 6", "= 9"), ("1994", "1995"), ("between 5 and 7", "between 4 and 6"),
             ("between 36 and 40", "between 30 and 40")],
    "q2.1": [("'MFGR#12'", "'MFGR#13'"), ("'AMERICA'", "'ASIA'")],
    "q2.2": [("'MFGR#2221'", "'MFGR#2231'"), ("'MFGR#2228'", "'MFGR#2238'"), ("'ASIA'", "'EUROPE'")],
    "q2.3": [("'MFGR#2239'", "'MFGR#2221'"), ("'EUROPE'", "'AMERICA'")],
    "q3.1": [("'ASIA'", "'EUROPE'"), ("1992", "1993"), ("1997", "1996")],
    "q3.2": [("'UNITED STATES'", "'CHINA'"), ("1992", "1993"), ("1997", "1998")],
    "q3.3": [("'UNITED KI1'", "'UNITED KI2'"), ("'UNITED KI5'", "'UNITED KI3'"), ("1992", "1994")],
    "q3.4": [("'UNITED KI1'", "'UNITED KI2'"), ("'UNITED KI5'", "'UNITED KI3'"), ("'Dec1997'", "'Jan1996'")],
    "q4.1": [("'AMERICA'", "'EUROPE'"), ("'MFGR#1'", "'MFGR#3'")],
    "q4.2": [("1997", "1995"), ("1998", "1996"), ("'MFGR#2'", "'MFGR#4'")],
    "q4.3": [("1997", "1992"), ("'MFGR#14'", "'MFGR#22'"), ("'UNITED STATES'", "'CHINA'")],
}


def variant(name: str, sql: str) -> str:
    """``sql`` (SSB query ``name``) with SSB_VARIANTS' other literal values."""
    for old, new in SSB_VARIANTS[name]:
        if old not in sql:
            raise ValueError(f"{name}: {old!r} is not in the query")
        sql = sql.replace(old, new)
    return sql


class NvrtcClock:
    """NVRTC compiles and their seconds in this process (backend/gpu/compile._compile_cubin)."""

    def __init__(self) -> None:
        from hetdb.backend.gpu import compile as C

        self.count, self.seconds = 0, 0.0
        inner = C._compile_cubin

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                self.count += 1
                self.seconds += time.perf_counter() - t

        C._compile_cubin = timed

    def snapshot(self) -> tuple[int, float]:
        return self.count, self.seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default="")
    ap.add_argument("--fresh-cache", action="store_true", help="compile into a new, empty kernel cache")
    ap.add_argument("--option", action="append", default=[], help="connection option name=value")
    args = ap.parse_args(argv)
    if args.fresh_cache:
        os.environ["HETDB_KERNEL_CACHE"] = tempfile.mkdtemp(prefix="hetdb-kernels-")  # (read at each compile)
    from scripts_common import parse_options

    import hetdb
    from hetdb.backend.gpu.compile import compile_counts
    from hetdb.bench.suites import load_queries

    clock = NvrtcClock()
    queries = load_queries("ssb", [q for q in args.queries.split(",") if q] or None)
    from hetdb.backend.gpu.compile import cache_dir

    print(f"{len(queries)} SSB queries on {args.db}, kernel cache {cache_dir()}", flush=True)
    total = {"A": [0, 0.0, 0], "B": [0, 0.0, 0]}
    shared = 0
    rows = []
    with hetdb.connect(args.db, device="gpu", **parse_options(args.option)) as con:
        for q in queries:
            sets = {"A": q.sql, "B": variant(q.name, q.sql)}
            cold = {}
            # A, A again (over the pages it left in the device cache: the hot path's kernels), then B
            for key, sql in (("A", sets["A"]), ("A2", sets["A"]), ("B", sets["B"])):
                c0, s0 = clock.snapshot()
                d0 = compile_counts()["disk"]
                t = time.perf_counter()
                n = con.sql(sql).arrow().num_rows
                ms = (time.perf_counter() - t) * 1e3
                c1, s1 = clock.snapshot()
                d1 = compile_counts()["disk"]
                cold[key] = (ms, c1 - c0, s1 - s0, n, d1 - d0)
                part = total["B" if key == "B" else "A"]
                part[0] += c1 - c0
                part[1] += s1 - s0
                part[2] += d1 - d0
            hot: dict[str, list[float]] = {"A": [], "B": []}
            for _ in range(args.runs):
                for key, sql in sets.items():
                    t = time.perf_counter()
                    con.sql(sql).arrow()
                    hot[key].append((time.perf_counter() - t) * 1e3)
            shared += cold["B"][1] == cold["B"][4] == 0
            rows.append((q.name, cold, {k: statistics.median(v) for k, v in hot.items()}))
            a, a2, b = cold["A"], cold["A2"], cold["B"]
            print(f"{q.name}: A cold {a[0]:8.1f} ms {a[1]:2d} compiles {a[2]:5.2f} s {a[4]:2d} disk ({a[3]} rows), "
                  f"again {a2[0]:7.1f} ms {a2[1]:2d} compiles {a2[4]:2d} disk | "
                  f"B first {b[0]:8.1f} ms {b[1]:2d} compiles {b[2]:5.2f} s {b[4]:2d} disk ({b[3]} rows) | hot A "
                  f"{rows[-1][2]['A']:7.2f} ms B {rows[-1][2]['B']:7.2f} ms", flush=True)
    print(f"set A: {total['A'][0]} NVRTC compiles, {total['A'][1]:.2f} s, {total['A'][2]} disk loads; set B: "
          f"{total['B'][0]} compiles, {total['B'][1]:.2f} s, {total['B'][2]} disk loads; {shared}/{len(queries)} "
          "queries loaded no module for set B; "
          f"modules {compile_counts()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
