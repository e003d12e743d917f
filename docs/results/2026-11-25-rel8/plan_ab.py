import sys, time, gc
sys.path.insert(0, "tests/differential")
from hetdb.exec import engine as E
captured = []
orig = E.QueryEngine.planned
def planned(self, sql):
    captured.append((id(self), sql)); return orig(self, sql)
E.QueryEngine.planned = planned
from fuzz_worker import Harness, configurations
h = Harness(configurations("cpu"))
h.run(20261125, 100000, int(sys.argv[1]))
E.QueryEngine.planned = orig
engs = {id(o): o for o in gc.get_objects() if isinstance(o, E.QueryEngine)}
sqls = [(engs[i], s) for i, s in captured if i in engs]
from hetdb.exec import plan_cache
best = []
for rep in range(int(sys.argv[2])):
    n = 0
    t = time.process_time()
    for eng, s in sqls:
        eng._plans.pop(s, None); plan_cache.clear()
        try:
            eng.planned(s); n += 1
        except Exception:
            pass
    best.append((time.process_time() - t) / n * 1000)
print(sys.argv[3], f"{n} statements, ms per plan: min {min(best):.3f} all", [round(b, 3) for b in best])
