"""SSB and TPC-H on the GPU with ``gpu_compressed_cache=True`` against DuckDB: every query runs twice on
one connection, so the second run reads pages the device cache keeps compressed (the fused kernels
over a page table, the compiled pipelines per page); the cache must then hold encoded pages and no
more device bytes than their stored size."""

from __future__ import annotations

import pytest
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no GPU visible to CuPy")]


def _cache(runner):
    return runner._con._get_engine().device.cache


def _encoded_entries(cache) -> list:
    entries = [cache.peek_many([k])[0] for k in cache.keys()]
    return [e for e in entries if getattr(e, "device_page", None) is not None]


@pytest.mark.parametrize("suite", ["ssb", "tpch"])
def test_suites_with_compressed_device_cache(suite, ssb_full, tpch_full, hetdb_runner) -> None:
    data = ssb_full if suite == "ssb" else tpch_full
    ordering, tolerance = (SSB_ORDERING, None) if suite == "ssb" else (TPCH_ORDERING, TPCH_TOLERANCE)
    queries = load_queries(suite)
    run = hetdb_runner(data.path, device="gpu", gpu_compressed_cache=True)
    truth: dict = {}
    cold = run_suite(f"{suite} SF0.1 gpu compressed cache (cold)", data, queries, ordering, run, tolerance, truth)
    hot = run_suite(f"{suite} SF0.1 gpu compressed cache (hot)", data, queries, ordering, run, tolerance, truth)
    failures = cold.failures + hot.failures
    if failures:
        pytest.fail(f"{len(failures)} mismatches\n\n" + "\n\n".join(failures), pytrace=False)
    assert cold.compared == hot.compared == len(queries) > 0
    plans = [run._con.explain(sql, analyze=True) for sql in queries.values()]
    assert any("decoded in the kernel" in p or "read compressed pages in place" in p for p in plans)
    encoded = _encoded_entries(_cache(run))
    assert encoded, "no page stayed compressed in the device cache"
    for e in encoded:  # the cache holds the stored bytes (plus unpacked validity), not decoded values
        assert e.device_nbytes <= e.device_page.nbytes + e.device_page.n


def test_compressed_cache_holds_fewer_device_bytes(ssb_full, hetdb_runner) -> None:
    sql = load_queries("ssb")["q1.1"]
    used = {}
    for on in (False, True):
        run = hetdb_runner(ssb_full.path, device="gpu", gpu_compressed_cache=on)
        first = run(sql)
        assert run(sql).equals(first) and first.num_rows > 0
        used[on] = _cache(run).used_bytes
        run.close()
    assert 0 < used[True] < used[False], used
