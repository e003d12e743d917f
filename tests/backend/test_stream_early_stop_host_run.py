"""A GPU scan stopped early returns its device memory at ``close()`` whoever still references the
step's Batches (the early-stop leak, issue 8): PageStreamer run on the host (``scripts/host_only_cupy.py``
stands in for CuPy, in a fresh interpreter: ``stream_early_stop_host.py``) over plain pages, which
need no kernel, batched, paged and per row group. The consumer keeps the Batch of the step it
stopped at and the iterator, as a suspended generator frame did on the H100's CPython 3.12.3, where
``close()`` on a generator paused outside a ``try`` kept its locals (python/cpython gh-118272). The
real device path: test_gpu_stream_batch.py::test_early_stop_returns_every_pin_reservation_and_device_byte."""

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


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    rng = np.random.default_rng(8)
    n = 4 * RPP + 1000  # 5 row groups, the last one partial
    i64 = np.iinfo(np.int64)
    cols = {"a": (T.INT64, pa.array(rng.integers(i64.min, i64.max, n, endpoint=True))),
            "b": (T.FLOAT64, pa.array(rng.standard_normal(n))),
            "c": (T.FLOAT64, pa.array(rng.uniform(-1e300, 1e300, n)))}
    path = str(tmp_path_factory.mktemp("early-stop") / "db")
    db = Database.open(path, create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP) as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    reader = Database.open(path, create=False).table("t")
    # plain pages: a delivery needs no decode kernel, so the host stand-in runs every step
    assert {reader.page_codec(c, rg) for c in cols for rg in range(reader.num_row_groups)} == {"plain"}
    return path


def test_close_frees_the_stopped_steps_device_arrays_while_batch_and_iterator_are_held(db_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "stream_early_stop_host.py"), db_path, "batched,paged,row-group"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 0, got.stderr[-3000:]
    runs = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    assert [r["mode"] for r in runs] == ["batched", "paged", "row-group"]
    for r in runs:
        if r["mode"] == "batched":
            assert len(r["row_groups"]) == 2 and r["rows"] == 2 * RPP, r
        else:
            assert len(r["row_groups"]) == 1 and r["rows"] == RPP, r
        # every array the streamer allocated is gone, though the consumer still holds the Batch
        assert r["arrays_alive"] == 0 and r["bytes_alive"] == 0, r
        assert r["kept_columns"] == 0, r  # (close emptied the step's Batches)
        assert r["budget_used"] == 0 and r["host_pinned"] == 0, r
        assert r["generators"] == ["GEN_CLOSED"], r  # every iterator handed out, and the streamer's own
