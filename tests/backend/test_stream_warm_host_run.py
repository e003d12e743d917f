"""A warm GPU scan's deliveries (every page in the pinned host tier: one look-up per group, no per-page
object or step, backend/gpu/stream.WARM_GROUPS; a delivery plan's copies kept for the same sources,
backend/gpu/batch.KEEP_COPIES) are those of the page-by-page path: the same row groups with the pages'
values, the same copies, statistics and route counts, and nothing left pinned in the host tier or held
of the budget, also when the scan stops after its first delivery (primed or not): PageStreamer run on
the host (``scripts/host_only_cupy.py`` stands in for CuPy, in a fresh interpreter:
``stream_warm_host.py``) over plain pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.storage import ColumnSpec, Database

HERE = Path(__file__).resolve().parent
RPP = 4096
GROUPS = 9


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    rng = np.random.default_rng(15)
    n = GROUPS * RPP - 100  # (the last row group shorter)
    cols = {"a": (T.INT64, pa.array(rng.integers(-2**62, 2**62, n))),
            "b": (T.FLOAT64, pa.array(rng.standard_normal(n))),
            "c": (T.INT32, pa.array(rng.integers(-2**31, 2**31, n).astype(np.int32)))}
    path = str(tmp_path_factory.mktemp("warm") / "db")
    db = Database.open(path, create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP,
                         compression="none") as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    return path


def test_warm_groups_and_kept_copies_deliver_what_the_page_by_page_path_does(db_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "stream_warm_host.py"), db_path],
                         capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 0, got.stderr[-3000:]
    runs = [json.loads(ln) for ln in got.stdout.splitlines() if ln.startswith("{")]
    assert [(r["groups"], r["keep"]) for r in runs] == [(True, True), (True, False), (False, True), (False, False)]
    want = runs[-1]  # (the page-by-page path, copies made every time)
    everything = [[rg] for rg in range(GROUPS)]
    for r in runs:
        for key in ("scans", "primed", "stopped", "stopped_primed"):
            for a, b in zip(r[key] if key == "scans" else [r[key]], want[key] if key == "scans" else [want[key]]):
                assert a == b, (r["groups"], r["keep"], key, a, b)
        first, second = r["scans"]
        assert first == second, r
        assert sum(first["deliveries"], []) == sum(everything, []) and len(first["deliveries"]) > 2, first
        assert first["exact"] and first["copies"][0] > 0 and first["stats"]["pages_host"] == 3 * GROUPS, first
        assert sum(r["primed"]["deliveries"], []) == sum(everything, []) and r["primed"]["exact"], r["primed"]
        for run in (first, r["primed"], r["stopped"], r["stopped_primed"]):
            assert run["budget_used"] == 0 and run["host_pinned"] == 0, run
        assert len(r["stopped"]["deliveries"]) == 1 and len(r["stopped_primed"]["deliveries"]) == 1, r


def test_a_pages_argument_tuple_follows_the_fields_of_page():
    # (stream._group_pages makes each _Page from a tuple in the order of _Page's fields)
    import dataclasses

    from hetdb.backend.gpu.stream_pages import _Page

    names = [f.name for f in dataclasses.fields(_Page)]
    assert names[:18] == ["column", "row_group", "key", "location", "encoding", "sections", "num_rows", "value",
                          "slot_offset", "future", "cached", "transient_bytes", "host", "loading", "codec", "route",
                          "host_key", "device_bytes"], names
