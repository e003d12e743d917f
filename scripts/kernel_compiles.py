"""How many compiled CPU loops (Numba functions) a workload compiles, and its wall time, from a cold
pipeline cache: the 13 SSB queries on DB, then CASES fuzz cases (seed SEED, default configuration).
The generated pipelines go to a fresh ``HETDB_KERNEL_CACHE`` (nothing of them cached on disk); the
static kernels of hetdb keep their usual warm cache.

Usage: python scripts/kernel_compiles.py SSB_DB [CASES] [SEED]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["HETDB_KERNEL_CACHE"] = tempfile.mkdtemp(prefix="hetdb-kernels-")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "differential"))

import hetdb  # noqa: E402
from hetdb.backend.cpu.codegen import pipeline_py  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402


def counts() -> tuple[int, int]:
    """(generated sources loaded, Numba specializations made of them) in this process."""
    fns = list(pipeline_py._CACHE.values())
    return len(fns), sum(len(fn.signatures) for fn in fns)


def main() -> None:
    db = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    con = hetdb.connect(db, device="cpu", threads=2)
    t0 = time.perf_counter()
    for q in load_queries("ssb"):
        con.sql(q.sql).arrow()
    t1 = time.perf_counter()
    src, comp = counts()
    print(f"ssb: 13 queries {t1 - t0:.1f} s, {src} loop sources, {comp} compilations", flush=True)
    con.close()

    from diff_data import load_duckdb
    from diff_fuzz import FuzzRunner
    from diff_fuzzdata import build_fuzz
    from diff_fuzzgen import sample_values

    with tempfile.TemporaryDirectory(prefix="hetdb-fuzz-") as tmp:
        path = os.path.join(tmp, "fuzz")
        build_fuzz(path)
        duck, _, _ = load_duckdb(path)
        fcon = hetdb.connect(path, device="cpu")
        runner = FuzzRunner("default", lambda sql: fcon.sql(sql).arrow(), duck, sample_values(duck))
        t2 = time.perf_counter()
        stats = runner.run(seed, cases, 0)
        t3 = time.perf_counter()
        src2, comp2 = counts()
        print(f"fuzz: {cases} cases (seed {seed}) {t3 - t2:.1f} s = {cases / (t3 - t2):.2f} cases/s, "
              f"{src2 - src} loop sources, {comp2 - comp} compilations; {len(stats.failures)} failures",
              flush=True)
        fcon.close()


if __name__ == "__main__":
    main()
