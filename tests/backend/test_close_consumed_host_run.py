"""A fused pipeline closes its scan once every delivery went to its kernel (exec/operators/scan_device.py
``close_consumed``), inside the pipeline instead of at the query's end, and leaves nothing behind: SSB's
13 queries warm on a ``device="gpu"`` connection whose CuPy is ``scripts/host_only_gpu.py``'s stand-in
(in a fresh interpreter: ``close_consumed_host.py``; kernels do nothing, so answers are the GPU tests'
business: test_gpu_early_scan.py). With CLOSE_CONSUMED off every scan closes at the end, as before."""

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
    return dataset(tmp_path_factory.mktemp("close-consumed"), "ssb-0.01-plain", _build_plain)


def test_the_fact_pipeline_closes_its_scan_and_the_query_leaves_nothing(ssb_db):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "close_consumed_host.py"), ssb_db.path],
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    runs = [json.loads(ln) for ln in got.stdout.splitlines() if ln.startswith("{")]
    assert len(runs) == 26
    for run in runs:
        assert run["budget_left"] == 0 and run["host_pinned"] == 0, run
        assert run["early"] > 0, run  # (warm: the fact scan started early, and it streamed)
        # on: the fused aggregation's scan, where the largest table's pipeline is one (at SF 0.01 some
        # plans build a hash table of lineorder instead), closed by its pipeline; off: every scan at the end
        assert run["in_pipeline"] <= (1 if run["on"] else 0), run
    assert sum(r["in_pipeline"] for r in runs if r["on"]) >= 3
    on = {r["query"]: r["in_pipeline"] + r["at_end"] for r in runs if r["on"]}
    off = {r["query"]: r["at_end"] for r in runs if not r["on"]}
    assert on == off  # (the same scans closed, earlier)
