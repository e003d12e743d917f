"""Run in a fresh interpreter by test_like_pattern_leak_host_run.py: on a ``device="gpu"`` connection
with ``scripts/host_only_gpu.py`` standing in for CuPy (device arrays are NumPy arrays; its memory
pool's bytes in use are the bytes of those alive), TPC-H q13's orders aggregation behind NOT LIKE on
a plain-string column (like_orders.py), the process's first use of its pattern: the compiled kernel's LIKE pattern is
copied to the device once and kept for later launches (backend/gpu/codegen/runtime.literal_values),
which the engine's after-query leak check must count as kept, not as left behind. Prints one JSON
line: the leaked bytes the query reported, the patterns and their bytes kept. (One run: the stand-in's
arrays have no pool block, so pages a later run finds in the device page cache would count as left.)

    python tests/exec/like_pattern_leak_host.py DB
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from host_only_gpu import _no_compile, install  # noqa: E402

install()
_no_compile()

from like_orders import SQL  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu.codegen import runtime  # noqa: E402

with hetdb.connect(sys.argv[1], device="gpu", gpu_coprocess="off", gpu_batch_bytes=64 << 20) as con:
    kept = len(runtime._PATTERNS)
    res = con.sql(SQL)
    res.fetchall()
    st = dict(res.stats or {})
    print(json.dumps({"leaked": st.get("gpu_leaked_bytes"), "patterns_before": kept,
                      "patterns_after": len(runtime._PATTERNS), "pattern_bytes": runtime.kept_pattern_bytes(),
                      "modes": st.get("gpu_pipelines")}), flush=True)
