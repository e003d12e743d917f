"""Warm-run cProfile diff: python ckpt/wdiff.py DB QUERY RUNS name:opts name:opts ...  (first = base)
Each variant: 2 untimed warm runs then RUNS profiled warm runs (fresh connection each), interleaved.
Prints per variant median ms and the functions whose cumulative / own time per run grew most vs base."""
import cProfile, pstats, sys, time, statistics
import hetdb
from hetdb.bench.suites import load_queries
db, qname, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
variants = []
for v in sys.argv[4:]:
    name, _, rest = v.partition(":")
    opts = {}
    for kv in filter(None, rest.split(",")):
        k, _, val = kv.partition("=")
        opts[k] = int(val) if val.lstrip("-").isdigit() else val
    variants.append((name, opts))
q = load_queries("ssb", [qname])[0]
profs = {n: cProfile.Profile() for n, _ in variants}
times = {n: [] for n, _ in variants}
plain = {n: [] for n, _ in variants}
for n, o in variants:
    for _ in range(2):
        con = hetdb.connect(db, device="gpu", create=False, **o); con.sql(q.sql).arrow(); con.close()
for r in range(runs):
    for n, o in variants:
        con = hetdb.connect(db, device="gpu", create=False, **o)
        t = time.perf_counter(); con.sql(q.sql).arrow(); plain[n].append((time.perf_counter() - t) * 1e3)
        con.close()
        con = hetdb.connect(db, device="gpu", create=False, **o)
        p = profs[n]; t = time.perf_counter(); p.enable(); con.sql(q.sql).arrow(); p.disable()
        times[n].append((time.perf_counter() - t) * 1e3); con.close()
def table(p):
    st = pstats.Stats(p).stats
    out = {}
    for (f, line, fn), (cc, nc, tt, ct, callers) in st.items():
        key = f"{f.split('/src/')[-1].split('site-packages/')[-1]}:{line}({fn})"
        out[key] = (nc / runs, tt / runs * 1e3, ct / runs * 1e3)
    return out
base = variants[0][0]; tb = table(profs[base])
for n, _ in variants:
    print(f"== {qname} {n}: plain ms median {statistics.median(plain[n]):.2f} {[round(x,1) for x in plain[n]]} profiled median {statistics.median(times[n]):.2f}")
for n, _ in variants[1:]:
    tv = table(profs[n])
    keys = set(tb) | set(tv)
    z = (0, 0.0, 0.0)
    for idx, label in ((2, "cumulative"), (1, "own")):
        rows = sorted(keys, key=lambda k: tv.get(k, z)[idx] - tb.get(k, z)[idx], reverse=True)[:45]
        print(f"-- {n} minus {base}, {label} ms per run (calls base/var, ms base/var)")
        for k in rows:
            b, v = tb.get(k, z), tv.get(k, z)
            print(f"  {v[idx]-b[idx]:+7.2f}  calls {b[0]:.0f}/{v[0]:.0f}  {b[idx]:.2f}/{v[idx]:.2f}  {k}")
