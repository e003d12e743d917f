"""Hot GPU SSB queries with gpu_compressed_cache on and off (same process, same data)."""
import statistics, sys, time
import hetdb
from hetdb.bench.suites import load_queries
db = sys.argv[1]
qs = {q.name: q.sql for q in load_queries("ssb")}
for comp in (True, False):
    con = hetdb.connect(db, device="gpu", gpu_compressed_cache=comp)
    for name in ("q1.1", "q2.1", "q3.1", "q4.1"):
        ts = []
        for _ in range(6):
            t = time.perf_counter(); r = con.execute(qs[name]); r.fetchall(); ts.append(time.perf_counter() - t)
        st = getattr(r, "stats", None) or {}
        print(f"compressed={comp} {name}: median of last 5 {statistics.median(ts[1:]) * 1e3:.2f} ms "
              f"(first {ts[0] * 1e3:.1f}) pipelines {st.get('gpu_pipelines')}", flush=True)
    con.close()
