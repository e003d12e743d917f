"""cProfile of warm runs: python ckpt/cprof.py DB QUERIES RUNS [hot-limit-bytes]"""
import cProfile, pstats, sys, time, io
import hetdb
from hetdb.bench.suites import load_queries
db, qs, runs = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
limit = int(sys.argv[4]) if len(sys.argv) > 4 else None
opts = {"gpu_memory_limit": limit} if limit else {}
for q in load_queries("ssb", qs):
    for _ in range(2):
        con = hetdb.connect(db, device="gpu", create=False, **opts); con.sql(q.sql).arrow()
        if not limit: con.close()
    plain = []
    for _ in range(runs):
        if not limit: con = hetdb.connect(db, device="gpu", create=False, **opts)
        t = time.perf_counter(); con.sql(q.sql).arrow(); plain.append((time.perf_counter() - t) * 1e3)
        if not limit: con.close()
    pr = cProfile.Profile(); prof = []
    for _ in range(runs):
        if not limit: con = hetdb.connect(db, device="gpu", create=False, **opts)
        t = time.perf_counter(); pr.enable(); con.sql(q.sql).arrow(); pr.disable(); prof.append((time.perf_counter() - t) * 1e3)
        if not limit: con.close()
    if limit: con.close()
    print(f"=== {q.name} {'hot@'+str(limit) if limit else 'warm'}: plain ms {[round(x,1) for x in plain]} profiled ms {[round(x,1) for x in prof]}")
    for key in ("tottime", "cumulative"):
        s = io.StringIO(); st = pstats.Stats(pr, stream=s); st.sort_stats(key).print_stats(70); 
        print(f"--- by {key} (totals over {runs} runs)"); print("\n".join(s.getvalue().splitlines()[6:80]))
    s = io.StringIO(); st = pstats.Stats(pr, stream=s); st.sort_stats("cumulative").print_callers("synchronize|\\bget\\b|__bool__|item"); print("\n".join(s.getvalue().splitlines()[:80]))
