"""Hot replay (exec/hot_replay.py) without a GPU: a GPU connection on the CuPy stand-in (in a fresh
interpreter: hot_replay_host.py) runs SSB q1.1 hot, so its fused launch is replayed, and a replay
stops at each change its record depends on: an INSERT into lineorder (a new table version: a new
physical plan), a SET (a new engine), an emptied device cache (its generation moved; the record kept nothing of it alive). The answers
are not DuckDB's (the stand-in's kernels do nothing; tests/exec/test_gpu_hot_replay.py compares
them on a GPU) but a replayed run's must be the full run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    from hetdb.datagen import ssb
    from hetdb.storage import Database

    path = str(tmp_path_factory.mktemp("hot-replay") / "db")
    # plain pages: the stand-in's device scan copies them, no decode kernel is needed
    ssb.generate(Database.open(path, create=True), 0.01, rows_per_page=4096, workers=1, compression="none")
    return path


def test_hot_runs_replay_and_each_change_stops_the_replay(db_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "hot_replay_host.py"), db_path],
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    runs = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    by = {r["step"]: r for r in runs}
    assert len(by) == 21, runs
    assert all(by[f"off{i}"]["replayed"] == 0 for i in range(4))  # (SET gpu_hot_replay = false)
    assert all(by[f"off{i}"]["rows"] == by["evicted0"]["rows"] for i in range(4))
    assert by["freed"]["alive"] == 0  # the record kept no evicted page, page table or stored plan alive
    for phase in ("hot", "insert", "set", "evicted"):
        steps = [by[f"{phase}{i}"] for i in range(4)]
        # the first run after the change runs the full path (a new plan, engine or cache state) ...
        assert steps[0]["replayed"] == 0, (phase, steps)
        # ... and once a full run over resident pages has noted its launch, the later ones replay it
        assert steps[3]["replayed"] == 1, (phase, steps)
        assert all(s["rows"] == steps[0]["rows"] for s in steps), (phase, steps)
    assert not by["insert0"]["cached"] and not by["set0"]["cached"]
