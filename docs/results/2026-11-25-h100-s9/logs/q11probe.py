"""Hot TPC-H q11 on the GPU: timings under option variants, EXPLAIN ANALYZE, cProfile."""
import cProfile, io, pstats, statistics, sys, time
import hetdb
from hetdb.bench.suites import load_queries
db = sys.argv[1]
qs = {q.name: q.sql for q in load_queries("tpch")}
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["q11"]
variants = [("default", {}), ("plain-cache", {"gpu_compressed_cache": False}),
            ("no-reuse", {"reuse_fused_state": False}),
            ("no-semi-red", {"disabled_passes": ["semi_join_reduction"]})]
for vname, opts in variants:
    con = hetdb.connect(db, device="gpu", **opts)
    for n in names:
        ts = []
        for _ in range(6):
            t = time.perf_counter(); r = con.execute(qs[n]); r.fetchall(); ts.append(time.perf_counter() - t)
        print(f"{vname} {n}: median of last 5 {statistics.median(ts[1:]) * 1e3:.2f} ms (first {ts[0]*1e3:.1f})", flush=True)
        if vname == "default":
            print({k: v for k, v in (getattr(r, "stats", None) or {}).items() if not isinstance(v, (list, dict))})
            [print(*row) for row in con.execute("EXPLAIN ANALYZE " + qs[n]).fetchall()]
            pr = cProfile.Profile(); pr.enable()
            for _ in range(3):
                con.execute(qs[n]).fetchall()
            pr.disable()
            for key in ("tottime", "cumulative"):
                s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats(key).print_stats(35); print(s.getvalue()[:7000])
    con.close()
