"""Pins on a CPU connection (the host tier the CPU scans read through), the PRAGMA forms, what the
cache tiers hold, forced routes on the CPU, and pages by path in EXPLAIN ANALYZE."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb.cache.pins import PinError
from hetdb.errors import CatalogError, HetdbError, SqlError, UnsupportedError

ROWS = 300_000


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("pins") / "db")
    c = hetdb.connect(path, device="cpu")
    rng = np.random.default_rng(3)
    small = pa.table({"k": np.arange(ROWS, dtype=np.int64), "v": rng.integers(0, 100, ROWS),  # noqa: F841
                      "s": pa.array(rng.choice(["red", "green", "blue"], ROWS))})
    c.execute("CREATE TABLE small AS SELECT * FROM small")
    big = pa.table({f"c{i}": rng.integers(0, 1 << 40, 4 * ROWS) for i in range(4)})  # noqa: F841
    c.execute("CREATE TABLE big AS SELECT * FROM big")
    c.close()
    return path


@pytest.fixture()
def con(db_path):
    c = hetdb.connect(db_path, device="cpu", host_memory_limit="64MB", threads=1)
    yield c
    c.close()


def contents(con) -> dict:
    t = con.sql("PRAGMA hetdb_cache").arrow().to_pylist()
    return {(r["tier"], r["table"], r["column"]): r for r in t}


def test_pin_keeps_pages_through_scans_larger_than_the_cache(con):
    got = con.pin("small", ["k", "v"], tier="host")
    assert got["pages"] >= 2 and got["bytes"] >= 2 * ROWS * 8 and got["columns"] == ["k", "v"]
    held = contents(con)
    assert held[("host", "small", "k")]["pinned_pages"] == held[("host", "small", "k")]["pages"] > 0
    for _ in range(3):  # 38 MB of 'big' through a 16 MB cache
        con.sql("SELECT sum(c0), sum(c1), sum(c2), sum(c3) FROM big").fetchall()
    after = contents(con)
    assert after[("host", "small", "k")]["pinned_bytes"] == held[("host", "small", "k")]["pinned_bytes"]
    text = con.explain("SELECT sum(k + v) FROM small", analyze=True)
    scan = next(line for line in text.splitlines() if "TableScan small" in line)
    assert "paths: host_cpu" in scan and "disk" not in scan.split("paths:")[1]
    assert con.sql("SELECT sum(k + v) FROM small").fetchone()[0] == int(np.arange(ROWS).sum()) + \
        con.sql("SELECT sum(v) FROM small").fetchone()[0]
    assert con.unpin("small", tier="host") == after[("host", "small", "k")]["pages"] + \
        after[("host", "small", "v")]["pages"]
    assert all(r["pinned_pages"] == 0 for r in contents(con).values())


def test_pin_that_does_not_fit_fails_and_pins_nothing(con):
    with pytest.raises(PinError, match="host_memory_limit"):
        con.pin("big", tier="host")  # 38 MB into a 16 MB cache
    assert all(r["pinned_pages"] == 0 for r in contents(con).values())
    assert con.sql("PRAGMA hetdb_pins").arrow().num_rows == 0


def test_pin_errors_are_typed_and_say_what_to_do(con):
    with pytest.raises(HetdbError, match="runs on the CPU.*tier='host'"):
        con.pin("small", tier="gpu")
    with pytest.raises(HetdbError, match="unknown tier"):
        con.pin("small", tier="ssd")
    with pytest.raises(CatalogError):
        con.pin("small", ["nope"], tier="host")
    with pytest.raises(CatalogError):
        con.pin("missing", tier="host")


def test_pragma_forms(con):
    pinned = con.sql("PRAGMA hetdb_pin('small', columns='s', tier='host')").arrow().to_pylist()
    assert pinned[0]["table"] == "small" and pinned[0]["columns"] == "s" and pinned[0]["pages"] >= 1
    pins = con.sql("PRAGMA hetdb_pins").arrow().to_pylist()
    assert [(p["tier"], p["table"], p["column"]) for p in pins] == [("host", "small", "s")]
    released = con.sql("PRAGMA hetdb_unpin('small', tier='host')").fetchone()[0]
    assert released == pins[0]["pages"]
    with pytest.raises(SqlError, match="unknown argument"):
        con.sql("PRAGMA hetdb_pin('small', level='gpu')")
    with pytest.raises(SqlError, match="name the table"):
        con.sql("PRAGMA hetdb_unpin")
    with pytest.raises(UnsupportedError, match="hetdb_pin"):
        con.sql("PRAGMA journal_mode")


def test_close_releases_pins(tmp_path):
    from hetdb.cache import pins

    con = hetdb.connect(str(tmp_path / "db"), device="cpu")
    t = pa.table({"a": np.arange(1000)})  # noqa: F841
    con.execute("CREATE TABLE t AS SELECT * FROM t")
    con.pin("t", tier="host")
    assert pins.pinned(con)
    con.close()
    assert not pins.pinned(con)


def test_forced_routes_on_the_cpu(con):
    con.sql("SELECT sum(v) FROM small").fetchall()
    con.set_option("route", "disk")
    text = con.explain("SELECT sum(v) FROM small", analyze=True)
    assert "paths: disk_direct" in text and "host_cpu" not in text
    assert "Pages by path: disk_direct" in text
    with pytest.raises(HetdbError, match="route='copy'.*runs on the CPU"):
        con.set_option("route", "copy")
    with pytest.raises(HetdbError, match="unknown route"):
        hetdb.connect(con.path, device="cpu", route="fastest")
    with pytest.raises(HetdbError, match="unknown gpu_cache_admission 'later'.*'reuse'.*'first'"):
        hetdb.connect(con.path, device="cpu", gpu_cache_admission="later")
    with pytest.raises(HetdbError, match="unknown gpu_cache_admission"):
        con.sql("SET gpu_cache_admission = 'never'")
    con.sql("SET gpu_cache_admission = 'FIRST'")  # accepted (case-insensitive) on any connection
    assert con.options.gpu_cache_admission == "first"
    con.set_option("route", "cpu")  # a CPU connection always processes pages on the CPU
    con.sql("SELECT sum(v) FROM small").fetchall()
    text = con.explain("SELECT sum(v) FROM small", analyze=True)
    assert "paths: host_cpu" in text


def test_scan_larger_than_the_cache_is_bypassed_and_counted(con):
    for _ in range(3):
        con.sql("SELECT sum(v) FROM small").fetchall()
    text = con.explain("SELECT sum(c0), sum(c1), sum(c2), sum(c3) FROM big", analyze=True)
    line = next(x for x in text.splitlines() if x.startswith("Pages by path:"))
    assert "bypassed=0" not in line and "disk_direct" in line
    held = contents(con)
    assert held[("host", "small", "v")]["pages"] > 0  # the hot column was not flushed


def test_cli_pin_and_route_flags(db_path, capsys):
    from hetdb.cli.main import main, parse_pin

    assert parse_pin("lineorder:lo_revenue,lo_discount@host") == ("lineorder", ["lo_revenue", "lo_discount"], "host")
    assert parse_pin("t") == ("t", None, "gpu")
    sql = "SELECT sum(v) FROM small"
    assert main(["query", db_path, sql, "--device", "cpu", "--pin", "small:v@host", "--analyze"]) == 0
    assert "paths: host_cpu" in capsys.readouterr().out  # pinned: the first run reads the cache
    assert main(["query", db_path, sql, "--device", "cpu", "--route", "disk", "--analyze"]) == 0
    assert "paths: disk_direct" in capsys.readouterr().out
    assert main(["query", db_path, sql, "--device", "cpu", "--pin", "small@gpu"]) != 0
    assert "runs on the CPU" in capsys.readouterr().err


def test_pinned_host_tier_pin_logic(db_path):
    """What tier='host' does on a GPU connection, on a HostPageCache with plain aligned memory."""
    from hetdb.cache import HostPageCache, PageKey
    from hetdb.cache.pins import _pin_pinned_host
    from hetdb.io import aligned_empty
    from hetdb.storage import Database

    reader = Database.open(db_path, create=False).table("small")
    host = HostPageCache(32 << 20, block_bytes=1 << 20, chunk_bytes=8 << 20, allocate=aligned_empty)
    got = _pin_pinned_host(host, reader, ["k", "v"])
    keys = got["k"][0] + got["v"][0]
    assert len(keys) == 2 * reader.num_row_groups and host.kept_bytes() == got["k"][1] + got["v"][1]
    for key in keys:  # the bytes are the pages' (their checksums were verified on the way in)
        loc = reader.page_location(key.column, key.row_group)
        page = host.lookup(key, loc)
        assert page is not None and page.kept and len(page.tobytes()) == loc.length
    for _ in range(3):  # a hot table that would displace anything not kept
        for rg in range(40):
            k = PageKey("/other", 1, "x", rg)
            if host.lookup(k) is None:
                host.put(k, np.zeros(1 << 20, dtype=np.uint8), 1 << 20)
    assert all(key in host for key in keys) and host.kept_bytes() == got["k"][1] + got["v"][1]
    small_tier = HostPageCache(8 << 20, block_bytes=1 << 20, chunk_bytes=8 << 20, allocate=aligned_empty)
    with pytest.raises(PinError, match="host_cache_limit"):
        _pin_pinned_host(small_tier, Database.open(db_path, create=False).table("big"), ["c0", "c1", "c2", "c3"])
    assert small_tier.kept_bytes() == 0 and len(small_tier) == 0
    for key in keys:
        host.unkeep(key)
    assert host.kept_bytes() == 0


def test_pages_split_into_morsels_count_once(db_path):
    with hetdb.connect(db_path, device="cpu", threads=8) as con:  # 'small' is cut into 2 morsels
        for expect in ("disk_to_host", "host_cpu"):
            text = con.explain("SELECT sum(k + v) FROM small", analyze=True)
            line = next(x for x in text.splitlines() if x.startswith("Pages by path:"))
            assert line.startswith(f"Pages by path: {expect} 2 pages/"), line
