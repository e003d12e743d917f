"""The 13 SSB queries on hetdb vs DuckDB over the same SSB SF 0.1 data."""

from __future__ import annotations

import pytest
from diff_queries import SSB_ORDERING, load_queries
from diff_suite import run_suite

SSB_QUERIES = 13


def test_ssb_query_set_is_complete() -> None:
    queries = load_queries("ssb")
    assert len(queries) == SSB_QUERIES, sorted(queries)
    assert set(queries) == set(SSB_ORDERING), "every SSB query needs an ordering entry in diff_queries"


def test_ssb_queries_match_duckdb(ssb_full, device, hetdb_runner) -> None:
    queries = load_queries("ssb")
    run = hetdb_runner(ssb_full.path, device=device)
    report = run_suite(f"SSB SF0.1 {device}", ssb_full, queries, SSB_ORDERING, run)
    if report.failures:
        pytest.fail(report.summary("SSB"), pytrace=False)
    assert report.compared == SSB_QUERIES
    # SF 0.1 is large enough that every SSB query but the most selective ones returns rows
    assert report.nonempty >= SSB_QUERIES - 2, f"only {report.nonempty} non-empty answers"
