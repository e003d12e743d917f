"""The 22 TPC-H queries on hetdb vs DuckDB over the same TPC-H SF 0.1 data (tpchgen-cli)."""

from __future__ import annotations

import pytest
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

TPCH_QUERIES = 22


def test_tpch_query_set_is_complete() -> None:
    queries = load_queries("tpch")
    assert len(queries) == TPCH_QUERIES, sorted(queries)
    assert set(queries) == set(TPCH_ORDERING), "every TPC-H query needs an ordering entry in diff_queries"


def test_tpch_queries_match_duckdb(tpch_full, device, hetdb_runner) -> None:
    queries = load_queries("tpch")
    run = hetdb_runner(tpch_full.path, device=device)
    report = run_suite(f"TPC-H SF0.1 {device}", tpch_full, queries, TPCH_ORDERING, run, TPCH_TOLERANCE)
    if report.failures:
        pytest.fail(report.summary("TPC-H"), pytrace=False)
    assert report.compared == TPCH_QUERIES
    assert report.nonempty >= TPCH_QUERIES - 1, f"only {report.nonempty} non-empty answers"
