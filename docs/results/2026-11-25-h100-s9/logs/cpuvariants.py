"""CPU TPC-H queries at N threads: default vs the serial dense group numbering (same process)."""
import statistics, sys, time
import hetdb
from hetdb.backend.cpu import groupby
from hetdb.bench.suites import load_queries
db, threads, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
qs = {q.name: q.sql for q in load_queries("tpch")}
con = hetdb.connect(db, device="cpu", threads=threads)
default = groupby._PARALLEL_DENSE_THREADS
for variant, value in (("default", default), ("serial-numbering", 10**9), ("default-again", default)):
    groupby._PARALLEL_DENSE_THREADS = value
    for n in names:
        con.execute(qs[n]).fetchall()
        ts = []
        for _ in range(5):
            t = time.perf_counter(); con.execute(qs[n]).fetchall(); ts.append(time.perf_counter() - t)
        print(f"{variant:18s} {n}: median {statistics.median(ts)*1e3:8.1f} ms", flush=True)
