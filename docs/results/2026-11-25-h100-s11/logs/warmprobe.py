"""Warm SSB probe: per query, fresh connection per run (device cache empty, pinned host tier kept)."""
import statistics
import sys
import time

import os

import hetdb
from hetdb.bench.suites import load_queries

db, suite = sys.argv[1], sys.argv[2]
names = sys.argv[3].split(",") if len(sys.argv) > 3 else None
opts = dict(a.split("=", 1) for a in sys.argv[4:])
opts = {k: {"true": True, "false": False}.get(v, int(v) if v.isdigit() else v) for k, v in opts.items()}
for k, v in list(opts.items()):
    if v.isdigit():
        opts[k] = int(v)
qs = [q for q in load_queries(suite) if names is None or q.name in names]
for q in qs:
    con = hetdb.connect(db, device=os.environ.get("DEV", "gpu"), create=False, **opts)
    con.sql(q.sql).arrow()
    con.close()
    ts, st = [], None
    for _ in range(3):
        t0 = time.perf_counter()
        con = hetdb.connect(db, device=os.environ.get("DEV", "gpu"), create=False, **opts)
        t1 = time.perf_counter()
        r = con.sql(q.sql)
        r.arrow()
        t2 = time.perf_counter()
        st = dict(r.stats or {})
        con.close()
        ts.append((t1 - t0, t2 - t1))
    print(f"{q.name}: connect {statistics.median(a for a, _ in ts)*1e3:.1f} ms query "
          f"{statistics.median(b for _, b in ts)*1e3:.1f} ms exec {st.get('exec_seconds', 0)*1e3:.1f} "
          f"plan {st.get('plan_seconds', 0)*1e3:.1f} h2d {st.get('bytes_host_to_device', 0):,} "
          f"read {st.get('bytes_read', 0):,} cached {st.get('plan_cached')}", flush=True)
    con = hetdb.connect(db, device=os.environ.get("DEV", "gpu"), create=False, **opts)
    res = con.sql("EXPLAIN ANALYZE " + q.sql).arrow()
    for row in res.to_pylist():
        for v in row.values():
            print(v)
    con.close()
