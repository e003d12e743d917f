"""cProfile of warm runs (fresh connection each, pinned host tier kept) of one query."""
import cProfile
import io
import pstats
import sys
import time

import hetdb
from hetdb.bench.suites import load_queries

db, suite, name = sys.argv[1:4]
opts = dict(a.split("=", 1) for a in sys.argv[4:])
opts = {k: {"true": True, "false": False}.get(v, int(v) if v.isdigit() else v) for k, v in opts.items()}
q = [q for q in load_queries(suite) if q.name == name][0]
for _ in range(2):
    con = hetdb.connect(db, device="gpu", create=False, **opts)
    con.sql(q.sql).arrow()
    con.close()
pr = cProfile.Profile()
ts = []
for _ in range(5):
    con = hetdb.connect(db, device="gpu", create=False, **opts)
    t0 = time.perf_counter()
    pr.enable()
    con.sql(q.sql).arrow()
    pr.disable()
    ts.append(time.perf_counter() - t0)
    con.close()
print(name, opts, "runs ms:", " ".join(f"{t*1e3:.1f}" for t in ts))
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(35)
print(s.getvalue()[:9000])
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(45)
print(s.getvalue()[:9000])
