"""Run in a fresh interpreter by test_coprocess_host_run.py: SSB q1.1 on a ``device="gpu"`` connection
with gpu_coprocess "auto" and the split forced (coprocess_plan.FORCED_SPLIT), on the host stand-in for
CuPy (``scripts/host_only_gpu.py``: its kernels do nothing, so the GPU's share adds nothing to the
answer; the CPU workers' share is real). A warm run's early fact scan is the shared scan's GPU side,
the back is reserved for the CPU workers, and the GPU takes what they leave once its share is copied
(``PageStreamer.wait_for_copies`` stands for the link's time here: it sleeps, without the interpreter
lock, as a stream synchronization does). Prints one JSON line per timed run.

    python tests/exec/coprocess_host.py DB MODE   (MODE: split | rest | primed | queued | python, each
    with -narrow: narrow copies of the integer pages, compiled_cpu_narrow.py)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from host_only_gpu import _no_compile, install  # noqa: E402

install()
_no_compile()

import hetdb  # noqa: E402
from hetdb.backend.gpu.stream import PageStreamer  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402
from hetdb.cache.coscan import SharedScan  # noqa: E402
from hetdb.exec import coprocess_plan  # noqa: E402

db, mode = sys.argv[1], sys.argv[2]
PageStreamer.wait_for_copies = lambda self: time.sleep(0.25)  # (the link; long enough under load)
if mode == "rest":  # no worker claims a reserved row group: the GPU takes them all at its end
    SharedScan._fits_reserved = lambda self, per: False
if mode.endswith("-narrow"):  # the loop reads narrow copies of the integer pages (a small table's too)
    from hetdb.backend.cpu import tuning

    tuning.override(narrow_scan_rows=1).__enter__()
    mode = mode.removesuffix("-narrow")
if mode == "python":  # the workers' share one Python call per row group (coprocess_batch.BATCH off)
    from hetdb.exec import coprocess_batch

    coprocess_batch.BATCH = False
if mode in ("primed", "queued"):  # when the workers start (else with the fact pipeline)
    coprocess_plan.WORKERS_AFTER = mode
coprocess_plan.FORCED_SPLIT = (2, 3)
sql = load_queries("ssb", ["q1.1"])[0].sql
for i in range(4):
    with hetdb.connect(db, device="gpu", gpu_coprocess="auto", threads=3) as con:
        res = con.sql(sql)
        rows = res.fetchall()
        st = dict(res.stats or {})
    if i == 0:  # (loads the host tier; the CPU side is set up after it, on a thread of its own)
        assert coprocess_plan.wait_prepared(60)
        continue
    if i == 1:  # (the workers' first share compiles their page decoders where Numba's cache is cold:
        continue  # longer than the stand-in link's wait, so the GPU would take the reserved back)
    co = [c for c in st.get("coprocess") or [] if c["reserved"]]
    print(json.dumps({"rows": [list(r) for r in rows], "early": st.get("early_scans"),
                      "co": [{k: c[k] for k in ("reserved", "cpu_row_groups", "gpu_row_groups", "workers")}
                             for c in co],
                      "compiled": [c.get("compiled_share") for c in co]}), flush=True)
