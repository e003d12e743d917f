"""HUGEINT / DECIMAL(19..38) arithmetic and ``%`` in generated GPU kernels (issue 10), against DuckDB:
on the NULL-rich fact table of conftest and on TPC-H q09 (its DECIMAL(19,4) difference of products)
and q20 (its DECIMAL(38,3) comparison), whose pipelines used to run operator at a time. A wide value
that needs more than 64 bits must still give DuckDB's answer (the query reruns on the CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from diff_data import build_tpch, dataset  # noqa: E402
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

IN_KERNEL = ("compiled into one generated kernel", "fused into one generated kernel")
REFUSED = ("HUGEINT / DECIMAL(>18)", "% is fused only", "% of type")

QUERIES = {
    "mod_group_key": "SELECT a % 7 AS m, count(*), sum(k % 5), sum(c % 3), min(d % 2.5) FROM fact GROUP BY 1",
    "mod_filter": "SELECT b, count(*) FROM fact WHERE k % 10 = 3 OR a % -1 = 0 AND d % 4 > 1 GROUP BY b",
    "mod_decimal_divisor": "SELECT a, sum(c % 0.75) FROM fact GROUP BY a",
    # % by a column: never zero, or zero only on rows a CASE branch leaves out (a has zeros)
    "mod_by_column": "SELECT a, sum(k % (a + 1)), min(-k % (a - 41)), count(*) FROM fact WHERE a >= 0 GROUP BY a",
    "mod_column_in_case": "SELECT b, sum(CASE WHEN a <> 0 THEN k % a ELSE -1 END), "
                          "max(CASE WHEN a = 0 THEN 0 ELSE d % a END) FROM fact GROUP BY b",
    "wide_product_difference": "SELECT b, sum(CAST(c AS DECIMAL(38,2)) * k - CAST(c AS DECIMAL(20,2))) "
                               "FROM fact GROUP BY b",
    "wide_compare": "SELECT a, count(*) FROM fact WHERE CAST(c AS DECIMAL(38,3)) > CAST(a AS DECIMAL(20,1)) * 10 "
                    "GROUP BY a",
    "wide_case": "SELECT b, max(CASE WHEN a > 20 THEN CAST(k AS DECIMAL(30,0)) + 5 ELSE CAST(c AS DECIMAL(30,2)) END) "
                 "FROM fact GROUP BY b",
}


@pytest.mark.parametrize("options", [{}, {"batch_rows": 700}])
def test_wide_and_mod_in_kernels_match_duckdb(db, duck, options) -> None:
    compared = 0
    with hetdb.connect(db.path, device="gpu", **options) as con:
        for name, sql in QUERIES.items():
            res = con.sql(sql)
            ref = duck.sql(sql).to_arrow_table()
            assert ref.num_rows > 0, name
            assert mismatch(res.arrow(), ref, None, 1e-9) is None, (name, mismatch(res.arrow(), ref, None, 1e-9))
            assert res.stats["gpu_leaked_bytes"] == 0
            assert not res.stats["cpu_fallbacks"], (name, res.stats["cpu_fallbacks"])
            text = con.explain(sql, analyze=True)
            assert any(k in text for k in IN_KERNEL), (name, text)
            assert not any(r in text for r in REFUSED), (name, text)
            compared += 1
    assert compared == len(QUERIES)


def test_a_zero_column_divisor_raises_duckdbs_error(db, duck) -> None:
    sql = "SELECT b, sum(k % a) FROM fact GROUP BY b"  # (a is 0 on some rows)
    with pytest.raises(Exception, match="Division by zero"):
        duck.sql(sql).fetchall()
    with hetdb.connect(db.path, device="gpu") as con:
        with pytest.raises(hetdb.HetdbError, match="Division by zero"):
            con.sql(sql)
        assert con._get_engine().last_gpu_leak == 0
        text = con.explain("SELECT b, sum(k % (a + 100)) FROM fact GROUP BY b", analyze=True)
    assert any(k in text for k in IN_KERNEL) and not any(r in text for r in REFUSED), text


def test_a_wide_value_past_64_bits_reruns_on_the_cpu(db, duck) -> None:
    # c * 10^17 needs about 80 bits: the kernel records a wide overflow and the query runs on the CPU
    sql = "SELECT b, sum(CAST(c AS DECIMAL(38,2)) * 100000000000000000) FROM fact GROUP BY b"
    with hetdb.connect(db.path, device="gpu") as con:
        res = con.sql(sql)
        assert any("64 bits" in w for w in res.stats["cpu_fallbacks"]), res.stats["cpu_fallbacks"]
        assert con._get_engine().last_gpu_leak == 0
    ref = duck.sql(sql).to_arrow_table()
    assert ref.num_rows > 0
    assert mismatch(res.arrow(), ref, None, 1e-9) is None


@pytest.fixture(scope="module")
def tpch_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-wide-tpch"), "tpch-0.01", lambda p: build_tpch(p, 0.01, 4096))


@pytest.mark.parametrize("query", ["q09", "q20"])
def test_tpch_wide_decimal_pipelines_compile(tpch_db, query) -> None:
    sql = load_queries("tpch")[query]
    with hetdb.connect(tpch_db.path, device="gpu") as con:
        for _ in range(2):  # cold, then from the plan cache (dense tables reused)
            res = con.sql(sql)
            assert res.num_rows > 0
            assert mismatch(res.arrow(), tpch_db.reference(sql), TPCH_ORDERING[query],
                            TPCH_TOLERANCE.get(query, 1e-9)) is None
            assert res.stats["gpu_leaked_bytes"] == 0 and not res.stats["cpu_fallbacks"]
        text = con.explain(sql, analyze=True)
    assert "HUGEINT / DECIMAL(>18)" not in text, text
    if query == "q09":  # the aggregation over the DECIMAL(19,4) amounts, hot: one launch over the pages
        assert "hash probes and hash aggregation; one launch over every cached page" in text, text
