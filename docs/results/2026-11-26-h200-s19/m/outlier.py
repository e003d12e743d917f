"""Warm-run outliers: per run ms, and the gc collections (generation, ms) inside each run.
python ckpt/outlier.py DB QUERIES RUNS [freeze]"""
import gc, sys, time, statistics
import hetdb
from hetdb.bench.suites import load_queries
db, qs, runs = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
freeze = len(sys.argv) > 4 and sys.argv[4] == "freeze"
events = []
_t = {}
def cb(phase, info):
    if phase == "start":
        _t["s"] = time.perf_counter()
    else:
        events.append((info["generation"], (time.perf_counter() - _t["s"]) * 1e3, info.get("collected", 0)))
gc.callbacks.append(cb)
print("gc thresholds", gc.get_threshold(), "objects", len(gc.get_objects()), "freeze" if freeze else "")
for q in load_queries("ssb", qs):
    for _ in range(2):
        con = hetdb.connect(db, device="gpu", create=False); con.sql(q.sql).arrow(); con.close()
    if freeze:
        gc.collect(); gc.freeze()
    print(q.name, "objects", len(gc.get_objects()), "frozen", gc.get_freeze_count())
    ms, gcs, conn_ms, sigs, pools = [], [], [], [], []
    for i in range(runs):
        events.clear()
        t0 = time.perf_counter()
        con = hetdb.connect(db, device="gpu", create=False)
        t1 = time.perf_counter()
        res = con.sql(q.sql); res.arrow()
        t2 = time.perf_counter()
        st = dict(res.stats or {})
        r = st.get("routes") or {}
        sig = (st.get("bytes_host_to_device"), tuple(sorted((r.get("pages") or {}).items())), r.get("deliveries"),
               (st.get("early_scans") or {}).get("primed_bytes"), st.get("pages_cached"))
        sigs.append(sig)
        import cupy
        pool = cupy.get_default_memory_pool()
        pools.append((pool.total_bytes() >> 20, pool.n_free_blocks()))
        con.close()
        t3 = time.perf_counter()
        ms.append((t2 - t1) * 1e3); conn_ms.append(((t1 - t0) + (t3 - t2)) * 1e3)
        gcs.append(list(events))
    med = statistics.median(ms)
    print(f"  median {med:.1f} ms; connect+close median {statistics.median(conn_ms):.2f} ms max {max(conn_ms):.1f}")
    print("  runs:", " ".join(f"{m:.1f}" for m in ms))
    print("  pool MiB/free blocks:", " ".join(f"{a}/{b}" for a, b in pools))
    g2 = [(i, e) for i, ev in enumerate(gcs) for e in ev if e[0] == 2]
    print(f"  gen2 collections: {len(g2)}: " + ", ".join(f"run{i} {e[1]:.1f}ms" for i, e in g2[:20]))
    for i, m in enumerate(ms):
        if m > 1.5 * med:
            print(f"  outlier run {i}: {m:.1f} ms; gc inside: " + ", ".join(f"g{g} {d:.1f}ms" for g, d, c in gcs[i]))
    by = {}
    for m, sg in zip(ms, sigs):
        by.setdefault(sg, []).append(m)
    for sg, v in by.items():
        print(f"  {len(v)} runs median {statistics.median(v):.1f} ms: h2d {sg[0]} routes {sg[1]} deliveries {sg[2]} primed {sg[3]} cached {sg[4]}")
    tot = [sum(d for g, d, c in ev) for ev in gcs]
    print(f"  gc ms per run: median {statistics.median(tot):.2f} max {max(tot):.1f}")
