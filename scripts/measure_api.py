"""Measurements of issue 13 against DuckDB in the same run (CPU, 2 threads for both engines):
  q1 ENGINE        12 hive-partitioned Parquet files (6M rows, 120 row groups), a partition filter and a
                   row-group-selective filter: time (first and warm), files / row groups read
  q2 KIND ENGINE   register a 10M-row pandas|arrow table and GROUP BY over it: time, peak RSS over the
                   RSS before, against the object's size
  q3 ENGINE MODE   INSERT of 1M rows in 10 statements: time, table versions, row groups; MODE cold: in a
                   fresh process (hetdb: the first INSERT loads its Numba kernels, ~2 s), warm: after
                   one small INSERT into another table
Each measurement runs in a fresh process; ``all`` runs every one RUNS times and prints the medians.
Usage: PYTHONPATH=src python scripts/measure_api.py all [RUNS]   (or one measurement, e.g. q2 arrow hetdb)
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.environ.get("HETDB_MEASURE_DIR", "/tmp/apibench")
THREADS = 2


def hive_data() -> str:
    d = f"{ROOT}/hive"
    if os.path.exists(f"{d}/.done"):
        return d
    k = 0
    rng = np.random.default_rng(1)
    for y in (2021, 2022, 2023):
        for q in (1, 2, 3, 4):
            p = f"{d}/year={y}/quarter={q}"
            os.makedirs(p, exist_ok=True)
            n = 500_000
            t = pa.table({"id": np.arange(k, k + n), "amount": rng.random(n) * 100,
                          "cat": pa.array(rng.integers(0, 50, n)).cast(pa.string())})
            pq.write_table(t, f"{p}/data.parquet", row_group_size=50_000)
            k += n
    open(f"{d}/.done", "w").close()
    return d


def _connect(engine: str, path: str | None = None):
    if engine == "hetdb":
        import hetdb

        return hetdb.connect(path or ":memory:", device="cpu", threads=THREADS)
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {THREADS}")
    return con


def q1(engine: str) -> dict:
    d = hive_data()
    sql = (f"SELECT count(*) AS n, sum(amount) AS s FROM read_parquet('{d}/**/*.parquet', hive_partitioning=true) "
           f"WHERE year = 2022 AND id BETWEEN 2600000 AND 2700000")
    con = _connect(engine)
    t0 = time.perf_counter()
    rows = con.sql(sql).fetchall()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    con.sql(sql).fetchall()
    warm = time.perf_counter() - t0
    out = {"first_s": first, "warm_s": warm, "rows": str(rows)}
    if engine == "hetdb":
        plan = con.explain(sql, analyze=True)
        line = [ln for ln in plan.splitlines() if "ExternalScan" in ln][0]
        out["scan"] = line[line.index("files read"):].split("]")[0] if "files read" in line else line
    return out


_peak = [0.0]


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _sampler(stop: threading.Event) -> None:
    while not stop.is_set():
        _peak[0] = max(_peak[0], _rss_mb())
        stop.wait(0.005)


def q2(kind: str, engine: str) -> dict:
    import gc

    n = 10_000_000
    rng = np.random.default_rng(2)
    keys, vals = rng.integers(0, 1000, n), rng.random(n)
    if kind == "pandas":
        import pandas as pd

        obj = pd.DataFrame({"k": keys, "v": vals})
        size = int(obj.memory_usage(deep=True).sum())
    else:
        obj = pa.table({"k": keys, "v": vals})
        size = obj.nbytes
    del keys, vals
    gc.collect()
    con = _connect(engine)
    base = _peak[0] = _rss_mb()
    stop = threading.Event()
    th = threading.Thread(target=_sampler, args=(stop,), daemon=True)
    th.start()
    sql = "SELECT k, count(*) AS n, sum(v) AS s FROM obj GROUP BY k"
    t0 = time.perf_counter()
    con.register("obj", obj)
    reg = time.perf_counter() - t0
    t0 = time.perf_counter()
    groups = len(con.sql(sql).fetchall())
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    con.sql(sql).fetchall()
    warm = time.perf_counter() - t0
    stop.set()
    th.join()
    return {"object_mb": size / 2**20, "register_s": reg, "groupby_first_s": first, "groupby_warm_s": warm,
            "extra_peak_rss_mb": _peak[0] - base, "groups": groups}


def q3(engine: str, mode: str) -> dict:
    n = 1_000_000
    path = f"{ROOT}/insdb-{os.getpid()}"
    con = _connect(engine, path)
    if mode == "warm":
        con.execute("CREATE TABLE w (id BIGINT, v DOUBLE, s VARCHAR)")
        con.execute("INSERT INTO w VALUES (1, 0.5, 'a'), (2, 1.5, 'b')")
    con.execute("CREATE TABLE t (id BIGINT, v DOUBLE, s VARCHAR)")
    chunks = []
    for i in range(10):
        ids = np.arange(i * n // 10, (i + 1) * n // 10)
        chunks.append(pa.table({"id": ids, "v": ids * 0.5, "s": pa.array(ids % 100).cast(pa.string())}))
    t0 = time.perf_counter()
    for chunk in chunks:  # noqa: B007 - the INSERT finds it by name
        con.execute("INSERT INTO t SELECT * FROM chunk")
    dt = time.perf_counter() - t0
    out = {"insert_10x100k_s": dt, "rows": con.sql("SELECT count(*) AS n FROM t").fetchall()[0][0]}
    if engine == "hetdb":
        r = con.table("t")._reader
        out["version"] = r.version
        out["row_groups"] = [r.row_group_rows(g) for g in range(r.num_row_groups)]
        out["version_dirs_on_disk"] = len([x for x in os.listdir(f"{path}/tables/t") if x.startswith("v")])
        con.close()
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    return out


MEASUREMENTS = [("q1", "hetdb"), ("q1", "duckdb"), ("q2", "pandas", "hetdb"), ("q2", "pandas", "duckdb"),
                ("q2", "arrow", "hetdb"), ("q2", "arrow", "duckdb"), ("q3", "hetdb", "cold"), ("q3", "duckdb", "cold"),
                ("q3", "hetdb", "warm"), ("q3", "duckdb", "warm")]


def run_all(runs: int) -> None:
    hive_data()
    for m in MEASUREMENTS:
        results = []
        for _ in range(runs):
            proc = subprocess.run([sys.executable, __file__, *m], capture_output=True, text=True, timeout=600)
            if proc.returncode:
                raise SystemExit(f"{' '.join(m)} failed:\n{proc.stderr[-3000:]}")
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        summary = {}
        for key, value in results[0].items():
            values = [r[key] for r in results]
            summary[key] = statistics.median(values) if isinstance(value, float) else value
            if isinstance(value, float):
                summary[key] = round(summary[key], 3)
                summary[f"{key}_runs"] = [round(v, 3) for v in values]
        print(" ".join(m), json.dumps(summary, default=str), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[0] == "all":
        run_all(int(args[1]) if len(args) > 1 else 3)
    else:
        fn = {"q1": q1, "q2": q2, "q3": q3}[args[0]]
        print(json.dumps(fn(*args[1:]), default=str))
