"""Run by test_hot_replay_host_run.py in a fresh interpreter: a GPU connection on the CuPy stand-in
(scripts/host_only_gpu.py: kernels do nothing, so answers are not DuckDB's, but the engine's Python
runs for real), SSB q1.1 run hot, then after each change that must stop a replay. Prints one JSON
line per run: the step, whether it replayed (stats 'hot_replayed') and the answer's rows."""

from __future__ import annotations

import gc
import json
import sys
import weakref
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

import host_only_gpu  # noqa: E402

host_only_gpu.install()

from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402


def main(db: str) -> None:
    host_only_gpu._no_compile()
    sql = load_queries("ssb")["q1.1"]

    def run(con, step: str) -> None:
        res = con.sql(sql)
        rows = res.arrow().to_pylist()
        print(json.dumps({"step": step, "replayed": res.stats.get("hot_replayed", 0),
                          "cached": bool(res.stats.get("plan_cached")), "rows": rows}, default=str), flush=True)

    with hetdb.connect(db, device="gpu") as con:
        for i in range(4):
            run(con, f"hot{i}")
        with hetdb.connect(db, device="cpu") as writer:  # (the stand-in's kernels would select nothing)
            writer.sql("INSERT INTO lineorder SELECT * FROM lineorder WHERE lo_orderkey < 50")
        for i in range(4):
            run(con, f"insert{i}")
        con.sql("SET gpu_batch_bytes = 8388608")
        for i in range(4):
            run(con, f"set{i}")
        # every page and kept table leaves the device cache: nothing of them stays alive for the
        # replay record (its plans are weak references, its pages and page table keys)
        engine = con._get_engine()
        cache = engine.device.cache
        (record,) = engine._hot.values()
        (step,) = record.steps.values()
        held = [weakref.ref(cache.derived(step.resident_key)), weakref.ref(cache.derived(step.table_key)[0]),
                weakref.ref(step.plan())]
        cache.clear()
        gc.collect()
        print(json.dumps({"step": "freed", "alive": sum(r() is not None for r in held)}), flush=True)
        for i in range(4):
            run(con, f"evicted{i}")
        con.sql("SET gpu_hot_replay = false")
        for i in range(4):
            run(con, f"off{i}")


if __name__ == "__main__":
    main(sys.argv[1])
