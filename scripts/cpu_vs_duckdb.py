"""hetdb (CPU) vs DuckDB in one process, both at THREADS threads: per query the median of wall and
process CPU time (5 runs after 2 warm-ups). CPU time is the steadier number on a shared machine.

Usage: python scripts/cpu_vs_duckdb.py DB SUITE [THREADS [QUERY ...]]   (DB made by `hetdb generate
SUITE`; the tables are copied into an in-memory DuckDB first; QUERY names like q18: only those)
"""

from __future__ import annotations

import statistics
import sys
import time

import duckdb
from scripts_common import load_into_duckdb

import hetdb
from hetdb.bench.suites import load_queries


def _median(run) -> tuple[float, float]:
    run()
    run()
    wall, cpu = [], []
    for _ in range(5):
        w, c = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    db, suite = sys.argv[1], sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    names = set(sys.argv[4:])
    con = hetdb.connect(db, device="cpu", threads=threads)
    duck = duckdb.connect()
    duck.execute(f"SET threads={threads}")
    load_into_duckdb(con, duck, suite)
    walls, cpus = [], []
    for q in load_queries(suite):
        if names and q.name not in names:
            continue
        h = _median(lambda sql=q.sql: con.sql(sql).arrow())
        d = _median(lambda sql=q.sql: duck.sql(sql).to_arrow_table())
        walls.append(d[0] / h[0])
        cpus.append(d[1] / h[1])
        print(f"{q.name:5} hetdb wall {h[0] * 1e3:7.1f} cpu {h[1] * 1e3:7.1f} | duckdb wall {d[0] * 1e3:7.1f} "
              f"cpu {d[1] * 1e3:7.1f} | DuckDB/hetdb wall {walls[-1]:.2f} cpu {cpus[-1]:.2f}", flush=True)
    print(f"geomean DuckDB/hetdb: wall {statistics.geometric_mean(walls):.2f} cpu {statistics.geometric_mean(cpus):.2f} "
          f"(lowest wall {min(walls):.2f}, cpu {min(cpus):.2f})")


if __name__ == "__main__":
    main()
