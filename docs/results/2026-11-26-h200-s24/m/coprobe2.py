"""What a forced split's end does: python ckpt/coprobe2.py DB QUERY SPLIT
Per warm run (forced split, workers after the first delivery): finish_fused's branch (host or device),
the CPU parts' key columns (dictionary / plain), the aggregation's final merge: batches, rows, ms."""
import sys, time, os, functools
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.exec import coprocess_plan, fusion_run, coprocess
from hetdb.exec.operators import aggregate
db, qname, split = sys.argv[1], sys.argv[2], int(sys.argv[3])
coprocess_plan.WORKERS_AFTER = "first"
q = load_queries("ssb", [qname])[0]
from types import SimpleNamespace
w = coprocess_plan.cpu_workers(SimpleNamespace(options=SimpleNamespace(threads=os.cpu_count())))
LOG = []
T0 = [0.0]
def ms(): return (time.perf_counter() - T0[0]) * 1e3
def kinds(b):
    return {k: ("dict%d" % id(c.dictionary) % 10000 if c.dictionary is not None else ("plain" if c.offsets is not None else str(getattr(c.data, 'dtype', '?')))) + ("@dev" if type(c.data if c.data is not None else c.offsets).__module__.startswith("cupy") else "@host") for k, c in b.columns.items() if k.startswith("g")}
ff = fusion_run.finish_fused
def finish_fused(ctx, pipe, plan, g, fp, state, co=None, cpu_parts=None):
    t = ms()
    LOG.append(f"finish_fused at {t:.2f}: cpu_parts {[ (p.num_rows, kinds(p)) for p in (cpu_parts or [])]}")
    host, result, rest = ff(ctx, pipe, plan, g, fp, state, co, cpu_parts)
    LOG.append(f"  -> host {'yes' if host is not None else 'no'}, rest {len(rest)}, g.batches {[(b.num_rows, kinds(b)) for b in g.batches]} {ms() - t:.2f} ms")
    return host, result, rest
fusion_run.finish_fused = finish_fused
fin = coprocess.CoProcess.finish
def cofinish(self):
    t = ms(); r = fin(self); LOG.append(f"co.finish at {t:.2f} took {ms() - t:.2f} ms, endwait {self.end_wait_s*1e3:.2f}"); return r
coprocess.CoProcess.finish = cofinish
final = aggregate.HashAggregate._final
def _final(self, ctx, g, batches):
    t = ms(); r = final(self, ctx, g, batches)
    LOG.append(f"_final at {t:.2f} on {ctx.backend.name}: {[(b.num_rows, kinds(b)) for b in batches]} unique {g.groups_unique} took {ms() - t:.2f} ms -> {r.num_rows} rows")
    return r
aggregate.HashAggregate._final = _final
import threading
from hetdb.exec import coprocess_batch
REC = []
_lock = threading.Lock()
orig_work = coprocess.CoProcess._work
def _work(self):
    th = threading.current_thread(); th._drv = 0.0; th._pre = None
    t0 = time.thread_time(); s0 = ms()
    try:
        return orig_work(self)
    finally:
        with _lock:
            REC.append((s0, ms(), (time.thread_time() - t0) * 1e3, th._drv * 1e3, None if th._pre is None else (th._pre - t0) * 1e3))
coprocess.CoProcess._work = _work
orig_run_share = coprocess_batch.run_share
def run_share(worker, share, lops, lsink):
    th = threading.current_thread(); d = share.drive
    def drive(*a):
        t = time.thread_time()
        if th._pre is None: th._pre = t
        try: return d(*a)
        finally: th._drv += time.thread_time() - t
    share.drive = drive
    try: return orig_run_share(worker, share, lops, lsink)
    finally: share.drive = d
coprocess_batch.run_share = run_share
for mode in ("base", "split"):
    coprocess_plan.FORCED_SPLIT = (w, split) if mode == "split" else None
    opts = {"gpu_coprocess": "auto" if mode == "split" else "off"}
    for i in range(7):
        con = hetdb.connect(db, device="gpu", create=False, **opts)
        LOG.clear(); REC.clear(); T0[0] = time.perf_counter()
        con.sql(q.sql).arrow(); el = ms(); con.close()
        if i == 1: coprocess_plan.wait_prepared()
        if i >= 4:
            print(f"== {qname} {mode} run {i}: {el:.2f} ms"); print("\n".join(LOG))
            if REC:
                REC.sort()
                print("  workers (start-end ms, thread cpu ms, in drive ms, cpu before first drive ms):", " ".join(f"{a:.1f}-{b:.1f}/{c:.2f}/{d:.2f}/{'-' if e is None else f'{e:.2f}'}" for a, b, c, d, e in REC))
                print(f"  GIL-held worker python: {sum(c - d for _, _, c, d, _ in REC):.2f} ms in all")
