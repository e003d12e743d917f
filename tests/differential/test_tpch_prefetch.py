"""The 22 TPC-H queries (SF 0.1) on the CPU with every compiled probe looked up through the
prefetching lookup passes (codegen/probe_prefetch.py: by default only builds past the L2 cache, which
SF 0.1 hardly has), against DuckDB."""

from __future__ import annotations

import pytest
from diff_queries import TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.backend.cpu.codegen import pipeline_py
from hetdb.exec import compiled_cpu_kernels


def test_tpch_with_prefetched_probes_matches_duckdb(tpch_full, hetdb_runner, monkeypatch) -> None:
    fetched = []
    passes = pipeline_py._Gen._prefetch_passes

    def spy(self, stages, taken):
        lines = passes(self, stages, taken)
        fetched.append(len(self.fetched))
        return lines

    monkeypatch.setattr(pipeline_py._Gen, "_prefetch_passes", spy)
    monkeypatch.setattr(compiled_cpu_kernels, "PREFETCH_BYTES", 0)
    compiled_cpu_kernels._SPEC_KERNELS.clear()
    queries = load_queries("tpch")
    run = hetdb_runner(tpch_full.path, device="cpu", threads=3)
    try:
        report = run_suite("TPC-H SF0.1 cpu prefetch", tpch_full, queries, TPCH_ORDERING, run, TPCH_TOLERANCE)
    finally:
        compiled_cpu_kernels._SPEC_KERNELS.clear()
    if report.failures:
        pytest.fail(report.summary("TPC-H"), pytrace=False)
    assert report.compared == len(queries) == 22
    assert sum(1 for f in fetched if f) >= 10, fetched
