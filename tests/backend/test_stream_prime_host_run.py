"""A primed GPU scan (exec/early_scan.py: the fact scan's first delivery queued before the dimension
scans, the rest after them) queues one delivery for ``prime(1)``, the rest within the bytes given for
``prime_more``, nothing more once its consumer took a delivery, and hands the consumer every row group in
order with the pages' values: PageStreamer run on the host (``scripts/host_only_cupy.py`` stands in for
CuPy, in a fresh interpreter: ``stream_prime_host.py``) over plain pages. The device path:
test_gpu_early_scan.py."""

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
# primed deliveries aim at 4 x batch_bytes (one row group's bytes here), ramped up to it (overlap) from a
# quarter of it (stream_batch.PRIMED_RAMP 2: 1 row group, then 2, then 3 left) and down at the end
# (TAIL_RAMP: 2, 1, 1 row groups; the tail takes at most half of the bytes)
GROUPS = 8


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    rng = np.random.default_rng(9)
    n = GROUPS * RPP
    cols = {"a": (T.INT64, pa.array(rng.integers(-2**62, 2**62, n))),
            "b": (T.FLOAT64, pa.array(rng.standard_normal(n))),
            "c": (T.INT64, pa.array(rng.integers(0, 2**40, n)))}
    path = str(tmp_path_factory.mktemp("prime") / "db")
    db = Database.open(path, create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP,
                         compression="none") as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    reader = Database.open(path, create=False).table("t")
    assert {reader.page_codec(c, rg) for c in cols for rg in range(reader.num_row_groups)} == {"plain"}
    return path


def test_prime_then_prime_more_queue_the_first_delivery_then_the_rest(db_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "stream_prime_host.py"), db_path],
                         capture_output=True, text=True, env=env, timeout=120)
    assert got.returncode == 0, got.stderr[-3000:]
    first_then_rest, all_at_once, first_only, no_tail, first_two = [json.loads(ln) for ln in got.stdout.splitlines()
                                                                    if ln.startswith("{")]
    everything = [[0], [1, 2], [3, 4, 5], [6], [7]]
    # prime(1): one delivery; prime_more: the rest (five in all); a second prime_more: nothing left
    assert first_then_rest["queued"] == [1, 5, 5], first_then_rest
    assert all_at_once["queued"] == [5], all_at_once
    assert first_only["queued"] == [1], first_only
    # one delivery more (its held bytes and the largest delivery's given: early_scan._prime_next), then the rest
    assert first_two["queued"] == [1, 2, 5], first_two
    for run in (first_then_rest, all_at_once, first_only, first_two):
        assert run["deliveries"] == everything, run
        assert run["total"] == 5 and run["exact"], run
    # without the tail (a dimension scan's priming): 1 row group, then 2, then 4, then the one left
    assert no_tail["queued"] == [4] and no_tail["deliveries"] == [[0], [1, 2], [3, 4, 5, 6], [7]], no_tail
    for run in (first_then_rest, all_at_once, first_only, no_tail, first_two):
        assert run["exact"] and run["budget_used"] == 0 and run["host_pinned"] == 0, run
