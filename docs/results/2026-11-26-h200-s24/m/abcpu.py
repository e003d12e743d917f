import sys, time, statistics, json
import hetdb
from hetdb.backend.cpu.codegen import pipeline_py
from hetdb.bench.suites import load_queries
setattr(pipeline_py, sys.argv[4] if len(sys.argv) > 4 else "INT_BITMAP_TEST", bool(int(sys.argv[2])))
threads = int(sys.argv[3])
qs = load_queries("ssb", None)
con = hetdb.connect(sys.argv[1], device="cpu", threads=threads)
out = {}
for q in qs:
    con.sql(q.sql).arrow(); con.sql(q.sql).arrow()
    ts = []
    for _ in range(5):
        t = time.perf_counter(); con.sql(q.sql).arrow(); ts.append(time.perf_counter() - t)
    out[q.name] = statistics.median(ts) * 1e3
print(json.dumps(out))
