"""Do the warm outliers come from Python's cyclic collector? python ckpt/gcprobe.py DB ROUNDS
All 13 SSB queries warm (fresh connection), ROUNDS rounds, two settings alternating per query: 'as-is' and
'nogc' (gc disabled around con.sql+arrow, enabled after). Per run: ms, and the collections inside it
(generation: ms) from gc.callbacks."""
import gc, sys, time, statistics, math
import hetdb
from hetdb import gc_pause
from hetdb.bench.suites import load_queries
db, rounds = sys.argv[1], int(sys.argv[2])
qs = load_queries("ssb", None)
cur = []
t0 = [0.0]
def cb(phase, info):
    if phase == "start": t0[0] = time.perf_counter()
    else: cur.append((info["generation"], (time.perf_counter() - t0[0]) * 1e3, info.get("collected", 0)))
gc.callbacks.append(cb)
print("gc thresholds", gc.get_threshold(), "counts", gc.get_count(), "objects", len(gc.get_objects()), flush=True)
for q in qs:
    con = hetdb.connect(db, device="gpu", create=False); con.sql(q.sql).arrow(); con.close()
times = {(s, q.name): [] for s in ("pause", "off") for q in qs}
big = []
for r in range(rounds):
    for q in qs:
        for s in (("pause", "off") if r % 2 == 0 else ("off", "pause")):
            con = hetdb.connect(db, device="gpu", create=False)
            cur.clear()
            gc_pause.ENABLED = s == "pause"
            t = time.perf_counter(); con.sql(q.sql).arrow(); ms = (time.perf_counter() - t) * 1e3
            con.close()
            times[(s, q.name)].append(ms)
            g = [c for c in cur]
            if ms > 1.25 * 13 and any(c[1] > 2 for c in g) or any(c[0] == 2 for c in g):
                big.append((s, q.name, round(ms, 1), [(a, round(b, 1)) for a, b, _ in g]))
for s in ("pause", "off"):
    meds = [statistics.median(times[(s, q.name)]) for q in qs]
    means = [statistics.mean(times[(s, q.name)]) for q in qs]
    mx = [max(times[(s, q.name)]) for q in qs]
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
    print(f"{s}: geomean median {gm(meds):.2f} mean {gm(means):.2f} max {gm(mx):.2f} | " + " ".join(f"{q.name}:{m:.1f}/{x:.0f}" for q, m, x in zip(qs, meds, mx)), flush=True)
print("runs with a gen-2 collection or a collection > 2 ms:")
for b in big: print("  ", b)
print("objects", len(gc.get_objects()), "gc stats", gc.get_stats())
