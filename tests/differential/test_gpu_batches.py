"""The SSB + TPC-H differential with GPU scans delivering batches of row groups (option
``gpu_batch_bytes``, backend/gpu/stream_batch.py) against DuckDB: per row group (0), small batches
(several per table) and the default, unlimited and under a budget small enough to evict pages in the
middle of a query; no device memory, pin or reservation may be left behind. Marked gpu."""

from __future__ import annotations

import pytest
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.backend.gpu import gpu_available

TINY_GPU = "24MB"


class _Runner:
    def __init__(self, con) -> None:
        self.con = con

    def __call__(self, sql: str):
        res = self.con.sql(sql)
        assert dict(res.stats or {}).get("gpu_leaked_bytes", 0) == 0, sql[:80]
        return res.arrow()


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no GPU visible to CuPy")
@pytest.mark.parametrize("limit", [None, TINY_GPU], ids=["unlimited", f"gpu_memory_limit={TINY_GPU}"])
@pytest.mark.parametrize("batch", [0, 256 << 10, 64 << 20], ids=["per-row-group", "256KB", "64MB"])
def test_gpu_batches_match_duckdb(batch, limit, ssb_small, tpch_small, expected_answers) -> None:
    options = {"gpu_batch_bytes": batch}
    if limit is not None:
        options["gpu_memory_limit"] = limit
    _match_duckdb(options, ssb_small, tpch_small, expected_answers)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no GPU visible to CuPy")
@pytest.mark.parametrize("batch", [256 << 10, 64 << 20], ids=["256KB", "64MB"])
@pytest.mark.parametrize("suite", ["ssb", "tpch"])
def test_gpu_compressed_batches_match_duckdb(suite, batch, ssb_small, tpch_small, expected_answers) -> None:
    """Batched deliveries with pages kept compressed (``gpu_compressed_cache``): one Batch per row
    group out of one buffer, encoded sections as stored, the fused kernel over several of them in one
    launch; fewer deliveries than row groups."""
    import hetdb

    options = {"gpu_batch_bytes": batch, "gpu_compressed_cache": True, "gpu_memory_limit": TINY_GPU}
    _match_duckdb(options, ssb_small, tpch_small, expected_answers, suites=(suite,))
    if suite != "ssb":
        return
    # route 'copy': the pages are streamed (after the suites they sit in the host tier, and a warm scan
    # that fits would copy them into the device cache in one go and launch once: no deliveries)
    with hetdb.connect(ssb_small.path, device="gpu", route="copy", **options) as con:
        res = con.sql(load_queries("ssb")["q1.1"])
        assert res.arrow().num_rows == 1
        routes = res.stats["routes"]
        pages = sum(routes["pages"].values())
        assert 0 < routes["deliveries"] < pages, routes


def _match_duckdb(options: dict, ssb_small, tpch_small, expected_answers, suites=("ssb", "tpch")) -> None:
    import hetdb
    from hetdb.cache.host_cache import existing_shared_host_cache

    for ds, name, ordering, tolerance, size in (
            (ssb_small, "ssb", SSB_ORDERING, None, 13), (tpch_small, "tpch", TPCH_ORDERING, TPCH_TOLERANCE, 22)):
        if name not in suites:
            continue
        with hetdb.connect(ds.path, device="gpu", **options) as con:
            args = (f"{name} [{options}]", ds, load_queries(name), ordering, _Runner(con))
            suite = run_suite(*args, tolerance, expected=expected_answers.setdefault(name, {}))
            assert not suite.failures, "\n\n".join(suite.failures)
            assert suite.compared == size
            engine = con._get_engine()
            assert engine.device.memory.used == 0
            assert engine.device.cache.pinned_bytes() == 0
        tier = existing_shared_host_cache()
        assert tier is None or tier.pinned_bytes() == 0
