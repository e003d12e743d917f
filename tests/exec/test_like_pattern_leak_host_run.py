"""The engine's after-query leak check counts the LIKE patterns the GPU keeps for compiled kernels'
launches (backend/gpu/codegen/runtime.literal_values, process-wide) as kept: the query that first
uses a pattern leaves nothing behind. Before, TPC-H q13 with co-processing forced on (the first q13
of test_gpu_coprocess.py's process) reported 512 bytes leaked: its 18-byte '%special%requests%' in a
pool block. Run on the host (``like_pattern_leak_host.py`` in a fresh interpreter, CuPy stood in by
``scripts/host_only_gpu.py``); on the GPU: test_gpu_coprocess.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


def _orders(path: str) -> None:
    """5000 orders over 5 pages, o_comment of distinct strings (plain pages, as TPC-H's)."""
    from hetdb import types as T
    from hetdb.storage import ColumnSpec, Database

    rng = np.random.default_rng(7)
    words = ["special", "requests", "quickly", "final", "deposits", "pending", "ironic", "carefully"]
    n = 5000
    table = pa.table({
        "o_orderkey": pa.array(np.arange(n, dtype=np.int64)),
        "o_custkey": pa.array(rng.integers(1, 300, n).astype(np.int64)),
        "o_comment": pa.array([" ".join(words[j] for j in rng.integers(0, len(words), 5)) + f" {i}"
                               for i in range(n)], pa.string()),
    })
    schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=False) for f in table.schema]
    with Database.open(path, create=True).create_table("orders", schema, rows_per_page=1000) as writer:
        writer.append_arrow(table)


def test_the_first_use_of_a_like_pattern_leaves_no_device_memory(tmp_path) -> None:
    path = str(tmp_path / "db")
    _orders(path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    got = subprocess.run([sys.executable, str(HERE / "like_pattern_leak_host.py"), path],
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    out = [json.loads(line) for line in got.stdout.splitlines() if line.startswith("{")]
    assert len(out) == 1, got.stdout[-2000:]
    r = out[0]
    # the query copied the pattern to the "device" and keeps it: counted as kept, not leaked
    assert r["patterns_before"] == 0 and r["patterns_after"] == 1, r
    assert r["pattern_bytes"] >= len("%special%requests%"), r
    assert r["leaked"] == 0, r
