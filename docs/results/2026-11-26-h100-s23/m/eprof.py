"""Where a warm run's early-scan host time goes: python ckpt/eprof.py DB QUERY RUNS [k=v ...]
cProfile of RUNS warm runs (fresh connection each); prints the early scan's call tree (callees of
start_early_scans, _deliver_batch, run_delivery) and top own-time functions, per run."""
import cProfile, pstats, sys, time, io, statistics
import hetdb
from hetdb.bench.suites import load_queries
db, qname, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
opts = {}
for kv in sys.argv[4:]:
    k, _, v = kv.partition("="); opts[k] = int(v) if v.isdigit() else v
q = load_queries("ssb", [qname])[0]
for _ in range(2):
    con = hetdb.connect(db, device="gpu", create=False, **opts); con.sql(q.sql).arrow(); con.close()
p = cProfile.Profile(); ts = []
for _ in range(runs):
    con = hetdb.connect(db, device="gpu", create=False, **opts)
    t = time.perf_counter(); p.enable(); con.sql(q.sql).arrow(); p.disable(); ts.append((time.perf_counter() - t) * 1e3)
    con.close()
print(f"== {qname} {opts}: profiled median {statistics.median(ts):.2f} ms")
out = io.StringIO(); ps = pstats.Stats(p, stream=out); ps.sort_stats("tottime").print_stats(45)
for fn in ("start_early_scans", "_start", "prime_more", "_deliver_batch", "_deliver_group", "run_delivery", "_launch", "delivery_arrays", "_prime_rest", "_start_dimensions"):
    ps.sort_stats("cumtime").print_callees(fn)
txt = out.getvalue().replace("/usr/lib/python3/dist-packages/", "").replace("/usr/local/lib/python3.12/dist-packages/", "")
import re
txt = re.sub(r"/\S*/src/hetdb/", "", txt)
# per-run ms
def fix(m):
    return f"{float(m.group(0)) / runs * 1e3:9.3f}"
print(txt)
