"""Run-by-run alternating A/B of a module switch: python ckpt/ab.py DB ROUNDS MODULE:ATTR setting...
setting = name:warm|hot:limit(0=none):value  e.g. on:warm:0:1 off:warm:0:0
Per round, per query, the settings run in turn (order reversed every other round); warm = fresh connection
after one untimed load run per query and setting; hot = one connection per setting (two untimed runs)."""
import sys, time, statistics, importlib, math
import hetdb
from hetdb.bench.suites import load_queries
db, rounds, target = sys.argv[1], sys.argv[2], sys.argv[3]
rounds, _, block = rounds.partition("x")  # ROUNDSxBLOCK: BLOCK consecutive runs per setting per query
rounds, block = int(rounds), int(block or 1)
modname, attr = target.split(":")
mod = importlib.import_module(modname)
settings = []
for s in sys.argv[4:]:
    name, mode, limit, value = s.split(":")
    settings.append((name, mode, int(limit), type(getattr(mod, attr))(int(value))))
qs = load_queries("ssb", None)
def opts(limit): return {"gpu_memory_limit": limit} if limit else {}
hots = {}
for name, mode, limit, value in settings:
    setattr(mod, attr, value)
    if mode == "hot":
        hots[name] = hetdb.connect(db, device="gpu", create=False, **opts(limit))
    for q in qs:
        for _ in range(2 if mode == "hot" else 1):
            con = hots.get(name) or hetdb.connect(db, device="gpu", create=False, **opts(limit))
            con.sql(q.sql).arrow()
            if mode != "hot": con.close()
times = {(s[0], q.name): [] for s in settings for q in qs}
for r in range(rounds):
    order = settings if r % 2 == 0 else settings[::-1]
    for q in qs:
        for name, mode, limit, value in order:
            setattr(mod, attr, value)
            for _ in range(block):
                con = hots.get(name) or hetdb.connect(db, device="gpu", create=False, **opts(limit))
                res = con.sql(q.sql); res.arrow()
                times[(name, q.name)].append((res.stats or {}).get("exec_seconds", 0) * 1e3)
                if mode != "hot": con.close()
for name, *_ in settings:
    meds = [statistics.median(times[(name, q.name)]) for q in qs]
    means = [statistics.mean(times[(name, q.name)]) for q in qs]
    print(f"{name}: geomean of medians {math.exp(sum(map(math.log, meds))/len(meds)):.2f} ms, of means {math.exp(sum(map(math.log, means))/len(means)):.2f} | "
          + " ".join(f"{q.name}:{m:.1f}" for q, m in zip(qs, meds)), flush=True)
