"""SSB and TPC-H on the GPU with CPU+GPU co-processing forced on (``gpu_coprocess='on'``:
exec/coprocess.py, cache/coscan.py) against DuckDB: CPU workers steal row groups of every fused
pipeline's scan from the back while the GPU streams the front (pages of 1000 rows, so every such
pipeline mixes CPU and GPU work), with and without batched deliveries, with pages kept compressed,
and under a budget that evicts pages in the middle of a query; no device memory, pin or reservation
may be left behind, and EXPLAIN ANALYZE shows the row groups each side took and the CPU's pages
(route host_cpu). Marked gpu."""

from __future__ import annotations

import re

import pytest
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no GPU visible to CuPy")]

CONFIGS = {
    "batched": {"gpu_batch_bytes": 64 << 20},
    "per-row-group": {"gpu_batch_bytes": 0, "gpu_memory_limit": "24MB"},
    "compressed": {"gpu_batch_bytes": 256 << 10, "gpu_compressed_cache": True, "gpu_memory_limit": "24MB"},
}


class _Runner:
    def __init__(self, con) -> None:
        self.con = con

    def __call__(self, sql: str):
        res = self.con.sql(sql)
        assert dict(res.stats or {}).get("gpu_leaked_bytes", 0) == 0, sql[:80]
        return res.arrow()


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("suite", ["ssb", "tpch"])
def test_coprocessed_suites_match_duckdb(suite, config, ssb_small, tpch_small, expected_answers) -> None:
    import hetdb
    from hetdb.cache.host_cache import existing_shared_host_cache

    options = {"gpu_coprocess": "on", "threads": 4, **CONFIGS[config]}
    ds, ordering, tolerance, size = ((ssb_small, SSB_ORDERING, None, 13) if suite == "ssb"
                                     else (tpch_small, TPCH_ORDERING, TPCH_TOLERANCE, 22))
    queries = load_queries(suite)
    with hetdb.connect(ds.path, device="gpu", **options) as con:
        for _ in range(2):  # the second run: pages in the host tier, dense tables reused
            report = run_suite(f"{suite} [co-processing {config}]", ds, queries, ordering, _Runner(con),
                               tolerance, expected=expected_answers.setdefault(suite, {}))
            assert not report.failures, "\n\n".join(report.failures)
            assert report.compared == size
        engine = con._get_engine()
        assert engine.device.memory.used == 0
        assert engine.device.cache.pinned_bytes() == 0
    tier = existing_shared_host_cache()
    assert tier is None or tier.pinned_bytes() == 0
    if suite == "ssb":  # (TPC-H's aggregations are mostly compiled pipelines, not fused ones)
        cpu_row_groups = 0
        # a fresh connection (nothing GPU-resident): the CPU workers take part
        with hetdb.connect(ds.path, device="gpu", **options) as con:
            for sql in list(queries.values())[:6]:
                plan = con.explain(sql, analyze=True)
                for m in re.finditer(r"co-processing: (\d+) row groups on \d+ CPU workers, (\d+) on the GPU", plan):
                    cpu_row_groups += int(m.group(1))
        assert cpu_row_groups > 0


def test_explain_shows_pages_on_the_cpu_and_off_turns_it_off(ssb_small) -> None:
    import hetdb

    sql = load_queries("ssb")["q1.1"]
    answers = {}
    for mode in ("off", "on", "on"):  # (the second "on": the CPU's pages are in the host tier by now)
        # route 'copy': no page is GPU-resident (the device cache may hold them from earlier tests)
        with hetdb.connect(ssb_small.path, device="gpu", gpu_coprocess=mode, threads=4, route="copy") as con:
            plan = con.explain(sql, analyze=True)
            answers[mode] = con.sql(sql).fetchall()
        if mode == "on":
            assert "co-processing" in plan and "host_cpu" in plan, plan
        else:
            assert "co-processing" not in plan, plan
    assert answers["on"] == answers["off"] and len(answers["on"]) == 1


def test_auto_on_warm_scans_matches_duckdb_and_says_what_it_did(ssb_small, expected_answers, monkeypatch) -> None:
    """gpu_coprocess='auto' on warm runs (a fresh connection per query: the early fact scan is the
    shared scan's GPU side when the cost model expects a gain) with a prior GPU rate as slow as a
    CPU worker's, so the model co-processes: answers as DuckDB's, EXPLAIN ANALYZE says what each
    side took (or why not), nothing left held."""
    import hetdb
    from hetdb.cache import rates as rates_module
    from hetdb.cache import router
    from hetdb.cache.host_cache import existing_shared_host_cache
    from hetdb.cache.rates import Rates
    from hetdb.exec.coprocess_plan import wait_prepared

    rates = Rates()
    monkeypatch.setattr(rates_module, "DEFAULT_GPU_PAGES_PER_S", 200.0)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    queries = load_queries("ssb")
    options = {"gpu_coprocess": "auto", "threads": 4}

    def warm(sql: str):
        with hetdb.connect(ssb_small.path, device="gpu", **options) as con:
            res = con.sql(sql)
            assert dict(res.stats or {}).get("gpu_leaked_bytes", 0) == 0, sql[:80]
            out = res.arrow()
            assert con._get_engine().device.memory.used == 0
            return out

    notes = []
    for attempt in range(2):  # (the first run loads the pinned host tier and measures the GPU alone)
        report = run_suite(f"ssb [co-processing auto, warm {attempt}]", ssb_small, queries, SSB_ORDERING, warm,
                           None, expected=expected_answers.setdefault("ssb", {}))
        assert not report.failures, "\n\n".join(report.failures)
        assert report.compared == 13
        if attempt == 0:  # (the CPU rate not measured yet: a probe run where the model lets one fit)
            assert wait_prepared()  # (the CPU sides set up on threads of their own after the runs alone)
            for sql in list(queries.values())[:4]:
                with hetdb.connect(ssb_small.path, device="gpu", **options) as con:
                    notes += re.findall(r"\((?:CPU\+GPU co-processing|not co-processed)[^)]*\)",
                                        con.explain(sql, analyze=True))
    # (planned co-processed; whether a worker took a morsel before the GPU was done is a race)
    assert notes and any("CPU+GPU co-processing" in n for n in notes), notes
    tier = existing_shared_host_cache()
    assert tier is None or tier.pinned_bytes() == 0


@pytest.mark.parametrize("narrow", [False, True])
def test_forced_splits_with_the_workers_share_in_compiled_calls_match_duckdb(ssb_small, expected_answers,
                                                                            monkeypatch, narrow) -> None:
    """gpu_coprocess='auto' with the split forced (the back of each fused pipeline's scan reserved
    for 3 CPU workers from the query's start) on warm runs: once the reserved pages are kept decoded
    (and, ``narrow``, their narrow copies made) the workers take them in one compiled call each
    (exec/coprocess_batch.py); answers as DuckDB's, nothing left held."""
    import contextlib

    import hetdb
    from hetdb.backend.cpu import tuning
    from hetdb.cache.host_cache import existing_shared_host_cache
    from hetdb.exec import coprocess_plan
    from hetdb.exec.coprocess_plan import wait_prepared

    monkeypatch.setattr(coprocess_plan, "FORCED_SPLIT", (3, 6))
    queries = load_queries("ssb")
    compiled = []

    def warm(sql: str):
        with hetdb.connect(ssb_small.path, device="gpu", gpu_coprocess="auto", threads=4) as con:
            res = con.sql(sql)
            stats = dict(res.stats or {})
            assert stats.get("gpu_leaked_bytes", 0) == 0, sql[:80]
            compiled.extend(c.get("compiled_share") for c in stats.get("coprocess") or [])
            out = res.arrow()
            assert con._get_engine().device.memory.used == 0
            return out

    with tuning.override(narrow_scan_rows=1) if narrow else contextlib.nullcontext():
        for attempt in range(3):
            report = run_suite(f"ssb [forced split, warm {attempt}]", ssb_small, queries, SSB_ORDERING, warm,
                               None, expected=expected_answers.setdefault("ssb", {}))
            assert not report.failures, "\n\n".join(report.failures)
            assert report.compared == 13
            if attempt == 0:
                assert wait_prepared()
    assert True in compiled, compiled
    tier = existing_shared_host_cache()
    assert tier is None or tier.pinned_bytes() == 0
