"""The window benchmark suite (``hetdb bench window``: ranks, running sums, lag/lead, moving averages,
ntile over TPC-H orders and lineitem) on hetdb vs DuckDB over the same TPC-H SF 0.1 data, on each
device. Every query groups by its ORDER BY keys, so each answer's order is total."""

from __future__ import annotations

import numpy as np
import pytest
from diff_check import TOTAL
from diff_queries import AGGREGATE_TOL, load_queries
from diff_suite import run_suite

from hetdb.exec.operators import window
from hetdb.exec.window_array import ArrayKernels

WINDOW_QUERIES = 7


def test_window_suite_matches_duckdb(tpch_full, device, hetdb_runner) -> None:
    queries = load_queries("window")
    assert len(queries) == WINDOW_QUERIES, sorted(queries)
    run = hetdb_runner(tpch_full.path, device=device)
    report = run_suite(f"window suite SF0.1 {device}", tpch_full, queries, dict.fromkeys(queries, TOTAL), run,
                       dict.fromkeys(queries, AGGREGATE_TOL))
    if report.failures:
        pytest.fail(report.summary("window suite"), pytrace=False)
    assert report.compared == WINDOW_QUERIES
    assert report.nonempty == WINDOW_QUERIES


def _segment_sort_numpy(code, heads, n):
    """backend/gpu/window.sort_within_segments on NumPy: each partition's rows by code, stable."""
    seg = np.zeros(n, np.int64)
    seg[heads[1:]] = 1
    return np.lexsort([code, np.cumsum(seg)])


def test_window_suite_on_the_array_kernels_matches_duckdb(tpch_full, hetdb_runner, monkeypatch) -> None:
    """The GPU's window algorithm (``exec/window_array`` with NumPy in place of CuPy) on the CPU, the
    partitions of lineitem (grouped by l_orderkey) sorted one by one as the GPU's kernel does."""
    monkeypatch.setattr(window, "host_kernels", lambda: ArrayKernels(np, _segment_sort_numpy, 64))
    queries = load_queries("window")
    run = hetdb_runner(tpch_full.path, device="cpu")
    report = run_suite("window suite SF0.1 array kernels", tpch_full, queries, dict.fromkeys(queries, TOTAL), run,
                       dict.fromkeys(queries, AGGREGATE_TOL))
    if report.failures:
        pytest.fail(report.summary("window suite"), pytrace=False)
    assert report.compared == WINDOW_QUERIES
