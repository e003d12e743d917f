"""The engine's after-query leak check counts the LIKE patterns the GPU keeps for compiled kernels'
launches (backend/gpu/codegen/runtime.literal_values, process-wide) as kept: the query that first
uses a pattern leaves nothing behind. Before, TPC-H q13 with co-processing forced on (the first q13
of test_gpu_coprocess.py's process) reported 512 bytes leaked: its 18-byte '%special%requests%' in a
pool block. On the host (``like_pattern_leak_host.py`` in a fresh interpreter, CuPy stood in by
``scripts/host_only_gpu.py``) and on the GPU (marked gpu), over ``like_orders``' table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from like_orders import SQL, build_orders

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


@pytest.fixture(scope="module")
def orders_db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("like-orders") / "db")
    build_orders(path)
    return path


def test_the_first_use_of_a_like_pattern_leaves_no_device_memory_host_run(orders_db) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "like_pattern_leak_host.py"), orders_db],
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    out = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    assert len(out) == 1, got.stdout[-2000:]
    r = out[0]
    # the query copied the pattern to the "device" and keeps it: counted as kept, not leaked
    assert r["patterns_before"] == 0 and r["patterns_after"] == 1, r
    assert r["pattern_bytes"] >= len("%special%requests%"), r
    assert r["leaked"] == 0, r


@pytest.mark.gpu
@pytest.mark.parametrize("coprocess", ["off", "on"])
def test_a_like_pattern_a_gpu_query_uses_first_is_kept_not_leaked(orders_db, coprocess) -> None:
    """A pattern no query of the process used before (co-processing forced on, batched deliveries, as
    test_gpu_coprocess.py's [tpch-batched], and off): the kernel's copy of it is kept, nothing leaked,
    the answer is the CPU's."""
    from hetdb.backend.gpu import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible to CuPy")
    import hetdb
    from hetdb.backend.gpu.codegen import runtime

    sql = SQL.replace("%special%requests%", f"%special%{uuid.uuid4().hex}%")
    with hetdb.connect(orders_db, device="cpu") as con:
        expected = sorted(con.sql(sql).fetchall())
    with hetdb.connect(orders_db, device="gpu", gpu_coprocess=coprocess, threads=4, gpu_batch_bytes=64 << 20) as con:
        before = len(runtime._PATTERNS)
        res = con.sql(sql)
        assert sorted(res.fetchall()) == expected and expected
        assert len(runtime._PATTERNS) == before + 1 or before == runtime._PATTERN_ENTRIES  # (copied the new pattern)
        assert dict(res.stats or {}).get("gpu_leaked_bytes", 0) == 0
        assert con._get_engine().device.memory.used == 0
