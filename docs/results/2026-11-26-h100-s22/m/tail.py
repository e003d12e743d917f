"""Where a warm GPU query's time after its last fused launch goes: python ckpt/tail.py DB QUERIES RUNS
Per query: RUNS warm runs (fresh connections) after one load run; times (ms): last fused launch -> fact
pipeline end -> query end (after arrow()); cProfile of the part after the fact pipeline's end."""
import sys, time, cProfile, pstats, io, statistics
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.exec import engine, fusion_run
db, qs, runs = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
marks = {}
orig_run, orig_consume = engine.run_pipeline, fusion_run._consume_fused
prof = [None]
def run_pipeline(ctx, pipe, pool, threads):
    out = orig_run(ctx, pipe, pool, threads)
    src = getattr(pipe, "source", None)
    scan = getattr(src, "scan", None)
    if scan is not None and scan.table == "lineorder":
        marks["pipe_end"] = time.perf_counter()
        if prof[0] is not None and not marks.get("on"):
            marks["on"] = True
            prof[0].enable()
    return out
def consume(fp, state, batches, tables):
    orig_consume(fp, state, batches, tables)
    marks["last_launch"] = time.perf_counter()
engine.run_pipeline, fusion_run._consume_fused = run_pipeline, consume
for q in load_queries("ssb", qs):
    con = hetdb.connect(db, device="gpu", create=False); con.sql(q.sql).arrow(); con.close()
    rows = []
    p = cProfile.Profile()
    for i in range(runs):
        prof[0] = p if i % 2 else None
        con = hetdb.connect(db, device="gpu", create=False)
        marks.clear(); t0 = time.perf_counter()
        r = con.sql(q.sql); r.arrow()
        t1 = time.perf_counter()
        p.disable()
        ex = (r.stats or {}).get("exec_seconds", 0) * 1e3
        con.close()
        t2 = time.perf_counter()
        if i % 2 == 0:
            rows.append((ex, (t1 - t0) * 1e3, (marks.get("pipe_end", t0) - marks.get("last_launch", t0)) * 1e3,
                         (t1 - marks.get("pipe_end", t1)) * 1e3, (t2 - t1) * 1e3))
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"=== {q.name}: exec {med[0]:.2f} sql+arrow {med[1]:.2f} | last launch -> fact pipeline end {med[2]:.2f} | -> arrow() returned {med[3]:.2f} | close {med[4]:.2f} (medians of {len(rows)})")
    s = io.StringIO(); st = pstats.Stats(p, stream=s); st.sort_stats("cumulative").print_stats(45)
    print("\n".join(l for l in s.getvalue().splitlines()[:60] if l.strip()))
    s = io.StringIO(); st = pstats.Stats(p, stream=s); st.sort_stats("tottime").print_stats(25)
    print("\n".join(l for l in s.getvalue().splitlines()[:40] if l.strip()))
