"""A subplan bound twice (a CTE referenced twice) runs once: the second pipeline takes the first
one's result with its columns renamed (exec/shared_results.py); pipelines that differ in anything
(a literal, a filter, an aggregate) each run. Join builds too, link by link along a chain of them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402

SHARED = "the same subplan), not computed again"

QUERIES = {
    # q15's shape: the CTE's groups joined with their own maximum
    "cte_twice": ("WITH r AS (SELECT a, sum(c) AS s FROM fact WHERE k > 100 GROUP BY a) "
                  "SELECT r.a, r.s FROM r WHERE r.s = (SELECT max(s) FROM r)", 1),
    "cte_self_join": ("WITH r AS (SELECT a, count(*) AS n, min(d) AS m FROM fact GROUP BY a) "
                      "SELECT x.a, x.n, x.m, y.n, y.m FROM r x JOIN r y ON x.a = y.a + 1", 1),
    # a build bound twice (TPC-H q11's nation and supplier builds): its hash table is shared
    "build_twice": ("SELECT f.a, sum(f.c) AS s FROM fact f JOIN dim d ON f.a = d.a WHERE d.b = 'fig' GROUP BY f.a "
                    "HAVING sum(f.c) > (SELECT sum(g.c) * 0.05 FROM fact g JOIN dim e ON g.a = e.a WHERE e.b = 'fig')",
                    1),
    # a chain of builds bound twice: the second link probes the shared first one, so it is shared too
    "build_chain_twice": ("WITH x AS (SELECT f.k, f.c FROM fact f JOIN dim d ON f.a = d.a WHERE d.b = 'fig') "
                          "SELECT count(*), sum(g.d) FROM fact g JOIN x ON g.k = x.k "
                          "WHERE g.c > (SELECT avg(h.c) FROM fact h JOIN x ON h.k = x.k)", 2),
    "build_other_filter": ("SELECT f.a, sum(f.c) AS s FROM fact f JOIN dim d ON f.a = d.a WHERE d.b = 'fig' "
                           "GROUP BY f.a HAVING sum(f.c) > (SELECT sum(g.c) * 0.05 FROM fact g JOIN dim e "
                           "ON g.a = e.a WHERE e.b = 'kiwi')", 0),
    # the same shape with another constant, filter or aggregate: nothing shared
    "other_literal": ("SELECT x.a, x.s, y.s FROM (SELECT a, sum(c) AS s FROM fact WHERE k > 100 GROUP BY a) x "
                      "JOIN (SELECT a, sum(c) AS s FROM fact WHERE k > 101 GROUP BY a) y ON x.a = y.a", 0),
    "other_aggregate": ("SELECT x.a, x.s, y.s FROM (SELECT a, sum(c) AS s FROM fact GROUP BY a) x "
                        "JOIN (SELECT a, max(c) AS s FROM fact GROUP BY a) y ON x.a = y.a", 0),
}


# the subplans shared on the GPU where it shares fewer than the CPU
GPU_SHARED = {"build_chain_twice": 1}


def test_a_subplan_bound_twice_runs_once(db, duck) -> None:
    compared = 0
    with hetdb.connect(db.path, device="cpu") as con:
        for name, (sql, shared) in QUERIES.items():
            got = con.sql(sql).arrow()
            assert got.num_rows > 0, name
            assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, name
            text = con.explain(sql, analyze=True)
            assert text.count(SHARED) == shared, f"{name}\n{text}"
            compared += 1
    assert compared == len(QUERIES)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
@pytest.mark.parametrize("options", [{}, {"gpu_memory_limit": "2MB"}])
def test_a_subplan_bound_twice_runs_once_on_the_gpu(db, duck, options) -> None:
    """The same on the GPU, where the first pipeline may run fused or compiled; the reused one counts as
    not run in the query's GPU pipeline modes."""
    compared = 0
    with hetdb.connect(db.path, device="gpu", **options) as con:
        for name, (sql, shared) in QUERIES.items():
            # (on the GPU the chain's second link takes nothing from its first copy: that one is a fact-side
            # build deferred into its consumer's kernel, which leaves an empty stand-in: exec/pipeline.placeholders)
            shared = GPU_SHARED.get(name, shared)
            for _ in range(2):  # cold, then hot (fused / compiled over cached pages)
                res = con.sql(sql)
                assert res.num_rows > 0, name
                assert mismatch(res.arrow(), duck.sql(sql).to_arrow_table(), ()) is None, name
                assert res.stats["gpu_leaked_bytes"] == 0, name
                assert res.stats["gpu_pipelines"]["not_run"] >= shared or options, (name, res.stats["gpu_pipelines"])
            text = con.explain(sql, analyze=True)
            # (under the 2MB budget a build that spilled is not shared: its copy runs)
            assert text.count(SHARED) == shared or (options and text.count(SHARED) <= shared), f"{name}\n{text}"
            compared += 1
    assert compared == len(QUERIES)


def test_a_pipeline_alone_of_its_kind_is_not_signed(db, duck, monkeypatch) -> None:
    """A pipeline's signature text (~1 ms) is made only when a second pipeline of its kind (table
    scanned, operator types) comes in the query: a query without two is answered without one, and
    the first of a pair is signed when the second comes, so it is still shared."""
    from hetdb.exec import shared_results

    made: list[int] = []
    real = shared_results._base
    monkeypatch.setattr(shared_results, "_base", lambda pipe: made.append(pipe.pid) or real(pipe))
    shared_results._bases.clear()
    alone = "SELECT f.a, sum(f.c) AS s FROM fact f JOIN dim d ON f.a = d.a WHERE d.b = 'fig' GROUP BY f.a"
    with hetdb.connect(db.path, device="cpu") as con:
        got = con.sql(alone).arrow()
        assert got.num_rows > 0 and mismatch(got, duck.sql(alone).to_arrow_table(), ()) is None
        assert made == []
        sql, shared = QUERIES["build_twice"]
        assert con.explain(sql, analyze=True).count(SHARED) == shared == 1
        assert len(made) >= 2
