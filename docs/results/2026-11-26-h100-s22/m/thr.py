"""Per-thread CPU time of warm runs: python ckpt/thr.py DB QUERIES RUNS ROUNDS name:opts ...
Each round: per query, per variant: 1 untimed + RUNS timed warm runs (fresh connections). Per run: wall ms,
main-thread CPU ms, other threads' CPU ms by name (time.pthread_getcpuclockid), gc collections."""
import sys, time, threading, gc, statistics
import hetdb
from hetdb.bench.suites import load_queries
db, qs, runs, rounds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
variants = []
for v in sys.argv[5:]:
    name, _, rest = v.partition(":")
    opts = {}
    for kv in filter(None, rest.split(",")):
        k, _, val = kv.partition("=")
        opts[k] = int(val) if val.lstrip("-").isdigit() else val
    variants.append((name, opts))
gcn = [0]
gc.callbacks.append(lambda phase, info: gcn.__setitem__(0, gcn[0] + (phase == "start") * (1 + 100 * info["generation"])))
def snap():
    out = {}
    for t in threading.enumerate():
        try:
            out[(t.ident, t.name)] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except Exception:
            pass
    return out
main = threading.main_thread().ident
queries = load_queries("ssb", qs)
for rnd in range(rounds):
    for q in queries:
        for name, o in variants:
            con = hetdb.connect(db, device="gpu", create=False, **o); con.sql(q.sql).arrow(); con.close()
            rows = []
            for _ in range(runs):
                con = hetdb.connect(db, device="gpu", create=False, **o)
                a = snap(); g0 = gcn[0]; pt0 = time.process_time(); t0 = time.perf_counter()
                r = con.sql(q.sql); r.arrow()
                t1 = time.perf_counter(); pt1 = time.process_time(); b = snap(); g1 = gcn[0]
                con.close()
                ex = (r.stats or {}).get("exec_seconds", 0) * 1e3
                mainc = (b.get((main, "MainThread"), 0) - a.get((main, "MainThread"), 0)) * 1e3
                others = {}
                for k, v in b.items():
                    if k[0] == main: continue
                    d = (v - a.get(k, v)) * 1e3
                    if d > 0.05: others[k[1]] = others.get(k[1], 0) + d
                rows.append((ex, (t1 - t0) * 1e3, mainc, (pt1 - pt0) * 1e3, g1 - g0, others))
            med = statistics.median(r[0] for r in rows)
            print(f"r{rnd} {q.name} {name}: exec med {med:.1f} | " + " ; ".join(
                f"{e:.1f}/{w:.1f} main {m:.1f} proc {p:.1f} gc {g} " + ",".join(f"{k}:{v:.1f}" for k, v in sorted(o.items(), key=lambda x: -x[1])[:3])
                for e, w, m, p, g, o in rows), flush=True)
