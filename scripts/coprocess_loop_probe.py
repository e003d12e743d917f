"""A co-processing CPU worker's compiled loop against the CPU engine's own, on the same query and pages:
what the H100 checkpoint showed (SSB SF 20 q4.1: a worker beside the GPU 21 ms of loop per row group,
the CPU engine on 16 threads ~11 ms a row group end to end) is it the loop, its inputs or the builds?

    python3 scripts/coprocess_loop_probe.py DB [--queries q4.1,q1.1] [--runs 3] [--threads 4]

Per query: the CPU engine (device="cpu", one thread, hot: its pages decoded in its cache) and the GPU
with co-processing forced on (device="gpu", gpu_coprocess="on", ``--threads``: its workers take half of
what is left at each steal), ``--runs`` runs each after one warm-up. For each side: the median thread
CPU of a loop call over a whole row group (the largest row count), the calls, the kernel's argument
types (dtypes of the column arrays: narrowed or not) and the join tables it probes (rows, direct or
hashed, key range, unique, runtime filter), so a difference shows where it lies.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import numpy as np

import hetdb
from hetdb.bench.suites import load_queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--queries", default="q4.1,q1.1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--no-gpu", action="store_true", help="the CPU engine's side only")
    args = ap.parse_args()
    from hetdb.exec import compiled_cpu, coprocess

    lock = threading.Lock()
    side = ["engine"]
    calls: dict[str, list] = {}
    real = compiled_cpu._Worker._run_kernel

    def run_kernel(self, kernel, cols, n, lsink, runs):
        t0 = time.thread_time()
        real(self, kernel, cols, n, lsink, runs)
        dt = time.thread_time() - t0
        who = "co" if isinstance(self, coprocess._CoWorker) else side[0]
        types = tuple(str(c.data.dtype) for c in cols.values())
        with lock:
            calls.setdefault(who, []).append((n, dt, types, self.p))

    compiled_cpu._Worker._run_kernel = run_kernel
    for q in load_queries("ssb", args.queries.split(",")):
        calls.clear()
        side[0] = "engine"
        with hetdb.connect(args.db, device="cpu", threads=1) as con:
            for _ in range(args.runs + 1):
                con.sql(q.sql).fetchall()
        side[0] = "gpu-side"
        for _ in range(0 if args.no_gpu else args.runs + 1):
            with hetdb.connect(args.db, device="gpu", gpu_coprocess="on", threads=args.threads) as con:
                con.sql(q.sql).fetchall()
        for who in ("engine", "co"):
            got = calls.get(who) or []
            if not got:
                print(f"{q.name} {who}: no loop call", flush=True)
                continue
            full = max(n for n, *_ in got)
            whole = [c for c in got if c[0] == full]
            ms = statistics.median(dt for _, dt, _, _ in whole) * 1e3
            kinds: dict[tuple, int] = {}
            for _, _, types, _ in whole:
                kinds[types] = kinds.get(types, 0) + 1
            print(f"{q.name} {who}: {len(whole)} loop calls of {full:,} rows, median {ms:.2f} ms thread CPU "
                  f"({ms / full * 1e6:.2f} ns/row); column dtypes {kinds}", flush=True)
            p = whole[-1][3]
            print(f"    plan: direct {p.direct}, narrow {getattr(p, 'narrow', None)}", flush=True)
            for op, s, pay in p.probes:
                t = s.table
                direct = "hashed" if t.direct is None else f"direct {t.direct.shape[0]:,} from {t.direct_lo}"
                print(f"    probe {op.kind}: build rows {s.batch.num_rows:,}, {direct}, unique {t.unique}, "
                      f"keys {t.keys.dtype}, filter {'yes' if t.key_filter is not None else 'no'}, "
                      f"payload {[f.cid for f in pay]}, build columns "
                      f"{[(k, str(np.asarray(c.data).dtype)) for k, c in s.batch.columns.items()]}", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
