"""Where a forced split's main-thread time goes: python ckpt/coprobe.py DB QUERY RUNS SPLIT [AFTER]
cProfile of the main thread over RUNS warm runs with coprocess_plan.FORCED_SPLIT (workers, SPLIT)."""
import cProfile, pstats, sys, time, io, statistics, os, re
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.exec import coprocess_plan
db, qname, runs, split = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
coprocess_plan.WORKERS_AFTER = sys.argv[5] if len(sys.argv) > 5 else "first"
q = load_queries("ssb", [qname])[0]
from types import SimpleNamespace
w = coprocess_plan.cpu_workers(SimpleNamespace(options=SimpleNamespace(threads=os.cpu_count())))
for mode in ("base", "split"):
    coprocess_plan.FORCED_SPLIT = (w, split) if mode == "split" else None
    opts = {"gpu_coprocess": "auto" if mode == "split" else "off"}
    for _ in range(5):
        con = hetdb.connect(db, device="gpu", create=False, **opts); con.sql(q.sql).arrow(); con.close()
    coprocess_plan.wait_prepared()
    p = cProfile.Profile(); ts = []
    for _ in range(runs):
        con = hetdb.connect(db, device="gpu", create=False, **opts)
        t = time.perf_counter(); p.enable(); con.sql(q.sql).arrow(); p.disable(); ts.append((time.perf_counter() - t) * 1e3)
        con.close()
    print(f"== {qname} {mode} split {split} workers {w}: profiled {' '.join(f'{x:.1f}' for x in ts)} ms")
    out = io.StringIO(); ps = pstats.Stats(p, stream=out)
    ps.sort_stats("cumtime").print_stats(r"hetdb", 70)
    ps.sort_stats("tottime").print_stats(25)
    for fn in ("finish_fused", "finish", "to_device", "add_groups", "run_fused", "_final", "_merge", "_group", "run_pipeline"):
        ps.sort_stats("cumtime").print_callees(fn)
    txt = out.getvalue().replace("/usr/lib/python3/dist-packages/", "").replace("/usr/local/lib/python3.12/dist-packages/", "")
    print(re.sub(r"/\S*/src/hetdb/", "", txt))
