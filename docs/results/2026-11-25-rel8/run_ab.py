import sys, time, gc
sys.path.insert(0, "tests/differential")
from fuzz_worker import Harness, configurations
from hetdb.exec import engine as E, plan_cache
h = Harness(configurations("cpu"))
n = int(sys.argv[1])
h.run(20261125, 100000, n)
res = []
for rep in range(2):
    for o in gc.get_objects():
        if isinstance(o, E.QueryEngine):
            o.clear_plan_cache()
    plan_cache.clear()
    c = time.process_time(); w = time.perf_counter()
    r = h.run(20261125, 100000, n)
    res.append((time.process_time() - c, time.perf_counter() - w))
print(sys.argv[2], f"{n} cases x 8 configurations (kernels compiled, plans not cached): CPU s", [round(c, 2) for c, _ in res], "wall s", [round(w, 2) for _, w in res])
