"""Window-heavy workload over TPC-H orders (top-3 per customer, running sum, lag, moving average,
global rank): hetdb (CPU, 2 threads) vs DuckDB (2 threads) in one run, answers compared.

Usage: hetdb generate tpch DB --sf 1; python scripts/bench_window.py DB
"""

from __future__ import annotations

import statistics
import sys
import time

import duckdb

import hetdb
from hetdb.bench.compare import compare_tables

ORDER = "PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey"
QUERIES = {
    "top3_per_customer": "SELECT o_custkey, o_orderkey, o_totalprice FROM orders QUALIFY row_number() "
                         "OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC, o_orderkey) <= 3",
    "running_sum": "SELECT count(*), sum(rs) FROM (SELECT sum(o_totalprice) OVER "
                   f"({ORDER} ROWS UNBOUNDED PRECEDING) AS rs FROM orders) t",
    "lag_delta": "SELECT count(*), avg(delta) FROM (SELECT o_totalprice - lag(o_totalprice) OVER "
                 f"({ORDER}) AS delta FROM orders) t",
    "moving_avg_7": "SELECT count(*), sum(ma) FROM (SELECT avg(o_totalprice) OVER "
                    f"({ORDER} ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) AS ma FROM orders) t",
    "rank_global": "SELECT count(*) FROM (SELECT rank() OVER (ORDER BY o_orderdate) AS r FROM orders) t "
                   "WHERE r <= 100000",
}


def main(path: str) -> None:
    con = hetdb.connect(path, device="cpu", threads=2)
    duck = duckdb.connect()
    duck.execute("SET threads TO 2")
    duck.register("_o", con.table("orders").arrow(["o_orderkey", "o_custkey", "o_totalprice", "o_orderdate"]))
    duck.execute("CREATE TABLE orders AS SELECT * FROM _o")
    duck.unregister("_o")
    for name, q in QUERIES.items():
        a = con.sql(q).arrow()
        diff = compare_tables(a, duck.sql(q).to_arrow_table(), False)
        th, td = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            con.sql(q).arrow()
            th.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            duck.sql(q).to_arrow_table()
            td.append(time.perf_counter() - t0)
        h, d = statistics.median(th), statistics.median(td)
        print(f"{name:20s} rows={a.num_rows:>8,} same={'yes' if diff is None else diff} "
              f"hetdb={h:.3f}s duckdb={d:.3f}s duckdb/hetdb={d / h:.2f}x", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tpch-sf1")
