"""Compiled CPU pipelines against operator-at-a-time, per query and thread count: wall time, process
CPU time and the busy cores (CPU / wall), best of ``REPEAT`` hot runs, DuckDB with the same threads.
Usage: python scripts/cpu_compile_compare.py DB SUITE T1,T2,.. [REPEAT] [duckdb] [compiled-only]"""

import sys
import time

import hetdb
from hetdb.bench.datasets import load_into_duckdb
from hetdb.bench.suites import get_suite, load_queries


def _best(run, repeat: int) -> tuple[float, float]:
    run()
    best = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        run()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if best is None or w < best[0]:
            best = (w, c)
    return best


def main() -> None:
    db, suite, threads = sys.argv[1], sys.argv[2], [int(t) for t in sys.argv[3].split(",")]
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    queries = load_queries(suite, None)
    duck = None
    if "duckdb" in sys.argv[5:]:
        con = hetdb.connect(db, device="cpu")
        duck, _ = load_into_duckdb(con.db, get_suite(suite).tables, threads=max(threads))
    for t in threads:
        cons = {mode: hetdb.connect(db, device="cpu", threads=t, cpu_compile=mode == "compiled")
                for mode in (("compiled",) if "compiled-only" in sys.argv[5:] else ("compiled", "operators"))}
        if duck is not None:
            duck.execute(f"SET threads={t}")
        for q in queries:
            line = f"threads={t:2d} {q.name:6s}"
            for mode, con in cons.items():
                w, c = _best(lambda con=con, q=q: con.sql(q.sql).arrow(), repeat)
                line += f"  {mode} {w * 1e3:7.1f} ms ({c / w:4.1f} cores)"
            if duck is not None:
                w, _ = _best(lambda q=q: duck.execute(q.sql).fetchall(), repeat)
                line += f"  duckdb {w * 1e3:7.1f} ms"
            print(line, flush=True)
        for con in cons.values():
            con.close()


if __name__ == "__main__":
    main()
