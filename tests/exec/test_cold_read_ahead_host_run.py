"""Cold GPU queries start their scans' reads with the query (exec/early_scan.py COLD_READ_AHEAD): the
dimension scans' first, then the fact scan's first delivery groups, before any pipeline runs; the
pipelines take the streamers over and the query leaves nothing behind. SSB's 13 queries cold (host
tier emptied, fresh connections) on a ``device="gpu"`` connection whose CuPy is
``scripts/host_only_gpu.py``'s stand-in (in a fresh interpreter: ``cold_read_ahead_host.py``;
kernels do nothing, answers are the GPU tests' business: test_gpu_cold_scan.py). Off: nothing starts
early and the fact scan reads once its pipeline runs, as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "differential"))

from diff_data import dataset  # noqa: E402


def _build_plain(path: str) -> None:
    from hetdb.datagen import ssb
    from hetdb.storage import Database

    # plain pages: the stand-in's deliveries carry true values without a decode kernel
    ssb.generate(Database.open(path, create=True), 0.01, workers=1, rows_per_page=4096, compression="none")


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("cold-read-ahead"), "ssb-0.01-plain", _build_plain)


def test_cold_queries_read_their_scans_ahead_and_leave_nothing(ssb_db):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "cold_read_ahead_host.py"), ssb_db.path],
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    runs = [json.loads(ln) for ln in got.stdout.splitlines() if ln.startswith("{")]
    assert len(runs) == 26
    for run in runs:
        assert run["budget_left"] == 0 and run["host_pinned"] == 0, run
        assert run["dims"], run
        early = run["early"]
        if run["on"]:
            # every scan started (the fact's and its dimensions') taken over by its pipeline, none primed
            assert early["started"] == early["taken"] >= 2 and early["primed_bytes"] == 0, run
            assert run["fact_read_before_its_pipeline"], run
            assert len(run["dims_read_before_the_fact"]) >= early["started"] - 1, run
        else:
            assert early["started"] == 0 and not run["fact_read_before_its_pipeline"], run
