"""exec/small_tail.py (a hot GPU replay's host-tail pipelines without the pipeline driver) on the CPU:
every pipeline reading an earlier pipeline's result runs through ``run_small`` where it takes it
(``_direct`` for a projection into a sort or the result's collection), and the answers are DuckDB's,
with the statistics of the operators it ran as the driver counts them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_data import build_ssb, dataset  # noqa: E402
from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.bench.compare import compare_tables  # noqa: E402
from hetdb.exec import engine as engine_mod  # noqa: E402
from hetdb.exec import small_tail  # noqa: E402
from hetdb.exec.operators.basic import ResultSource  # noqa: E402

EXTRA = {
    # string keys descending, a LIMIT (top-N sink: the driver's), NULLs from an outer join, an empty result,
    # DISTINCT, a UNION ALL (UnionSource: the driver's), an expression over the aggregation
    "desc_strings": "SELECT c_nation, c_city, count(*) AS n FROM customer GROUP BY c_nation, c_city "
                    "ORDER BY c_nation DESC, c_city",
    "topn": "SELECT p_brand1, sum(lo_revenue) AS r FROM lineorder, part WHERE lo_partkey = p_partkey "
            "GROUP BY p_brand1 ORDER BY r DESC, p_brand1 LIMIT 7",
    "nulls": "SELECT s_nation, max(c_city) AS m FROM supplier LEFT JOIN customer ON s_city = c_city AND c_custkey < 10 "
             "GROUP BY s_nation ORDER BY m NULLS FIRST, s_nation",
    "empty": "SELECT d_year, count(*) FROM date WHERE d_year > 3000 GROUP BY d_year ORDER BY d_year",
    "distinct": "SELECT DISTINCT c_region FROM customer ORDER BY c_region",
    "union": "SELECT c_region AS r FROM customer UNION ALL SELECT s_region FROM supplier ORDER BY r",
    "expr": "SELECT d_year, sum(lo_revenue) - sum(lo_supplycost) AS profit, avg(lo_quantity) AS q FROM lineorder, date "
            "WHERE lo_orderdate = d_datekey GROUP BY d_year ORDER BY profit DESC",
}
ORDERED = {"desc_strings", "topn", "nulls", "empty", "distinct", "expr"}


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("small-tail"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))


def test_result_pipelines_through_run_small_give_duckdbs_answers(ssb_db, monkeypatch):
    real = engine_mod.run_pipeline
    taken: dict[str, int] = {"run_small": 0, "direct": 0, "driver": 0}
    real_direct = small_tail._direct

    def direct(ctx, pipe, batches):
        done = real_direct(ctx, pipe, batches)
        taken["direct"] += done
        return done

    def run_pipeline(ctx, pipe, pool, threads):
        if type(pipe.source) is ResultSource and small_tail.run_small(ctx, pipe):
            taken["run_small"] += 1
            return
        taken["driver"] += 1
        real(ctx, pipe, pool, threads)

    monkeypatch.setattr(small_tail, "_direct", direct)
    monkeypatch.setattr(engine_mod, "run_pipeline", run_pipeline)
    queries = {**load_queries("ssb"), **EXTRA}
    compared = 0
    with hetdb.connect(ssb_db.path, device="cpu") as con:
        for name, sql in queries.items():
            res = con.sql(sql)
            got = res.arrow()
            want = ssb_db.reference(sql)
            diff = compare_tables(got, want, ordered=name in ORDERED or "order by" in sql.lower(),
                                  float_rel_tol=1e-9)
            assert diff is None, (name, diff)
            compared += 1
            # the result's collection counted its rows as the driver does
            ops = res.stats["operators"]
            assert res.stats["rows"] == got.num_rows
            assert any(s.rows_out == got.num_rows for s in ops.values()), name
    assert compared == len(queries)
    assert taken["run_small"] >= len(queries) and taken["direct"] >= len(queries), taken
