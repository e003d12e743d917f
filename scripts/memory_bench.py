"""Peak RSS against host_memory_limit on the CPU: a 20M-key GROUP BY, a 20M x 20M equi-join, a
skewed many-to-many join and a window over 20M rows, each at several limits and without one, every run
in a fresh subprocess
(peak RSS: the child's VmHWM), plus DuckDB's time for the same query.

    PYTHONPATH=src python scripts/memory_bench.py --db /tmp/membench --limits 256MB 1GB none
    PYTHONPATH=src python scripts/memory_bench.py --db /tmp/membench --queries groupby_20M_keys --option cpu_compile=false

Prints the baseline (peak RSS of a child whose query keeps nothing: interpreter, libraries, compiled
loops), then one line per (query, limit): seconds, peak RSS (and over the baseline), accounted peak,
spilled partitions, rows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROWS = 20_000_000
SKEW_ROWS = 2_000_000
SKEW_KEYS = 200_000
HOT_ROWS = 10_000

BASELINE = "SELECT count(*) FROM s1 WHERE k = -1"  # a query over a small table that keeps no row
QUERIES = {
    "groupby_20M_keys": "SELECT count(*), sum(s) FROM (SELECT k, sum(v) AS s FROM g20 GROUP BY k)",
    "join_20Mx20M": "SELECT count(*), sum(a.v + b.v) FROM j1 a JOIN j2 b ON a.k = b.k",
    "skewed_many_to_many": "SELECT count(*), sum(a.v) FROM s1 a JOIN s2 b ON a.k = b.k",
    # 1,000 window partitions of 20,000 rows: spilled by PARTITION BY hash under a small limit
    "window_20M_rows": "SELECT count(*), sum(rn) FROM (SELECT row_number() OVER (PARTITION BY v ORDER BY k) AS rn "
                       "FROM g20)",
}

CHILD = """
import json, sys, time
import hetdb
path, limit, sql, options = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
con = hetdb.connect(path, device="cpu", host_memory_limit=None if limit == "none" else limit, **options)
t = time.perf_counter()
out = {}
try:
    r = con.sql(sql)
    out.update(rows=[list(map(str, x)) for x in r.fetchall()], peak=r.stats["peak_host_bytes"],
               spilled=r.stats["spilled_partitions"])
except hetdb.OutOfMemoryError as e:
    out.update(error=str(e))
out["seconds"] = time.perf_counter() - t
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child would report the RSS the
# parent (holding the generated tables) had when it forked
hwm = next(x for x in open("/proc/self/status") if x.startswith("VmHWM"))
out["rss"] = int(hwm.split()[1]) * 1024
print("RESULT " + json.dumps(out))
"""


def tables():
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(1)
    yield "g20", pa.table({"k": rng.permutation(ROWS).astype(np.int64),
                           "v": rng.integers(0, 1000, ROWS, dtype=np.int64)})
    for name in ("j1", "j2"):
        yield name, pa.table({"k": rng.permutation(ROWS).astype(np.int64),
                              "v": rng.integers(0, 1000, ROWS, dtype=np.int64)})
    for name in ("s1", "s2"):
        k = rng.integers(1, SKEW_KEYS, SKEW_ROWS, dtype=np.int64)
        k[:HOT_ROWS] = 0  # one hot key: HOT_ROWS x HOT_ROWS pairs
        yield name, pa.table({"k": rng.permutation(k), "v": rng.integers(0, 1000, SKEW_ROWS, dtype=np.int64)})


def make_db(path: str) -> None:
    from hetdb import types as T
    from hetdb.storage import Database
    from hetdb.storage.format import ColumnSpec

    db = Database.open(path, create=True)
    for name, table in tables():
        if db.has_table(name):
            continue
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with db.create_table(name, schema) as w:
            w.append_arrow(table)


def duckdb_seconds(path: str, sql: str) -> float:
    import duckdb

    from hetdb.connection import TableHandle
    from hetdb.storage import Database

    db = Database.open(path)
    con = duckdb.connect()
    for name in ("g20", "j1", "j2", "s1", "s2"):
        con.register(name, TableHandle(db.table(name)).arrow())
    t = time.perf_counter()
    con.execute(sql).fetchall()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--db", required=True)
    ap.add_argument("--limits", nargs="+", default=["256MB", "1GB", "none"])
    ap.add_argument("--queries", nargs="+", default=list(QUERIES))
    ap.add_argument("--option", action="append", default=[], metavar="NAME=JSON",
                    help="a connection option for every run, e.g. cpu_compile=false or threads=4")
    args = ap.parse_args()
    options = {}
    for item in args.option:
        name, _, value = item.partition("=")
        options[name] = json.loads(value)
    make_db(args.db)
    env = dict(os.environ)

    def child(limit: str, sql: str) -> tuple[dict | None, str]:
        proc = subprocess.run([sys.executable, "-c", CHILD, args.db, limit, sql, json.dumps(options)],
                              capture_output=True, text=True, env=env)
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not line:
            return None, f"FAILED rc={proc.returncode}: {proc.stderr[-500:]}"
        return json.loads(line[0][len("RESULT "):]), ""

    # what a child holds before any query data: the interpreter, hetdb, NumPy/pyarrow, Numba's compiled
    # loops (the limit bounds the engine's memory, not the process's code)
    base, err = child("none", BASELINE)
    base_rss = base["rss"] if base else 0
    print(f"{'baseline (' + BASELINE + ')':22s}              peak RSS={base_rss / 2**20:7.0f} MiB {err}", flush=True)
    for q in args.queries:
        sql = QUERIES[q]
        for limit in args.limits:
            r, err = child(limit, sql)
            if r is None:
                print(f"{q:22s} limit={limit:6s} {err}", flush=True)
                continue
            what = f"error: {r['error'][:120]}" if "error" in r else \
                f"accounted peak={r['peak'] / 2**20:.1f} MiB spilled={r['spilled']} rows={r['rows']}"
            print(f"{q:22s} limit={limit:6s} {r['seconds']:7.1f} s  peak RSS={r['rss'] / 2**20:7.0f} MiB "
                  f"(baseline + {(r['rss'] - base_rss) / 2**20:.0f})  {what}", flush=True)
        print(f"{q:22s} duckdb       {duckdb_seconds(args.db, sql):7.1f} s", flush=True)


if __name__ == "__main__":
    main()
