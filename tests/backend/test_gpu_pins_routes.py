"""GPU side of placement, pins and routing: pins on the GPU tier (loaded, kept through scans that
evict everything else, refused with PinError when too large, released by unpin), pins in the pinned
host tier from a GPU connection (released at close), the pages-by-path counters of each forced route
in EXPLAIN ANALYZE, and no device memory or pinned host page left behind when a tight budget evicts
pages in the middle of a query."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb.backend.gpu import gpu_available
from hetdb.cache.pins import PinError

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

ROWS = 2_000_000  # 16 MB per int64 column, 2 row groups


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("gpu-pins") / "db")
    rng = np.random.default_rng(5)
    with hetdb.connect(path, device="cpu") as c:
        hot = pa.table({"k": np.arange(ROWS // 4, dtype=np.int64), "v": rng.integers(0, 100, ROWS // 4)})  # noqa: F841
        c.execute("CREATE TABLE hot AS SELECT * FROM hot")
        big = pa.table({f"c{i}": rng.integers(0, 1 << 40, ROWS) for i in range(4)})  # noqa: F841
        c.execute("CREATE TABLE big AS SELECT * FROM big")
    return path


def cpu_answer(db_path, sql):
    with hetdb.connect(db_path, device="cpu") as c:
        return c.sql(sql).fetchall()


def held(con) -> dict:
    return {(r["tier"], r["table"], r["column"]): r for r in con.sql("PRAGMA hetdb_cache").arrow().to_pylist()}


def test_gpu_pin_survives_scans_that_evict_everything_else(db_path):
    big_sql = "SELECT sum(c0), sum(c1), sum(c2), sum(c3) FROM big"
    hot_sql = "SELECT sum(k * v) FROM hot"
    with hetdb.connect(db_path, device="gpu", gpu_memory_limit="64MB") as con:  # cache share: 51 MB
        got = con.pin("hot", tier="gpu")
        assert got["pages"] >= 2 and got["bytes"] >= 2 * (ROWS // 4) * 8
        pinned = held(con)[("gpu", "hot", "k")]["pinned_bytes"]
        assert pinned > 0
        for _ in range(2):
            assert con.sql(big_sql).fetchall() == cpu_answer(db_path, big_sql)  # 64 MB through the rest
        assert held(con)[("gpu", "hot", "k")]["pinned_bytes"] == pinned
        text = con.explain(hot_sql, analyze=True)
        scan = next(x for x in text.splitlines() if "TableScan hot" in x)
        assert "gpu_resident" in scan and "disk" not in scan.split("paths:")[1]
        res = con.sql(hot_sql)
        assert res.fetchall() == cpu_answer(db_path, hot_sql) and res.stats["gpu_leaked_bytes"] == 0
        with pytest.raises(PinError, match="gpu_memory_limit"):
            con.pin("big", tier="gpu")  # 64 MB into what is left of a 51 MB share
        assert all(r["pinned_pages"] == 0 for k, r in held(con).items() if k[1] == "big")
        assert con.unpin("hot", tier="gpu") == got["pages"]
        assert con._get_engine().device.cache.kept_bytes() == 0


def test_host_tier_pin_from_a_gpu_connection_is_released_at_close(db_path):
    from hetdb.cache.host_cache import shared_host_cache

    tier = shared_host_cache()
    before = tier.kept_bytes()
    con = hetdb.connect(db_path, device="gpu")
    got = con.pin("hot", ["v"], tier="host")
    assert tier.kept_bytes() - before >= got["bytes"] > 0
    assert held(con)[("host", "hot", "v")]["pinned_pages"] == got["pages"]
    sql = "SELECT sum(v) FROM hot"
    con.set_option("route", "copy")
    paths = next(x for x in con.explain(sql, analyze=True).splitlines() if x.startswith("Pages by path:"))
    assert "host_to_gpu" in paths and "gpu_resident" not in paths and "disk" not in paths
    con.close()
    assert tier.kept_bytes() == before and tier.pinned_bytes() == before


@pytest.mark.parametrize("route,expect", [("auto", "gpu_resident"), ("copy", "host_to_gpu"),
                                          ("disk", "disk_direct")])
def test_forced_route_shows_in_explain_analyze(db_path, route, expect):
    sql = "SELECT sum(v), count(*) FROM hot WHERE v > 10"
    with hetdb.connect(db_path, device="gpu", route=route) as con:
        for _ in range(2):
            assert con.sql(sql).fetchall() == cpu_answer(db_path, sql)
        text = con.explain(sql, analyze=True)
        paths = next(x for x in text.splitlines() if x.startswith("Pages by path:"))
        assert expect in paths
        if route != "auto":
            assert "gpu_resident" not in paths
        if route == "disk":
            assert "host_to_gpu" not in paths and "disk_to_host" not in paths


def test_eviction_mid_query_leaves_nothing_behind(db_path):
    from hetdb.cache.host_cache import existing_shared_host_cache

    sql = "SELECT c0 % 100 AS g, count(*), sum(c1), max(c2) FROM big WHERE c3 > 1000 GROUP BY 1"
    want = sorted(cpu_answer(db_path, sql))
    with hetdb.connect(db_path, device="gpu", gpu_memory_limit="40MB") as con:
        con.pin("hot", ["k"], tier="gpu")
        for _ in range(2):
            res = con.sql(sql)
            assert sorted(res.fetchall()) == want
            assert res.stats["gpu_leaked_bytes"] == 0
        device = con._get_engine().device
        st = device.cache.stats
        # the budget did not hold the scan: pages were evicted, bypassed, or streamed without a cache entry
        assert st.evictions > 0 or st.bypassed > 0 or st.misses > st.admitted
        assert device.memory.used == 0
        assert device.cache.pinned_bytes() == device.cache.kept_bytes() > 0  # only the user's pin
    tier = existing_shared_host_cache()
    assert tier is None or tier.pinned_bytes() == tier.kept_bytes()


@pytest.mark.parametrize("mode", ["auto", "copy", "disk"])
def test_streamer_follows_the_router(db_path, mode):
    """PageStreamer under each forced route: which tiers it touches and the paths it reports."""
    from hetdb.backend.gpu.memory import DeviceMemoryBudget
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache import DevicePageCache, HostPageCache
    from hetdb.cache.router import PageRouter
    from hetdb.storage import Database

    reader = Database.open(db_path, create=False).table("hot")
    budget = DeviceMemoryBudget(1 << 30)
    device = DevicePageCache(budget, share=0.5)
    host = HostPageCache(256 << 20)
    pages = 2 * reader.num_row_groups
    for run in range(2):
        with PageStreamer(reader, ["k", "v"], budget=budget, cache=device, host_cache=host,
                          router=PageRouter(mode)) as s:
            total = sum(int(b.num_rows) for _, b in s)
        assert total == reader.num_rows
        counts = s.route_counts()
        assert sum(counts.pages.values()) == pages
        if mode == "auto":
            assert counts.pages == ({"disk_to_host": pages} if run == 0 else {"gpu_resident": pages})
        elif mode == "copy":
            assert counts.pages == ({"disk_to_host": pages} if run == 0 else {"host_to_gpu": pages})
            assert len(device) == 0
        else:
            assert counts.pages == {"disk_direct": pages} and len(device) == 0 and len(host) == 0
    assert device.pinned_bytes() == 0 and host.pinned_bytes() == 0
    device.clear()
    host.release_memory()
    assert budget.used_bytes == 0
