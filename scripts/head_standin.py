"""The warm GPU query's head on the host stand-in for CuPy (scripts/host_only_gpu.py): per query, the
median time from ``con.sql()`` to the first host->device copy queued (the fact scan's first delivery's),
over fresh connections (the warm benchmark's way), and the syscalls (stat, listdir) made before it.

    PYTHONPATH=src python scripts/head_standin.py DB [q1.1,q2.1,q3.1,q4.1] [RUNS]

DB: an uncompressed SSB database (``hetdb gen ssb`` with compression none; the stand-in's kernels do
nothing, so compressed pages would not decode). Stand-in times are the GPU engine's Python on this
machine's CPU, copies as host memcpys: compare before/after on one machine, never with GPU numbers."""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_only_gpu as h  # noqa: E402

h.install()
h._no_compile()
import cupy  # noqa: E402

import hetdb  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402

db = sys.argv[1]
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["q1.1", "q2.1", "q3.1", "q4.1"]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
texts = {q.name: q.sql for q in load_queries("ssb")}
copies: list[float] = []
calls: list[str] = []
counting = [False]
memcpy = h._memcpy_async


def first_copy(*a, **k):
    copies.append(time.perf_counter())
    counting[0] = False
    return memcpy(*a, **k)


h._memcpy_async = cupy.cuda.runtime.memcpyAsync = first_copy
stat, listdir = os.stat, os.listdir


def counted(fn, name):
    def call(*a, **k):
        if counting[0]:
            calls.append(name)
        return fn(*a, **k)
    return call


os.stat, os.listdir = counted(stat, "stat"), counted(listdir, "listdir")
for name in names:
    sql = texts[name]
    for _ in range(3):
        con = hetdb.connect(db, device="gpu", create=False)
        con.sql(sql).arrow()
        con.close()
    heads, walls = [], []
    for _ in range(runs):
        con = hetdb.connect(db, device="gpu", create=False)
        copies.clear()
        calls.clear()
        counting[0] = True
        t0 = time.perf_counter()
        con.sql(sql).arrow()
        t1 = time.perf_counter()
        con.close()
        heads.append(copies[0] - t0)
        walls.append(t1 - t0)
    print(f"{name} head {statistics.median(heads) * 1e3:.3f} ms (to the first copy; median of {runs}), "
          f"wall {statistics.median(walls) * 1e3:.2f} ms, syscalls before it (last run): "
          f"{len(calls)} {sorted(set(calls))}", flush=True)
