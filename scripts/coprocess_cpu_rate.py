"""A co-processing CPU worker's time per row group against the CPU engine's own, in one process, on a
CPU-only machine (issue 9: the workers beside the GPU took 16-60 ms a row group where the CPU engine's
threads take ~6).

    PYTHONPATH=src python scripts/coprocess_cpu_rate.py DB [--queries q1.1,q2.1,q3.1,q4.1]
        [--threads 1] [--repeat 3]

Per query, the fact table's aggregating pipeline (SSB lineorder) is timed two ways on a CPU
connection with ``--threads`` threads:

    engine-hot   the CPU engine's compiled pipeline over its decoded host page cache (cpu-hot)
    co           co-processing's CPU workers (exec/coprocess.py, mode "on") taking every row group
                 out of a host tier (plain NumPy memory standing in for the pinned tier) as they
                 would beside the GPU; nobody takes the front

and printed as ms per row group per worker (the pipeline's wall time x workers / row groups), the
median of ``--repeat`` runs after a warm-up. For "co" the worker's own split follows (CoProcess.describe:
wall, thread CPU, reading and decoding per row group).
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
from concurrent.futures import wait

import numpy as np

import hetdb
from hetdb.bench.suites import load_queries
from hetdb.cache import HostPageCache
from hetdb.exec import compiled_cpu
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.scan import TableScan

FACTS = {"lineorder", "lineitem"}


class _NoDeviceCache:
    def __contains__(self, key) -> bool:
        return False


def _tier(nbytes: int) -> HostPageCache:
    def allocate(n: int) -> np.ndarray:
        raw = np.empty(n + 4096, np.uint8)
        start = (-raw.ctypes.data) % 4096
        return raw[start:start + n]

    return HostPageCache(nbytes, block_bytes=64 << 10, chunk_bytes=64 << 20, allocate=allocate)


class Harness:
    """Wraps ``compiled_cpu.run_compiled_cpu``: the fact pipeline's wall time and row groups per
    run; in mode "co" the pipeline runs as co-processing's CPU workers."""

    def __init__(self, tier: HostPageCache) -> None:
        self.tier, self.mode = tier, "engine"
        self.log: list[tuple[float, int, int, str]] = []  # (wall s, row groups, workers, describe)
        self.original = compiled_cpu.run_compiled_cpu
        compiled_cpu.run_compiled_cpu = self.run

    def run(self, ctx, pipe, run, pool, threads):
        from hetdb.exec.coprocess_plan import plan_coprocess

        src = pipe.source
        if not (isinstance(src, TableScan) and src.scan.table in FACTS and isinstance(pipe.sink, HashAggregate)):
            return self.original(ctx, pipe, run, pool, threads)
        reader = run.gsrc
        row_groups = [rg for rg in range(reader.num_row_groups) if src.verdict(ctx, reader, rg) != "skip"]
        if self.mode == "engine":
            t0 = time.perf_counter()
            got = self.original(ctx, pipe, run, pool, threads)
            self.log.append((time.perf_counter() - t0, len(row_groups), threads, ""))
            return got
        tier = self.tier
        ctx.device = types.SimpleNamespace(host_tier=lambda options: tier, cache=_NoDeviceCache())
        try:
            co, why = plan_coprocess(ctx, pipe, reader, run, row_groups)
            if co is None:
                raise SystemExit(f"not co-processed: {why}")
            co.workers = co.shared.workers = threads
            t0 = time.perf_counter()
            co.start()
            wait(co._futures)  # (every row group taken: nobody claims the front)
            lsink = pipe.sink.init_local(ctx, run.gsink)
            for part in co.finish():
                pipe.sink.add_partial(ctx, part, run.gsink, lsink)
            pipe.sink.combine(ctx, run.gsink, lsink)
            self.log.append((time.perf_counter() - t0, len(co.shared.cpu_taken), threads, co.describe()))
        finally:
            ctx.device = None
        ctx.results[pipe.pid] = pipe.sink.finalize(ctx, run.gsink)
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q2.1,q3.1,q4.1")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", default="engine-hot,co")
    ap.add_argument("--tier-bytes", type=int, default=2 << 30)
    args = ap.parse_args(argv)
    harness = Harness(_tier(args.tier_bytes))
    queries = load_queries(args.suite, args.queries.split(","))
    print(f"db={args.db} threads={args.threads} repeat={args.repeat}", flush=True)
    for q in queries:
        answer = None
        for mode in args.modes.split(","):
            options = {"threads": args.threads}
            if mode == "co":
                options["gpu_coprocess"] = "on"
            harness.mode = "co" if mode == "co" else "engine"
            with hetdb.connect(args.db, device="cpu", **options) as con:
                rows = sorted(con.sql(q.sql).fetchall(), key=repr)  # (warm-up: compiles, fills caches)
                harness.log.clear()
                walls = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    con.sql(q.sql).fetchall()
                    walls.append(time.perf_counter() - t0)
            answer = rows if answer is None else answer
            per = [w * n / max(1, rgs) * 1e3 for w, rgs, n, _ in harness.log]
            pipe = [w * 1e3 for w, _, _, _ in harness.log]
            note = harness.log[-1][3] if harness.log else ""
            print(f"{q.name} {mode:11s} query {statistics.median(walls) * 1e3:8.2f} ms, fact pipeline "
                  f"{statistics.median(pipe):8.2f} ms = {statistics.median(per):6.2f} ms per row group per worker "
                  f"({harness.log[-1][1] if harness.log else 0} row groups){'' if rows == answer else ' ANSWER DIFFERS'}"
                  f"{note}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
