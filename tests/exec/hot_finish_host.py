"""Run by test_hot_finish_host_run.py in a fresh interpreter: a GPU connection on the CuPy stand-in
(scripts/host_only_gpu.py) whose fused aggregations fill every group of their domains with varied
values (``--groups``: the finish, the ORDER BY and the result have the groups a GPU run has), the 13
SSB queries each run in full (hot replay off) and then hot. Prints one JSON line per query: whether
every hot run's table equals the full run's, and how often a replay used a kept launch's tail recipe
(exec/hot_tail.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HETDB_GPU_COMPILE_OFF"] = "row_sinks"  # (the dimensions' rows through NumPy: real domains)
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

import host_only_gpu  # noqa: E402

host_only_gpu.install()

from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402


def main(db: str) -> None:
    host_only_gpu._no_compile()
    host_only_gpu._fill_groups()
    from hetdb.exec import hot_replay, hot_tail

    used = [0]
    real_run, real_usable = hot_tail.TailRecipe.run, hot_replay.usable

    def run(self, host, out, groups, count=True):
        used[0] += count
        return real_run(self, host, out, groups, count)

    hot_tail.TailRecipe.run = run
    with hetdb.connect(db, device="gpu") as con:
        for name, sql in load_queries("ssb").items():
            hot_replay.usable = lambda *a, **k: False
            full = con.sql(sql).arrow()
            hot_replay.usable = real_usable
            used[0] = 0
            hot = [con.sql(sql) for _ in range(6)]
            print(json.dumps({"query": name, "rows": full.num_rows, "same": all(r.arrow().equals(full) for r in hot),
                              "replayed": sum(int(r.stats.get("hot_replayed", 0)) for r in hot),
                              "recipe": used[0]}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
