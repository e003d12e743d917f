"""Distributed queries with CPU workers on a local Ray cluster: identical answers to one worker and
to DuckDB, and the lowering's exchanges."""

from __future__ import annotations

import pytest
from diff_check import run_differential
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries

import hetdb

pytestmark = pytest.mark.usefixtures("ray_cluster")

TPCH_QUERIES = 22


def _suite(data, queries, orderings, con, tolerances=None) -> int:
    compared = 0
    failures = []
    for name, sql in queries.items():
        outcome = run_differential(f"dist {name}", sql, lambda q: con.sql(q).arrow(), data.reference(sql),
                                   orderings[name], (tolerances or {}).get(name, 1e-9))
        compared += outcome.compared
        if outcome.failure:
            failures.append(outcome.failure)
    assert not failures, "\n".join(map(str, failures))
    return compared


@pytest.mark.parametrize("workers", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_ssb_matches_duckdb_and_one_worker(ssb_dist, workers) -> None:
    queries = load_queries("ssb")
    assert len(queries) == 13
    with hetdb.connect(ssb_dist.path, device="cpu", workers=workers) as con:
        assert _suite(ssb_dist, queries, SSB_ORDERING, con) == 13
        one = hetdb.connect(ssb_dist.path, device="cpu")
        for sql in list(queries.values())[:4]:
            assert con.sql(sql).arrow().equals(one.sql(sql).arrow())


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 3])
def test_tpch_matches_duckdb(tpch_dist, workers) -> None:
    queries = load_queries("tpch")
    assert len(queries) == TPCH_QUERIES
    with hetdb.connect(tpch_dist.path, device="cpu", workers=workers) as con:
        assert _suite(tpch_dist, queries, TPCH_ORDERING, con, TPCH_TOLERANCE) == TPCH_QUERIES
        # every query is lowered (none falls back to one worker)
        assert not [q for q in queries.values() if con.sql(q).stats["dist_fallback"]]
