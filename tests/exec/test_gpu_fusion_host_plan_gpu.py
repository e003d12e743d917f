"""Fused plans on the GPU with their dimensions planned on the host (exec/fusion_host.py HOST_PLAN_ROWS)
and without (every dense table, compaction and probe form made on the device: HOST_PLAN_ROWS=0 and
gpu_host_small_builds off): a query of each SSB flight equal to DuckDB, fused, on fresh connections (warm: the
process's host tier, nothing on the GPU) and again on the same one (the kept fused state), nothing
left on the device."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from diff_data import build_ssb, dataset  # noqa: E402
from diff_queries import SSB_ORDERING, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

SF = 0.01
ROWS_PER_PAGE = 1 << 13
FUSED = "fused into one generated kernel"
# a query of each SSB flight (every one of them fuses in tests/exec/test_gpu_fusion.py): their
# dimensions' tables, compacted keys and forms as q2-q4 shape them at every scale (q1: a date filter)
QUERIES = ["q1.1", "q2.1", "q3.1", "q3.4", "q4.1", "q4.3"]


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-host-plan-ssb"), f"ssb-{SF}-{ROWS_PER_PAGE}",
                   lambda p: build_ssb(p, SF, ROWS_PER_PAGE))


@pytest.mark.parametrize("where", ["host", "device"])
def test_every_ssb_query_answers_with_dimensions_planned_on_the_host_or_the_device(ssb_db, where, monkeypatch):
    from hetdb.exec import fusion_host

    opts = {}
    if where == "device":
        monkeypatch.setattr(fusion_host, "HOST_PLAN_ROWS", 0)
        opts["gpu_host_small_builds"] = False
    compared = 0
    queries = load_queries("ssb")
    for name in QUERIES:
        sql = queries[name]
        for fresh in range(2):  # (the second: a fresh connection whose pages are in the host tier)
            with hetdb.connect(ssb_db.path, device="gpu", **opts) as con:
                text = con.explain(sql, analyze=True)
                line = next(ln for ln in text.splitlines() if "HashAggregate" in ln)
                assert FUSED in line, f"{name}:\n{text}"
                runs = [con.sql(sql)] + ([con.sql(sql)] if not fresh else [])  # (then the kept state)
                for res in runs:
                    diff = mismatch(res.arrow(), ssb_db.reference(sql), SSB_ORDERING[name])
                    assert diff is None, f"{name} ({where}): {diff}\n{text}"
                    assert res.stats["gpu_leaked_bytes"] == 0
        compared += 1
    assert compared == len(QUERIES)


def test_tables_read_by_rows_and_by_the_finish_leave_nothing_behind(ssb_db):
    """A host-planned table probed by rows (a summed build column) or looked up at the finish (a
    dependent group key): equal to DuckDB, fused, nothing leaked, twice on one connection."""
    queries = [
        "select c_nation, d_year, sum(lo_revenue + c_custkey) as r from lineorder, customer, date "
        "where lo_custkey = c_custkey and lo_orderdate = d_datekey and c_region = 'ASIA' group by c_nation, d_year",
        "select lo_orderdate, d_year, sum(lo_revenue) as r from lineorder, date, supplier "
        "where lo_orderdate = d_datekey and lo_suppkey = s_suppkey and s_region = 'ASIA' and d_year = 1993 "
        "group by lo_orderdate, d_year",
    ]
    for sql in queries:
        with hetdb.connect(ssb_db.path, device="gpu") as con:
            text = con.explain(sql, analyze=True)
            assert FUSED in next(ln for ln in text.splitlines() if "HashAggregate" in ln), text
            for _ in range(2):
                res = con.sql(sql)
                assert mismatch(res.arrow(), ssb_db.reference(sql), None) is None and res.arrow().num_rows > 0
                assert res.stats["gpu_leaked_bytes"] == 0, text
