"""The SSB + TPC-H differential with each page-routing path forced in turn (cache/router.py's
``route`` option), on the GPU also under a budget small enough to evict pages in the middle of a
query; answers must equal DuckDB's, every scan must have taken the forced path, and no device
memory, pinned host page or reservation may be left behind. The CPU's ``disk`` route (no host page
cache) runs everywhere; the GPU cases are marked gpu."""

from __future__ import annotations

import pytest
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

TINY_GPU = "24MB"

# route -> paths a scan may take under it (pages by path in the query's statistics)
ALLOWED = {"auto": {"gpu_resident", "host_to_gpu", "disk_to_host", "disk_direct"},
           "copy": {"host_to_gpu", "disk_to_host", "disk_direct"},
           "disk": {"disk_direct"}}
CPU_ALLOWED = {"disk": {"disk_direct"}}


class PathCheck:
    """Wraps a HetdbRunner: after each query, the paths its scans took must be allowed."""

    def __init__(self, runner, allowed: set[str]) -> None:
        self.runner, self.allowed, self.seen = runner, allowed, set()

    def __call__(self, sql: str):
        out = self.runner(sql)
        stats = self.runner.last_stats
        if any(w.startswith("query on the CPU") for w in stats.get("cpu_fallbacks") or {}):
            return out  # the budget sent the whole query to the CPU (said in its statistics)
        paths = set((stats.get("routes") or {}).get("pages", {}))
        assert paths <= self.allowed, f"paths {sorted(paths - self.allowed)} under a forced route: {sql[:80]}"
        self.seen |= paths
        return out


def test_cpu_disk_route_matches_duckdb(ssb_small, tpch_small, hetdb_runner, expected_answers) -> None:
    run = PathCheck(hetdb_runner(ssb_small.path, device="cpu", route="disk"), CPU_ALLOWED["disk"])
    ssb = run_suite("SSB small [cpu route=disk]", ssb_small, load_queries("ssb"), SSB_ORDERING, run,
                    expected=expected_answers.setdefault("ssb", {}))
    assert not ssb.failures, "\n\n".join(ssb.failures)
    assert ssb.compared == 13 and run.seen == {"disk_direct"}


@pytest.mark.gpu
@pytest.mark.parametrize("limit", [None, TINY_GPU], ids=["unlimited", f"gpu_memory_limit={TINY_GPU}"])
@pytest.mark.parametrize("route", ["auto", "copy", "disk"])
def test_gpu_routes_match_duckdb(route, limit, ssb_small, tpch_small, expected_answers) -> None:
    from hetdb.backend.gpu import gpu_available

    if not gpu_available():
        pytest.skip("no GPU visible to CuPy")
    import hetdb
    from hetdb.cache.host_cache import existing_shared_host_cache

    options = {"route": route} if limit is None else {"route": route, "gpu_memory_limit": limit}
    for ds in (ssb_small, tpch_small):
        with hetdb.connect(ds.path, device="gpu", **options) as con:
            checked = PathCheck(_Runner(con), ALLOWED[route])
            _suites_one(ds, route, limit, checked, ssb_small, expected_answers)
            engine = con._get_engine()
            assert engine.device.memory.used == 0
            assert engine.device.cache.pinned_bytes() == 0  # no pin left by a scan
            assert checked.seen, "no scan reported its paths"
            if route == "copy":
                assert "gpu_resident" not in checked.seen and "host_to_gpu" in checked.seen
        tier = existing_shared_host_cache()
        assert tier is None or tier.pinned_bytes() == 0


def _suites_one(ds, route, limit, run, ssb_small, expected_answers) -> None:
    if ds is ssb_small:
        suite = run_suite(f"SSB small [gpu route={route} limit={limit}]", ds, load_queries("ssb"), SSB_ORDERING,
                          run, expected=expected_answers.setdefault("ssb", {}))
        size = 13
    else:
        suite = run_suite(f"TPC-H small [gpu route={route} limit={limit}]", ds, load_queries("tpch"),
                          TPCH_ORDERING, run, TPCH_TOLERANCE, expected=expected_answers.setdefault("tpch", {}))
        size = 22
    assert not suite.failures, "\n\n".join(suite.failures)
    assert suite.compared == size


class _Runner:
    """A HetdbRunner over an open connection, checking that no device memory leaks per query."""

    def __init__(self, con) -> None:
        self.con, self.last_stats = con, {}

    def __call__(self, sql: str):
        res = self.con.sql(sql)
        self.last_stats = dict(res.stats or {})
        assert self.last_stats.get("gpu_leaked_bytes", 0) == 0, sql[:80]
        return res.arrow()
