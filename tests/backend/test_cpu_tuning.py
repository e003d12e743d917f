"""backend/cpu/tuning.py: HETDB_CPU_TUNE's spelling, overrides restored, and a process started with a
threshold set runs with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetdb.backend.cpu import tuning


def test_parse_values_and_errors() -> None:
    assert tuning.parse("parallel_merge_rows=off, small_sink_rows=32k,result_morsel_rows=2M") == {
        "parallel_merge_rows": tuning.OFF, "small_sink_rows": 32 << 10, "result_morsel_rows": 2 << 20}
    assert tuning.parse("") == {}
    assert tuning.parse("small_source_rows=0") == {"small_source_rows": 0}
    with pytest.raises(ValueError, match="no_such"):
        tuning.parse("no_such=1")
    with pytest.raises(ValueError, match="small_sink_rows"):
        tuning.parse("small_sink_rows=lots")
    with pytest.raises(ValueError):
        tuning.parse("small_sink_rows")


def test_override_restores() -> None:
    before = dict(tuning.values)
    with tuning.override(small_sink_rows=5, parallel_merge_rows=tuning.OFF):
        assert tuning.get("small_sink_rows") == 5
        assert tuning.get("parallel_merge_rows") == tuning.OFF
    assert tuning.values == before
    with pytest.raises(KeyError):
        with tuning.override(nothing=1):
            pass
    assert set(tuning.values) == set(tuning.KNOBS)


def test_environment_sets_a_process() -> None:
    src = str(Path(tuning.__file__).parents[3])
    env = dict(os.environ, HETDB_CPU_TUNE="direct_parallel_rows=off,merge_parts_per_thread=3",
               PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", "from hetdb.backend.cpu import tuning as t; "
                          "print(t.get('direct_parallel_rows'), t.get('merge_parts_per_thread'))"],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(tuning.OFF), "3"]
