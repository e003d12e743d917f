"""Measurements of issue 13 against DuckDB in the same run (CPU):
  q1            12 hive-partitioned Parquet files, partition + row-group-selective filter
  q2 KIND ENG   register a 10M-row pandas|arrow table in hetdb|duckdb and GROUP BY over it
  q3 ENG        INSERT of 1M rows in 10 statements into hetdb|duckdb
Usage: PYTHONPATH=src python scripts/measure_api.py q1 | q2 arrow hetdb | q3 hetdb
"""

import json
import os
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.environ.get("HETDB_MEASURE_DIR", "/tmp/apibench")
PY = sys.executable


def hive_data():
    d = f"{ROOT}/hive"
    if os.path.exists(d):
        return d
    k = 0
    rng = np.random.default_rng(1)
    for y in (2021, 2022, 2023):
        for q in (1, 2, 3, 4):
            p = f"{d}/year={y}/quarter={q}"
            os.makedirs(p)
            n = 500_000
            t = pa.table(
                {
                    "id": np.arange(k, k + n),
                    "amount": rng.random(n) * 100,
                    "cat": pa.array(rng.integers(0, 50, n)).cast(pa.string()),
                }
            )
            pq.write_table(t, f"{p}/data.parquet", row_group_size=50_000)
            k += n
    return d


def q1():
    import duckdb

    import hetdb

    d = hive_data()
    sql = (
        f"SELECT count(*) AS n, sum(amount) AS s FROM read_parquet('{d}/**/*.parquet') "
        f"WHERE year = 2022 AND id BETWEEN 2600000 AND 2700000"
    )
    con = hetdb.connect(device="cpu")
    con.sql(sql)
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = con.sql(sql).fetchall()
        ts.append(time.perf_counter() - t0)
    plan = con.explain(sql, analyze=True)
    line = [ln for ln in plan.splitlines() if "ExternalScan" in ln][0]
    dd = []
    duckdb.sql(sql).fetchall()
    for _ in range(3):
        t0 = time.perf_counter()
        rd = duckdb.sql(sql).fetchall()
        dd.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "hetdb_s": min(ts),
                "duckdb_s": min(dd),
                "same": [tuple(x) for x in r] == [tuple(x) for x in rd]
                or (r[0][0] == rd[0][0] and abs(r[0][1] - rd[0][1]) < 1e-6 * abs(rd[0][1])),
                "hetdb": r,
                "duckdb": rd,
                "scan": line.split("[rows in")[1],
            },
            default=str,
        )
    )



_peak = [0.0]


def cur_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _sampler(stop):
    while not stop.is_set():
        _peak[0] = max(_peak[0], cur_rss_mb())
        stop.wait(0.005)


def rss_mb():
    return _peak[0]


def q2(kind, engine):
    n = 10_000_000
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 1000, n)
    vals = rng.random(n)
    if kind == "pandas":
        import pandas as pd

        obj = pd.DataFrame({"k": keys, "v": vals})
        size = obj.memory_usage(deep=True).sum()
    else:
        obj = pa.table({"k": keys, "v": vals})
        size = obj.nbytes
    del keys, vals
    import gc

    gc.collect()
    base = cur_rss_mb()
    _peak[0] = base
    stop = threading.Event()
    th = threading.Thread(target=_sampler, args=(stop,), daemon=True)
    th.start()
    sql = "SELECT k, count(*) AS n, sum(v) AS s FROM obj GROUP BY k"
    if engine == "hetdb":
        import hetdb

        con = hetdb.connect(device="cpu")
        t0 = time.perf_counter()
        con.register("obj", obj)
        treg = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = con.sql(sql).fetchall()
        tq = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = con.sql(sql).fetchall()
        tq2 = time.perf_counter() - t0
    else:
        import duckdb

        con = duckdb.connect()
        t0 = time.perf_counter()
        con.register("obj", obj)
        treg = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = con.sql(sql).fetchall()
        tq = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = con.sql(sql).fetchall()
        tq2 = time.perf_counter() - t0
    stop.set()
    th.join()
    print(
        json.dumps(
            {
                "kind": kind,
                "engine": engine,
                "object_mb": size / 2**20,
                "register_s": treg,
                "groupby_first_s": tq,
                "groupby_second_s": tq2,
                "rss_before_mb": base,
                "peak_rss_mb": rss_mb(),
                "extra_peak_mb": rss_mb() - base,
                "groups": len(r),
            }
        )
    )


def q3(engine):
    n = 1_000_000
    if engine == "hetdb":
        import hetdb

        con = hetdb.connect(f"{ROOT}/insdb", device="cpu")
        con.execute("DROP TABLE IF EXISTS t")
        con.execute("CREATE TABLE t (id BIGINT, v DOUBLE, s VARCHAR)")
    else:
        import duckdb

        con = duckdb.connect()
        con.execute("CREATE TABLE t (id BIGINT, v DOUBLE, s VARCHAR)")
    chunks = []
    for i in range(10):
        ids = np.arange(i * n // 10, (i + 1) * n // 10)
        chunks.append(pa.table({"id": ids, "v": ids * 0.5, "s": pa.array(ids % 100).cast(pa.string())}))
    t0 = time.perf_counter()
    for chunk in chunks:  # noqa: B007 - the INSERT finds it by name
        con.execute("INSERT INTO t SELECT * FROM chunk")
    dt = time.perf_counter() - t0
    cnt = con.sql("SELECT count(*) AS n FROM t").fetchall()
    out = {"engine": engine, "insert_10x100k_s": dt, "rows": cnt}
    if engine == "hetdb":
        out["version"] = con.table("t")._reader.version
        out["version_dirs_on_disk"] = sorted(
            x for x in os.listdir(f"{ROOT}/insdb/tables/t") if x.startswith("v")
        )
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "q1":
        q1()
    elif what == "q2":
        q2(sys.argv[2], sys.argv[3])
    elif what == "q3":
        q3(sys.argv[2])
