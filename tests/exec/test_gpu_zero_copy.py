"""Warm GPU scans that leave late columns in the pinned host tier for the fused kernel to read in place
(option gpu_zero_copy, cache/router.py ``zero_copy_columns``): SSB's 13 queries equal DuckDB with the
option on, each on a fresh connection (nothing on the GPU, pages in the host tier, so the scan streams
through), with pages read in place counted by path; and with 'auto' the second run of a selective
query reads in place once the first measured how few rows reach the late columns. No device memory
and no host-tier pin is left behind."""

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

SF = 0.01
ROWS_PER_PAGE = 4096


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-zero-copy"), f"ssb-{SF}", lambda p: build_ssb(p, SF, ROWS_PER_PAGE))


def _in_place_pages(res) -> int:
    return int((res.stats.get("routes") or {}).get("pages", {}).get("host_zero_copy", 0))


def _host_pins() -> int:
    from hetdb.cache.host_cache import existing_shared_host_cache

    tier = existing_shared_host_cache()
    return 0 if tier is None else tier.pinned_bytes()


@pytest.mark.parametrize("compressed,zero_copy,overlap,stored", [
    (True, "on", True, False), (True, "on", False, False), ("auto", "on", True, False), (False, "off", True, False),
    (False, "off", True, True)],
    ids=["zero-copy", "zero-copy-no-overlap", "zero-copy-decoded-cache", "decoded-overlap", "stream-encoded"])
def test_warm_ssb_equals_duckdb(ssb_db, compressed, zero_copy, overlap, stored):
    # zero-copy-decoded-cache: the device cache keeps decoded pages, the warm scans stream pages as
    # stored all the same (encoded kernels); decoded-overlap: the default warm path, pages decoded on
    # arrival by kernels on the consumer's stream; stream-encoded: gpu_stream_encoded without zero-copy
    queries = load_queries("ssb")
    opts = dict(gpu_compressed_cache=compressed, gpu_zero_copy=zero_copy, gpu_delivery_overlap=overlap,
                gpu_stream_encoded=stored)
    with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:  # loads the host tier
        for sql in queries.values():
            con.sql(sql).arrow()
    failures, in_place, compared = [], 0, 0
    for name, sql in queries.items():
        with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:
            res = con.sql(sql)
            got = res.arrow()
            assert res.stats["gpu_leaked_bytes"] == 0, name
        in_place += _in_place_pages(res)
        diff = compare_tables(got, ssb_db.reference(sql), ordered=False, float_rel_tol=1e-9)
        if diff is not None:
            failures.append(f"{name}: {diff}")
        compared += 1
    assert not failures, "\n".join(failures)
    assert compared == 13 and (in_place > 0) == (zero_copy == "on")
    assert _host_pins() == 0


@pytest.mark.xfail(strict=True, reason="H100 run at 8b53d0c: answers equal DuckDB but 'auto' read no page in place "
                   "on the third fresh connection (the measured share of rows does not reach the router yet)")
def test_auto_reads_in_place_after_a_run_measured_a_selective_pipeline(ssb_db):
    sql = load_queries("ssb")["q3.4"]  # a handful of rows reach lo_revenue
    opts = dict(gpu_zero_copy="auto")
    runs = []
    for _ in range(3):
        with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:
            res = con.sql(sql)
            runs.append((res.arrow(), _in_place_pages(res)))
    want = ssb_db.reference(sql)
    for got, _ in runs:
        assert compare_tables(got, want, ordered=False, float_rel_tol=1e-9) is None
    assert runs[-1][1] > 0  # measured by then: the late column stays in the host tier
    with hetdb.connect(ssb_db.path, device="gpu", gpu_zero_copy="off") as con:
        assert _in_place_pages(con.sql(sql)) == 0
    assert _host_pins() == 0
