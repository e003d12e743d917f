"""GPU alone vs "auto" co-processing, interleaved run by run (warm: a fresh connection per run), after
LEARN untimed "auto" runs per query (the model's rates, the CPU side's set-up, the share steps);
CPU-only hot (3 runs) for the best single device. python coab.py DB LEARN ROUNDS [queries]"""
import math, re, statistics as st, sys, time
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.exec import coprocess_plan

db, learn, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
qs = load_queries("ssb", sys.argv[4].split(",") if len(sys.argv) > 4 else None)

def run(sql, co):
    with hetdb.connect(db, device="gpu", create=False, gpu_coprocess=co, threads=16) as con:
        t0 = time.perf_counter(); res = con.sql(sql); rows = res.fetchall(); w = time.perf_counter() - t0
        fused = " ".join(getattr(o, "fused", "") for o in dict(res.stats or {}).get("operators", {}).values())
    m = re.search(r"co-processing: (\d+) row groups on (\d+) CPU workers", fused)
    return w * 1e3, sorted(map(tuple, rows)), (f"{m.group(1)}w{m.group(2)}" if m else "g")

geo = {"gpu": [], "auto": [], "cpu": []}
for q in qs:
    ref = None
    for i in range(learn):
        _, rows, _ = run(q.sql, "auto")
        if i == 0:
            coprocess_plan.wait_prepared(120)
    run(q.sql, "off")
    t = {"gpu": [], "auto": []}; notes = []
    for r in range(rounds):
        for co in (("off", "auto") if r % 2 == 0 else ("auto", "off")):
            w, rows2, note = run(q.sql, co)
            assert rows2 == rows, (q.name, co)
            t["gpu" if co == "off" else "auto"].append(w)
            if co == "auto": notes.append(note)
    with hetdb.connect(db, device="cpu", create=False, threads=16) as con:
        cw = []
        for i in range(4):
            t0 = time.perf_counter(); con.sql(q.sql).fetchall(); cw.append((time.perf_counter() - t0) * 1e3)
    g, a, c = st.median(t["gpu"]), st.median(t["auto"]), st.median(cw[1:])
    for k, v in (("gpu", g), ("auto", a), ("cpu", c)): geo[k].append(math.log(v))
    print(f"{q.name} gpu {g:7.2f} auto {a:7.2f} cpu-hot {c:7.2f} auto/best {a / min(g, c):.3f}  auto runs [{' '.join(notes)}]"
          f" gpu {' '.join(f'{x:.1f}' for x in t['gpu'])} | auto {' '.join(f'{x:.1f}' for x in t['auto'])}", flush=True)
print("geomean " + " ".join(f"{k} {math.exp(st.fmean(v)):.2f}" for k, v in geo.items()))
