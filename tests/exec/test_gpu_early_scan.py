"""Warm GPU queries whose fact scan starts before the dimension pipelines (exec/early_scan.py,
option gpu_early_scan): SSB's 13 queries equal DuckDB on fresh connections (pages in the pinned host
tier, none on the GPU), each with its fact scan started early and taken over by its pipeline, with
every delivery primed or only the first (a tiny share of the budget, small deliveries); no device
memory and no host-tier pin is left behind, and a second run on the same connection (the scan now
fills the device cache) starts nothing early."""

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


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-early-scan"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))


def _host_pins() -> int:
    from hetdb.cache.host_cache import existing_shared_host_cache

    tier = existing_shared_host_cache()
    return 0 if tier is None else tier.pinned_bytes()


@pytest.mark.parametrize("share,batch_bytes", [(None, None), (1e-9, 64 << 10)], ids=["all-primed", "first-only"])
def test_warm_ssb_with_early_fact_scans_equals_duckdb(ssb_db, monkeypatch, share, batch_bytes):
    from hetdb.exec import early_scan

    if share is not None:
        monkeypatch.setattr(early_scan, "EARLY_BUDGET_SHARE", share)
    opts = {} if batch_bytes is None else {"gpu_batch_bytes": batch_bytes}
    queries = load_queries("ssb")
    with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:  # loads the host tier
        for sql in queries.values():
            con.sql(sql).arrow()
    failures, compared = [], 0
    for name, sql in queries.items():
        with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:
            res = con.sql(sql)
            got = res.arrow()
            early = res.stats["early_scans"]
            # the fact scan and, before it, each dimension scan (gpu_early_dims): all taken over
            assert early["started"] == early["taken"] >= 2 and early["primed_bytes"] > 0, (name, early)
            assert res.stats["gpu_leaked_bytes"] == 0, name
            again = con.sql(sql)
            assert again.stats["early_scans"]["started"] == 0, name
            diff = compare_tables(again.arrow(), ssb_db.reference(sql), ordered=False, float_rel_tol=1e-9)
            if diff is not None:
                failures.append(f"{name} (second run): {diff}")
        diff = compare_tables(got, ssb_db.reference(sql), ordered=False, float_rel_tol=1e-9)
        if diff is not None:
            failures.append(f"{name}: {diff}")
        compared += 1
    assert not failures, "\n".join(failures)
    assert compared == 13
    assert _host_pins() == 0


def test_early_scan_off_starts_nothing_and_answers_alike(ssb_db):
    queries = load_queries("ssb")
    sql = queries["q3.4"]
    with hetdb.connect(ssb_db.path, device="gpu") as con:
        con.sql(sql).arrow()
    with hetdb.connect(ssb_db.path, device="gpu", gpu_early_scan=False) as con:
        res = con.sql(sql)
        got = res.arrow()
    assert res.stats["early_scans"]["started"] == 0
    assert compare_tables(got, ssb_db.reference(sql), ordered=False, float_rel_tol=1e-9) is None
    with hetdb.connect(ssb_db.path, device="gpu", gpu_early_dims=False) as con:
        res = con.sql(sql)  # the fact scan only
        got = res.arrow()
    assert res.stats["early_scans"] == {"started": 1, "taken": 1, "primed_bytes": res.stats["early_scans"]["primed_bytes"]}
    assert compare_tables(got, ssb_db.reference(sql), ordered=False, float_rel_tol=1e-9) is None
