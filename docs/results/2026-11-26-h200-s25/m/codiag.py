"""Per "auto" run: wall, what co-processing did, the outcome store of the query's pipeline key."""
import re, sys, time
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.cache.rates import shared_rates
from hetdb.exec import coprocess_plan
db, n = sys.argv[1], int(sys.argv[2])
for q in load_queries("ssb", sys.argv[3].split(",")):
    for i in range(n):
        with hetdb.connect(db, device="gpu", create=False, gpu_coprocess="auto", threads=16) as con:
            t0 = time.perf_counter(); res = con.sql(q.sql); res.fetchall(); w = (time.perf_counter() - t0) * 1e3
            fused = " ".join(getattr(o, "fused", "") for o in dict(res.stats or {}).get("operators", {}).values())
        if i == 0:
            coprocess_plan.wait_prepared(120)
        m = re.search(r"\((CPU\+GPU co-processing: \d+ row groups on \d+|not co-processed: [^)]{0,120})", fused)
        oc = shared_rates().__dict__.get("_co_outcomes", {})
        st = [(k[-12:], [round(x * 1e3, 1) for x in o.alone], [round(x * 1e3, 1) for x in o.co], o.step, o.refused) for k, o in oc.items() if k.endswith(coprocess_plan.plan_fingerprint.__name__) or True]
        mine = [s for s in st if s[0] in fused or True]
        print(f"{q.name} {i:2d} {w:7.1f} {m.group(1) if m else '-'} | {[s for s in st][-1] if st else None}", flush=True)
