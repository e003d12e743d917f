"""Compiled GPU pipelines that select rows for a sink taking them as they are (issue 10,
exec/compiled_rows.py): a sort, a top-N or a hash build fed by a kernel running the filters and
probes, then a gather of the columns the sink reads (for a top-N: its keys, ranked on the device,
then the other columns of the best rows only). Against DuckDB on the NULL-rich fact/dim tables
of conftest (NULLs in filters, keys and payloads, a left join's missing matches, strings gathered
from plain and dictionary pages) and on TPC-H q02 (its top-N after three probes), q12 and q14
(their filtered lineitem builds); each checks that the pipeline ran compiled and that no device
memory is left behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import TOTAL, mismatch  # noqa: E402
from diff_data import build_tpch, dataset  # noqa: E402
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402
from hetdb.exec import compiled_features  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

ROWS = "compaction and gather"
TOPK = "compaction and gather (a top-k on the device first)"  # exec/compiled_rows.sink_selected

# (query, ordered): ordered ones have a total ORDER BY (k is unique)
QUERIES = {
    "sort_filtered": ("SELECT k, a, c, b FROM fact WHERE a % 3 = 1 OR c > 500 ORDER BY c NULLS FIRST, k", True),
    "topn_filtered": ("SELECT k, b, d FROM fact WHERE d > 0 AND b IS NOT NULL ORDER BY d DESC, k LIMIT 7", True),
    "sort_after_probe": ("SELECT f.k, d.s, d.b FROM fact f JOIN dim d ON f.a = d.a WHERE f.c > 0 "
                         "ORDER BY f.k, d.s NULLS FIRST, d.b NULLS FIRST", True),
    "topn_after_left_probe": ("SELECT f.k, d.s FROM fact f LEFT JOIN (SELECT DISTINCT a, s FROM dim WHERE a < 30) d "
                              "ON f.a = d.a WHERE f.d < 10 ORDER BY d.s NULLS FIRST, f.k LIMIT 50", True),
    # a numeric first key with ties, then strings: only the rows not worse than the k-th by the first
    # key have their strings ranked (compiled_rows._leading_key_candidates); NULLs first and last
    "topn_number_then_string": ("SELECT k, a, b FROM fact WHERE c > 0 ORDER BY a DESC NULLS LAST, b NULLS FIRST, k "
                                "LIMIT 40", True),
    "topn_null_number_then_string": ("SELECT k, a, b FROM fact WHERE d < 20 ORDER BY a NULLS FIRST, b DESC, k "
                                     "LIMIT 30", True),
}


@pytest.mark.parametrize("options", [{}, {"batch_rows": 700}, {"gpu_memory_limit": "2MB", "batch_rows": 300}])
def test_row_sinks_compiled_match_duckdb(db, duck, options) -> None:
    compiled = 0
    with hetdb.connect(db.path, device="gpu", **options) as con:
        for name, (sql, ordered) in QUERIES.items():
            res = con.sql(sql)
            ref = duck.sql(sql).to_arrow_table()
            assert ref.num_rows > 0, name
            diff = mismatch(res.arrow(), ref, TOTAL if ordered else None)
            assert diff is None, (name, options, diff)
            assert res.stats["gpu_leaked_bytes"] == 0
            text = con.explain(sql, analyze=True)
            compiled += ROWS in text
            assert (TOPK in text) == (ROWS in text and name.startswith("topn")), (name, text)
    # (under the 2MB budget a build may spill, which the compiler refuses: the answers still match)
    assert compiled == len(QUERIES) or options.get("gpu_memory_limit"), compiled


def test_row_sinks_switch_off(db, duck, monkeypatch) -> None:
    monkeypatch.setattr(compiled_features, "disabled", {"row_sinks"})
    sql, _ = QUERIES["sort_filtered"]
    with hetdb.connect(db.path, device="gpu") as con:
        res = con.sql(sql)
        text = con.explain(sql, analyze=True)
    assert mismatch(res.arrow(), duck.sql(sql).to_arrow_table(), TOTAL) is None
    assert ROWS not in text and "HETDB_GPU_COMPILE_OFF=row_sinks" in text, text


@pytest.fixture(scope="module")
def tpch_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-rows-tpch"), "tpch-0.01", lambda p: build_tpch(p, 0.01, 4096))


@pytest.mark.parametrize("query", ["q02", "q12", "q14"])
def test_tpch_row_sink_pipelines_compile(tpch_db, query) -> None:
    sql = load_queries("tpch")[query]
    with hetdb.connect(tpch_db.path, device="gpu") as con:
        for _ in range(2):  # cold, then from the plan cache
            res = con.sql(sql)
            assert res.num_rows > 0
            assert mismatch(res.arrow(), tpch_db.reference(sql), TPCH_ORDERING[query],
                            TPCH_TOLERANCE.get(query, 1e-9)) is None
            assert res.stats["gpu_leaked_bytes"] == 0
        text = con.explain(sql, analyze=True)
    assert ROWS in text, text
    assert (TOPK in text) == (query == "q02"), text  # q02's top-N ranks its rows before the gather
    # hot: the compiled pipelines over lineitem / partsupp ran as one launch over every cached page
    assert "one launch over every cached page" in text, text


def test_kept_dictionary_lookups_follow_the_expression(db, duck) -> None:
    """Queries whose kernels differ only in a string predicate's literal (the same kernel text), run
    in turn and again on one connection: the dictionary lookups kept between queries
    (exec/lookup_tables.py) are per expression and dictionary, so every answer matches DuckDB, and
    their device bytes are the connection's, not a leak."""
    sqls = [f"SELECT k, b, c FROM fact WHERE b LIKE '{p}' ORDER BY k" for p in ("a%", "%e%", "b%", "%a%")]
    compared = 0
    with hetdb.connect(db.path, device="gpu") as con:
        for _ in range(2):
            for sql in sqls:
                res = con.sql(sql)
                ref = duck.sql(sql).to_arrow_table()
                assert ref.num_rows > 0, sql
                diff = mismatch(res.arrow(), ref, TOTAL)
                assert diff is None, (sql, diff)
                assert res.stats["gpu_leaked_bytes"] == 0, sql
                compared += 1
        assert ROWS in con.explain(sqls[0], analyze=True)
        assert len(con._get_engine().device.luts) >= len(sqls)
    assert compared == 2 * len(sqls)
