"""Run in a fresh interpreter by test_close_consumed_host_run.py: SSB's 13 queries warm (a fresh
connection per run, pages in the process's pinned host tier) on a ``device="gpu"`` connection with
``scripts/host_only_gpu.py`` standing in for CuPy (kernels do nothing: answers are not checked here).
Prints one JSON line per query and CLOSE_CONSUMED setting: how many scans a fused pipeline closed
itself (exec/operators/scan_device.close_consumed) and when (the pipeline that closed them was still
running), the scan closes left to the query's end, and what the query left: budget bytes of the
connection beyond its device cache, host-tier pins.

    python tests/backend/close_consumed_host.py DB
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import host_only_gpu  # noqa: E402

host_only_gpu.install()
host_only_gpu._no_compile()

import hetdb  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402
from hetdb.cache.host_cache import existing_shared_host_cache  # noqa: E402
from hetdb.exec import engine  # noqa: E402
from hetdb.exec.operators import scan_device  # noqa: E402

running: list[str] = []  # the pipeline running now ("" after the pipelines)
closes: list[tuple[str, bool]] = []  # (pipeline running, whether a streamer was open) per close
_pipeline, _close = engine.run_pipeline, scan_device.DeviceScanState.close


def run_pipeline(ctx, pipe, pool, threads):
    running.append(f"p{pipe.pid}")
    try:
        return _pipeline(ctx, pipe, pool, threads)
    finally:
        running.pop()


def close(self):
    closes.append((running[-1] if running else "", self.streamer is not None))
    return _close(self)


engine.run_pipeline = run_pipeline
scan_device.DeviceScanState.close = close


def main() -> None:
    db = sys.argv[1]
    for q in load_queries("ssb"):
        for on in (True, False):
            scan_device.CLOSE_CONSUMED = on
            with hetdb.connect(db, device="gpu", create=False) as con:  # (the host tier loaded)
                con.sql(q.sql).arrow()
            con = hetdb.connect(db, device="gpu", create=False)
            closes.clear()
            res = con.sql(q.sql)
            res.arrow()
            device = con._get_engine().device
            left = device.budget.used_bytes - device.cache.used_bytes
            con.close()
            tier = existing_shared_host_cache()
            print(json.dumps({"query": q.name, "on": on, "early": res.stats["early_scans"]["started"],
                              "in_pipeline": sum(1 for p, open_ in closes if p and open_),
                              "at_end": sum(1 for p, open_ in closes if not p and open_),
                              "budget_left": left, "host_pinned": tier.pinned_bytes() if tier else 0}), flush=True)


if __name__ == "__main__":
    main()
