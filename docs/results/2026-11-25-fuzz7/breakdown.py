"""Where a campaign process's CPU time goes, per 100 cases under the 8 CPU configurations (run from the
repository root: PYTHONPATH=src python docs/results/2026-11-25-fuzz7/breakdown.py 100): Numba compiles,
planning (QueryEngine.planned), DuckDB's answers, the rest (hetdb executing, the harness); then the same
cases again (plans cached, loops compiled) with the harness's own costs (drawing cases, comparing answers)."""
import sys, time, threading
sys.path.insert(0, "tests/differential")
import numba.core.dispatcher as D
from hetdb.exec import engine as E
acc = {"compile": 0.0, "plan": 0.0, "duck": 0.0}
tl = threading.local()
def wrap(cls, name, key):
    orig = getattr(cls, name)
    def f(self, *a, **k):
        if getattr(tl, "in_" + key, False):
            return orig(self, *a, **k)
        setattr(tl, "in_" + key, True); t = time.thread_time()
        try:
            return orig(self, *a, **k)
        finally:
            acc[key] += time.thread_time() - t; setattr(tl, "in_" + key, False)
    setattr(cls, name, f)
wrap(D.Dispatcher, "compile", "compile")
wrap(E.QueryEngine, "planned", "plan")
import diff_fuzz
wrap(diff_fuzz.FuzzRunner, "reference", "duck")
from fuzz_worker import Harness, configurations
h = Harness(configurations("cpu"))
h.run(20261132, 0, 10)
for k in acc: acc[k] = 0.0
c = time.process_time()
r = h.run(20261132, 100, int(sys.argv[1]))
total = time.process_time() - c
print(f"total cpu {total:.1f}", {k: round(v, 1) for k, v in acc.items()}, f"rest {total - sum(acc.values()):.1f}")
# harness-only costs: drawing cases and comparing answers
import diff_check
acc2 = {"draw": 0.0, "mismatch": 0.0, "combine": 0.0, "arrow": 0.0}
o_draw = diff_fuzz.FuzzRunner.draw
def draw(self, *a):
    t = time.thread_time(); x = o_draw(self, *a); acc2["draw"] += time.thread_time() - t; return x
diff_fuzz.FuzzRunner.draw = draw
o_mis = diff_fuzz.mismatch
def mis(*a, **k):
    t = time.thread_time(); x = o_mis(*a, **k); acc2["mismatch"] += time.thread_time() - t; return x
diff_fuzz.mismatch = mis
o_comb = diff_fuzz.combine
def comb(*a, **k):
    t = time.thread_time(); x = o_comb(*a, **k); acc2["combine"] += time.thread_time() - t; return x
diff_fuzz.combine = comb
c = time.process_time()
r = h.run(20261132, 100, int(sys.argv[1]))
print(f"again (plans cached, kernels compiled): cpu {time.process_time() - c:.1f}", {k: round(v, 2) for k, v in acc2.items()})
