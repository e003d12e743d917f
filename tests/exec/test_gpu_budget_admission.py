"""Hot runs of a query whose fact scan does not fit in the device cache, under a small
gpu_memory_limit: the streaming scan keeps what it can in the cache (the headroom it leaves for its
deliveries is two of them, not depth + 1: with deliveries of a quarter of the budget that was the
whole budget, and every hot run copied every page again), so the later runs copy only the rest; the
answers equal DuckDB's on every run and no device memory is left behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_data import build_ssb, dataset  # noqa: E402
from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402
from hetdb.bench.compare import compare_tables  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

# SSB SF 0.01 at 4096 rows a page: q1.1's lineorder scan moves ~320 KB (15 row groups, pages kept as
# stored) and does not fit in the cache's share of this budget (280 KB); deliveries of at most a
# quarter of it. On the CuPy stand-in (scripts/host_only_gpu.py) the hot runs of q1.1 / q3.1 move
# 138 / 129 KB (the H100: 184 / 144 KB); with room kept for depth + 1 deliveries 309 / 299 KB (the
# cache kept ~6 KB).
LIMIT = 350_000


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-budget-admission"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))


@pytest.mark.parametrize("name", ["q1.1", "q3.1"])
def test_hot_runs_under_a_small_budget_copy_only_what_the_cache_cannot_keep(ssb_db, name):
    """The first run passes through (gpu_cache_admission='reuse'), the second streams into the
    cache by benefit, the third and fourth copy less than two thirds of what the first did (H100 at
    17:25: q1.1 320, 315, 184, 184 KB; q3.1 314, 160, 144, 144 KB)."""
    sql = load_queries("ssb")[name]
    want = ssb_db.reference(sql)
    runs = []
    with hetdb.connect(ssb_db.path, device="gpu", gpu_memory_limit=LIMIT) as con:
        for i in range(4):
            res = con.sql(sql)
            got = res.arrow()
            diff = compare_tables(got, want, ordered=False, float_rel_tol=1e-9)
            assert diff is None, (name, i, diff)
            runs.append(res.stats)
    moved = [int(s["bytes_host_to_device"]) for s in runs]
    print(name, "bytes moved per run", moved, "cached pages", [s["pages_cached"] for s in runs])
    assert moved[0] > 0
    assert runs[3]["pages_cached"] > 0 and 3 * moved[3] < 2 * moved[0], moved
    assert all(s["gpu_leaked_bytes"] == 0 for s in runs[2:])
