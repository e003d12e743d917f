"""The small-budget hot-run admission test (tests/exec/test_gpu_budget_admission.py) as a probe: bytes moved
and pages cached per hot run of q1.1 / q3.1 under 350 KB, with module switches @module.ATTR=value."""
import importlib, sys
from pathlib import Path
sys.path.insert(0, "tests/differential")
import hetdb
from diff_data import build_ssb, dataset
from diff_queries import load_queries
ds = dataset(Path("/tmp/budprobe"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))
for a in sys.argv[1:]:
    mod, _, rest = a[1:].rpartition(".")
    attr, _, val = rest.partition("=")
    setattr(importlib.import_module(mod), attr, eval(val))
for name in ("q1.1", "q3.1"):
    sql = load_queries("ssb")[name]
    with hetdb.connect(ds.path, device="gpu", gpu_memory_limit=350_000) as con:
        moved = []
        for i in range(4):
            r = con.sql(sql); r.arrow(); moved.append((int(r.stats["bytes_host_to_device"]), r.stats["pages_cached"]))
    print(" ".join(sys.argv[1:]) or "defaults", name, moved, flush=True)
