"""CPU+GPU co-processing's GPU-side Python run on the host (``scripts/host_only_gpu.py`` stands in for
CuPy, in a fresh interpreter: ``coprocess_host.py``), on a warm SSB q1.1 with gpu_coprocess "auto"
and the split forced: the early fact scan is the shared scan's GPU side and stops before the back
reserved for the CPU workers (SharedScan.reserve), the workers take that back, and what they leave
the GPU streams on its own at its end (SharedScan.take_rest, scan_device._restart). The stand-in's
kernels do nothing: the GPU's share adds nothing to the answer, the CPU's is real. The real device
path: test_gpu_coprocess.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("coprocess-host") / "ssb")
    # plain pages (the stand-in's "device" gets the stored bytes), 10 row groups of lineorder
    subprocess.run([sys.executable, "-m", "hetdb.cli.main", "generate", "ssb", path, "--sf", "0.05",
                    "--rows-per-page", "32768", "--compression", "none", "--workers", "1"],
                   check=True, capture_output=True, env=_env(), timeout=300)
    return path


def _env() -> dict:
    # (dimension builds operator at a time: their filters in NumPy, so the CPU loops probe real rows)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
                HETDB_GPU_COMPILE_OFF="row_sinks")


def _runs(db_path: str, mode: str) -> list[dict]:
    got = subprocess.run([sys.executable, str(HERE / "coprocess_host.py"), db_path, mode],
                         capture_output=True, text=True, env=_env(), timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    runs = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    assert len(runs) == 2, got.stdout[-2000:]
    return runs


@pytest.mark.parametrize("mode", ["split", "primed", "queued"])
def test_the_workers_take_the_reserved_back_while_the_early_scan_streams_the_rest(db_path, mode):
    # (the workers start with the fact pipeline, once the early scan is primed, or once the GPU's
    # share is queued)
    for r in _runs(db_path, mode):
        assert r["early"]["started"] == 2 and r["early"]["taken"] == 2, r  # (fact and date scans)
        assert r["co"] == [{"reserved": 3, "cpu_row_groups": 3, "gpu_row_groups": 7, "workers": 2}], r
        assert r["rows"][0][0] is not None and r["rows"][0][0] > 0, r  # (the CPU's share: real rows)


@pytest.mark.parametrize("narrow", ["", "-narrow"])
def test_the_workers_share_in_compiled_calls_gives_the_python_paths_answer(db_path, narrow):
    # the untimed run before the timed ones decodes the reserved pages (the compiled call hands
    # each back to Python, which keeps them decoded, and makes their narrow copies); the timed runs
    # read them in the workers' compiled calls
    compiled, python = _runs(db_path, "split" + narrow), _runs(db_path, "python" + narrow)
    assert compiled[1]["compiled"] == [True], compiled
    assert python[1]["compiled"] == [False], python
    for r in compiled + python:
        assert r["co"] == [{"reserved": 3, "cpu_row_groups": 3, "gpu_row_groups": 7, "workers": 2}], r
    assert {str(r["rows"]) for r in compiled + python} == {str(python[0]["rows"])}


def test_what_the_workers_leave_of_the_reserved_back_the_gpu_streams_at_its_end(db_path):
    for r in _runs(db_path, "rest"):
        assert r["co"] == [{"reserved": 3, "cpu_row_groups": 0, "gpu_row_groups": 10, "workers": 2}], r
        assert r["rows"] == [[None]], r  # (the stand-in's kernels add nothing)
