"""Cold GPU queries (the process's pinned host tier emptied, fresh connections: pages come from disk)
equal DuckDB on SSB's 13 queries, with their scans' reads started with the query (exec/early_scan.py
COLD_READ_AHEAD: every early scan taken over by its pipeline, none primed) and a column's adjacent
pages read as one span (io/spans.py), with default and with tiny deliveries (many groups, the read
ahead a few of them), and with the read-ahead off; no device memory and no host-tier pin is left
behind."""

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
    return dataset(tmp_path_factory.mktemp("gpu-cold-scan"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))


@pytest.mark.parametrize("read_ahead,batch_bytes", [(True, None), (True, 64 << 10), (False, None)],
                         ids=["read-ahead", "read-ahead-small-groups", "off"])
def test_cold_ssb_equals_duckdb(ssb_db, monkeypatch, read_ahead, batch_bytes):
    from hetdb.cache.host_cache import clear_shared_host_cache, existing_shared_host_cache
    from hetdb.exec import early_scan

    monkeypatch.setattr(early_scan, "COLD_READ_AHEAD", read_ahead)
    opts = {} if batch_bytes is None else {"gpu_batch_bytes": batch_bytes}
    failures, compared = [], 0
    for name, sql in load_queries("ssb").items():
        clear_shared_host_cache()
        with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:
            res = con.sql(sql)
            got = res.arrow()
            early = res.stats["early_scans"]
            if read_ahead:  # the fact scan and each dimension scan before it: all taken over, none primed
                assert early["started"] == early["taken"] >= 2 and early["primed_bytes"] == 0, (name, early)
            else:
                assert early["started"] == 0, (name, early)
            assert res.stats["gpu_leaked_bytes"] == 0, name
        diff = compare_tables(got, ssb_db.reference(sql), ordered=False, float_rel_tol=1e-9)
        if diff is not None:
            failures.append(f"{name}: {diff}")
        compared += 1
    assert not failures, "\n".join(failures)
    assert compared == 13
    tier = existing_shared_host_cache()
    assert tier is None or tier.pinned_bytes() == 0
