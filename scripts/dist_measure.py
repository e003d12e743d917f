"""CPU-worker runs of a suite on a local Ray cluster: hetdb in one process (no workers), hetdb with
workers=N (one thread each), and DuckDB, timed query by query in the same run (round robin, so the
noise of a shared machine hits every configuration alike), every answer checked against DuckDB and
the distributed answers against the one-process ones.

    PYTHONPATH=src python scripts/dist_measure.py DB {ssb,tpch} --workers 1 2 4 --repeat 3 \
        --threads 1 --json out.json [--queries q01 join_lo] [--explain join_lo]

Prints one line per query and configuration (median of ``repeat`` timed runs after one warm-up),
then per configuration the sum of medians and the geometric mean of hetdb/DuckDB time ratios.
``--explain`` prints EXPLAIN ANALYZE of those queries on the largest worker count (bytes sent and
received per exchange and worker). The TPC-H suite gets ``join_lo``: lineitem joined with orders on
the order key carrying o_orderpriority (issue 12's repartitioned join)."""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import pyarrow as pa

from hetdb.bench.compare import compare_tables
from hetdb.bench.datasets import load_into_duckdb
from hetdb.bench.suites import float_tolerances, get_suite, load_queries, order_spec

JOIN_LO = ("select o_orderpriority, count(*) c, sum(l_quantity) q from lineitem join orders "
           "on l_orderkey = o_orderkey group by o_orderpriority")


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal rows in any order (values compared exactly)."""
    def rows(t: pa.Table) -> list:
        return sorted(zip(*(c.to_pylist() for c in t.columns)), key=repr)
    return a.num_rows == b.num_rows and rows(a) == rows(b)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("suite", choices=["ssb", "tpch"])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="threads of DuckDB and of one-process hetdb")
    ap.add_argument("--queries", nargs="*")
    ap.add_argument("--explain", nargs="*", default=[])
    ap.add_argument("--compression", default="across_hosts", help="shuffle_compression of the workers")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import ray

    import hetdb
    from hetdb.storage import Database

    queries = {q.name: q.sql for q in load_queries(args.suite)}
    if args.suite == "tpch":
        queries["join_lo"] = JOIN_LO
    if args.queries:
        queries = {k: v for k, v in queries.items() if k in args.queries}
    compression = {"on": True, "off": False}.get(args.compression, args.compression)
    duck, load_s = load_into_duckdb(Database.open(args.db, create=False), get_suite(args.suite).tables, args.threads)
    print(f"DuckDB loaded in {load_s:.1f} s (threads={args.threads})", flush=True)
    ray.init(num_cpus=max(args.workers), include_dashboard=False, log_to_driver=False)
    cons = {"hetdb": hetdb.connect(args.db, device="cpu", threads=args.threads)}
    for n in args.workers:
        cons[f"w{n}"] = hetdb.connect(args.db, device="cpu", workers=n, shuffle_compression=compression)
    rows = []
    for name, sql in queries.items():
        expected = duck.sql(sql).to_arrow_table()
        ordered, order_by = order_spec(sql)
        tol = float_tolerances(sql, expected.num_columns)
        times: dict[str, list[float]] = {"duckdb": []}
        answers: dict[str, pa.Table] = {}
        stats: dict[str, dict] = {}
        for label, con in cons.items():
            answers[label] = con.sql(sql).arrow()  # warm-up
            times[label] = []
        duck.sql(sql).fetchall()
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            duck.sql(sql).to_arrow_table()
            times["duckdb"].append(time.perf_counter() - t0)
            for label, con in cons.items():
                t0 = time.perf_counter()
                res = con.sql(sql)
                answers[label] = res.arrow()
                times[label].append(time.perf_counter() - t0)
                stats[label] = res.stats
        row = {"query": name, "rows": expected.num_rows}
        for label, ts in times.items():
            row[label] = statistics.median(ts)
            row[label + "_runs"] = ts
            if label == "duckdb":
                continue
            problem = compare_tables(answers[label], expected, ordered, float_rel_tol=tol, order_by=order_by)
            row[label + "_vs_duckdb"] = problem or "ok"
            if label != "hetdb":
                row[label + "_vs_one"] = "identical" if _same(answers[label], answers["hetdb"]) else "differs"
                st = stats[label]
                row[label + "_raw"] = st.get("bytes_shuffled_raw", 0)
                row[label + "_wire"] = st.get("bytes_shuffled", 0)
                row[label + "_messages"] = st.get("messages", 0)
                row[label + "_fallback"] = st.get("dist_fallback", "")
        rows.append(row)
        cells = "  ".join(f"{k}={row[k] * 1000:8.1f}ms" for k in times)
        checks = " ".join(f"{k}:{row[k + '_vs_duckdb']}" + (f"/{row[k + '_vs_one']}" if k != "hetdb" else "")
                          for k in cons)
        print(f"{name:8} {cells}  {checks}", flush=True)
    print(f"\nsuite {args.suite}: {len(rows)} queries, median of {args.repeat} runs; hetdb one process and "
          f"DuckDB threads={args.threads}, workers 1 thread each, shuffle_compression={compression!r}")
    for label in ["duckdb", *cons]:
        total = sum(r[label] for r in rows)
        line = f"{label:7} sum of medians {total:8.3f} s"
        if label != "duckdb":
            ratios = [r[label] / r["duckdb"] for r in rows if r["duckdb"] > 0]
            geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
            ok = sum(r[label + "_vs_duckdb"] == "ok" for r in rows)
            line += f"  geomean time/DuckDB {geo:6.2f}x  answers = DuckDB {ok}/{len(rows)}"
            if label != "hetdb":
                same = sum(r[label + "_vs_one"] == "identical" for r in rows)
                raw = sum(r[label + "_raw"] for r in rows)
                line += (f"  identical to one process {same}/{len(rows)}  shuffled raw {raw / 1e6:.1f} MB "
                         f"wire {sum(r[label + '_wire'] for r in rows) / 1e6:.1f} MB "
                         f"messages {sum(r[label + '_messages'] for r in rows)}")
        print(line, flush=True)
    for name in args.explain:
        sql = queries.get(name) or name
        print(f"\nEXPLAIN ANALYZE {name} on workers={max(args.workers)}:")
        print(cons[f"w{max(args.workers)}"].explain(sql, analyze=True))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    for con in cons.values():
        con.close()
    ray.shutdown()


if __name__ == "__main__":
    main()
