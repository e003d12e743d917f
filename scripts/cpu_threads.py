"""hetdb's CPU engine vs DuckDB at several thread counts, in one process: the tables are loaded into an
in-memory DuckDB once, then for each thread count both engines run every query (one warm-up, then
REPEAT timed runs, median wall time) at that many threads, and hetdb's answer is checked against
DuckDB's with the benchmark's comparison. Prints per query and thread count the two times and the
speed-up, the geomean per thread count, and hetdb's and DuckDB's scaling from the first thread count to
each of the others.

Usage: python scripts/cpu_threads.py DB SUITE [--threads 16,4,1] [--repeat 3,2,1] [--queries q1.1,...]
       [--json OUT.json]
(DB made by `hetdb generate SUITE`; --repeat gives one count per thread count or one for all.)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import duckdb
from scripts_common import SUITE_TABLES, load_into_duckdb

import hetdb
from hetdb.bench.compare import compare_tables
from hetdb.bench.suites import float_tolerances, load_queries, order_spec


def _timed(run, repeat: int) -> tuple[float, object]:
    out = run()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("suite", choices=sorted(SUITE_TABLES))
    ap.add_argument("--threads", default="16,4,1")
    ap.add_argument("--repeat", default="3")
    ap.add_argument("--queries", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    reps = [int(r) for r in a.repeat.split(",")]
    reps = reps * len(threads) if len(reps) == 1 else reps
    names = set(filter(None, a.queries.split(",")))
    queries = [q for q in load_queries(a.suite) if not names or q.name in names]

    duck = duckdb.connect()
    t0 = time.perf_counter()
    loader = hetdb.connect(a.db, device="cpu")
    load_into_duckdb(loader, duck, a.suite)
    loader.close()
    print(f"DuckDB {duckdb.__version__} loaded {a.suite} in {time.perf_counter() - t0:.1f} s", flush=True)

    res: dict[int, dict[str, dict]] = {}
    for n, rep in zip(threads, reps):
        duck.execute(f"SET threads={n}")
        con = hetdb.connect(a.db, device="cpu", threads=n)
        res[n] = {}
        for q in queries:
            d, expected = _timed(lambda sql=q.sql: duck.sql(sql).to_arrow_table(), rep)
            try:
                h, got = _timed(lambda sql=q.sql, c=con: c.sql(sql).arrow(), rep)
                ordered, order_by = order_spec(q.sql)
                bad = compare_tables(got, expected, ordered, float_rel_tol=float_tolerances(q.sql, expected.num_columns),
                                     order_by=order_by)
            except Exception as e:  # a failing query is reported, the run goes on
                h, bad = float("nan"), f"{type(e).__name__}: {e}"
            res[n][q.name] = {"hetdb_s": h, "duckdb_s": d, "ok": bad is None, "check": bad}
            print(f"t{n:<3} {q.name:5} {'ok ' if bad is None else 'BAD'} hetdb {h * 1e3:9.1f} ms  DuckDB "
                  f"{d * 1e3:9.1f} ms  speed-up {d / h:5.2f}x" + (f"  {bad[:120]}" if bad else ""), flush=True)
        con.close()
        ok = [r for r in res[n].values() if r["ok"]]
        sp = [r["duckdb_s"] / r["hetdb_s"] for r in ok]
        low = min(res[n].items(), key=lambda kv: kv[1]["duckdb_s"] / kv[1]["hetdb_s"] if kv[1]["ok"] else 0)
        print(f"threads {n}: {len(ok)}/{len(queries)} correct, geomean speed-up over DuckDB "
              f"{statistics.geometric_mean(sp):.2f}x (lowest {low[0]} "
              f"{low[1]['duckdb_s'] / low[1]['hetdb_s']:.2f}x); hetdb geomean "
              f"{1e3 * statistics.geometric_mean([r['hetdb_s'] for r in ok]):.1f} ms, DuckDB "
              f"{1e3 * statistics.geometric_mean([r['duckdb_s'] for r in ok]):.1f} ms", flush=True)
    lo = min(threads)
    for n in threads:
        if n == lo:
            continue
        hs = [res[lo][q]["hetdb_s"] / res[n][q]["hetdb_s"] for q in res[n] if res[n][q]["ok"] and res[lo][q]["ok"]]
        ds = [res[lo][q]["duckdb_s"] / res[n][q]["duckdb_s"] for q in res[n]]
        print(f"scaling {lo} -> {n} threads: hetdb geomean {statistics.geometric_mean(hs):.2f}x "
              f"({min(hs):.1f}-{max(hs):.1f}x per query), DuckDB {statistics.geometric_mean(ds):.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"suite": a.suite, "db": a.db, "duckdb": duckdb.__version__, "results": res}, f, indent=1)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
