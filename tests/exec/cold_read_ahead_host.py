"""Run in a fresh interpreter by test_cold_read_ahead_host_run.py: SSB's 13 queries cold (the process's
pinned host tier emptied, a fresh connection per run) on a ``device="gpu"`` connection with
``scripts/host_only_gpu.py`` standing in for CuPy (kernels do nothing: answers are not checked here),
with exec/early_scan.COLD_READ_AHEAD on and off. Prints one JSON line per query and setting: the early
scans' statistics, when the streamers' reads started (stream_io.PageReads._read_span) against when
the pipelines started, and what the query left: budget bytes beyond the device cache, host-tier pins.

    python tests/exec/cold_read_ahead_host.py DB
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import host_only_gpu  # noqa: E402

host_only_gpu.install()
host_only_gpu._no_compile()

import hetdb  # noqa: E402
from hetdb.backend.gpu import stream_io  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402
from hetdb.cache.host_cache import clear_shared_host_cache, existing_shared_host_cache  # noqa: E402
from hetdb.exec import early_scan, engine  # noqa: E402

events: list[tuple[float, str, str]] = []  # (time, "read" | "pipeline", table)
_pipeline, _span = engine.run_pipeline, stream_io.PageReads._read_span


def run_pipeline(ctx, pipe, pool, threads):
    table = getattr(getattr(pipe.source, "scan", None), "table", None)
    if table is not None:
        events.append((time.perf_counter(), "pipeline", table))
    return _pipeline(ctx, pipe, pool, threads)


def read_span(self, items, wait_for):
    events.append((time.perf_counter(), "read", self.reader.name))
    return _span(self, items, wait_for)


engine.run_pipeline = run_pipeline
stream_io.PageReads._read_span = read_span


def main() -> None:
    db = sys.argv[1]
    for q in load_queries("ssb"):
        for on in (True, False):
            early_scan.COLD_READ_AHEAD = on
            clear_shared_host_cache()
            con = hetdb.connect(db, device="gpu", create=False, gpu_batch_bytes=64 << 10)
            events.clear()
            res = con.sql(q.sql)
            res.arrow()
            device = con._get_engine().device
            left = device.budget.used_bytes - device.cache.used_bytes
            con.close()
            tier = existing_shared_host_cache()

            def first(kind: str, table: str) -> float | None:
                return next((t for t, k, w in sorted(events) if k == kind and w == table), None)

            fact_read, fact_pipe = first("read", "lineorder"), first("pipeline", "lineorder")
            dims = {w for _, k, w in events if k == "read" and w != "lineorder"}
            print(json.dumps({"query": q.name, "on": on, "early": res.stats["early_scans"],
                              "fact_read_before_its_pipeline": fact_read < fact_pipe,
                              "dims_read_before_the_fact": sorted(d for d in dims if first("read", d) < fact_read),
                              "dims": sorted(dims), "budget_left": left,
                              "host_pinned": tier.pinned_bytes() if tier else 0}), flush=True)


if __name__ == "__main__":
    main()
