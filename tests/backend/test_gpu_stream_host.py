"""The page streamer's routing through the pinned host tier: misses are read (and CRC-checked) into the
tier, hits are copied to the device straight from pinned blocks, device-cache hits move nothing; results
always equal the host reader. Also: a tier too small for the scan (the ring takes the rest), corrupt
and stale pages, early stops, fresh connections finding pages warm (with a gpu_memory_limit far below
the data), and a throughput measurement of disk / OS page cache / host tier written to $OUT."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.backend.gpu import gpu_available
from hetdb.cache import DevicePageCache, HostPageCache
from hetdb.errors import CorruptDataError
from hetdb.storage import ColumnSpec, Database, TableReader

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

ROWS = 5500
ROWS_PER_PAGE = 1000  # 6 row groups, the last one partial
COLUMNS = ["i64", "f64", "cat", "name", "maybe"]
BLOCK = 16 << 10


def make_table(path: str, seed: int = 7, rows: int = ROWS) -> TableReader:
    rng = np.random.default_rng(seed)
    table = pa.table({
        "i64": pa.array(rng.integers(-2**62, 2**62, rows), type=pa.int64()),
        "f64": pa.array(rng.standard_normal(rows)),
        "cat": pa.array(rng.choice(["red", "green", "blue", None], rows).tolist()),
        "name": pa.array([f"name-{i * seed}-{'x' * int(i % 13)}" for i in range(rows)]),
        "maybe": pa.array(rng.integers(-1000, 1000, rows), mask=rng.random(rows) < 0.3, type=pa.int32()),
    })
    schema = [ColumnSpec("i64", T.INT64), ColumnSpec("f64", T.FLOAT64), ColumnSpec("cat", T.STRING),
              ColumnSpec("name", T.STRING), ColumnSpec("maybe", T.INT32)]
    db = Database.open(path, create=True)
    with db.create_table("t", schema, rows_per_page=ROWS_PER_PAGE) as w:
        w.append_arrow(table)
    return db.table("t")


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    return make_table(str(tmp_path_factory.mktemp("host-tier") / "db"))


def budget(limit: int = 1 << 30):
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    return DeviceMemoryBudget(limit)


def tier(limit: int = 64 << 20) -> HostPageCache:
    return HostPageCache(limit, block_bytes=BLOCK, chunk_bytes=1 << 20)  # real pinned memory


def host_copy(col):
    import cupy

    from hetdb.column import Column

    def h(a):
        return None if a is None else cupy.asnumpy(a)

    return Column(col.dtype, data=h(col.data), validity=h(col.validity),
                  dictionary=None if col.dictionary is None else host_copy(col.dictionary),
                  offsets=h(col.offsets), chars=h(col.chars))


def scan(reader, columns=COLUMNS, **kw):
    """Stream every row group, compare each with the host reader; (stats, values compared)."""
    from hetdb.backend.gpu.stream import PageStreamer

    compared = 0
    with PageStreamer(reader, columns, budget=kw.pop("budget", None) or budget(), **kw) as s:
        for rg, batch in s:
            want = reader.read_batch(columns, rg)
            for name in columns:
                assert host_copy(batch[name]).to_arrow().equals(want[name].to_arrow()), (name, rg)
                compared += batch.num_rows
    return s.stats, compared


def n_pages(reader, columns=COLUMNS) -> int:
    return len(columns) * reader.num_row_groups


def test_routing_storage_then_host_tier_then_device_cache(reader):
    host = tier()
    first, compared = scan(reader, host_cache=host)
    assert compared == ROWS * len(COLUMNS)
    assert first.pages_read == first.pages_loaded == n_pages(reader) and first.pages_host == 0
    assert host.stats.misses == n_pages(reader) and len(host) == n_pages(reader)

    second, compared = scan(reader, host_cache=host)
    assert compared == ROWS * len(COLUMNS)
    assert second.pages_read == 0 and second.bytes_read == 0
    assert second.pages_host == n_pages(reader)
    lengths = sum(reader.page_location(c, rg).length for c in COLUMNS for rg in range(reader.num_row_groups))
    assert second.bytes_host == lengths and second.bytes_h2d >= lengths
    assert host.stats.hits == n_pages(reader)

    b = budget()
    device = DevicePageCache(b, share=0.5)
    fill, _ = scan(reader, host_cache=host, cache=device, budget=b)
    assert fill.pages_host == n_pages(reader) and fill.pages_cached == 0
    hot, compared = scan(reader, host_cache=host, cache=device, budget=b)
    assert compared == ROWS * len(COLUMNS)
    assert hot.pages_cached == n_pages(reader) and hot.pages_host == 0 and hot.pages_read == 0
    assert host.stats.hits == 2 * n_pages(reader)  # the device-cache hits never asked the host tier
    assert host.pinned_bytes() == 0 and device.pinned_bytes() == 0
    assert b.used_bytes == device.used_bytes
    device.clear()
    assert b.used_bytes == 0


def test_tier_smaller_than_the_scan_uses_the_ring_for_the_rest(reader):
    host = tier(limit=8 * BLOCK)  # room for 8 small pages of 30
    first, compared = scan(reader, host_cache=host, depth=2)
    assert compared == ROWS * len(COLUMNS)
    assert first.pages_read == n_pages(reader) and first.pages_loaded == 8
    for _ in range(2):  # a scan larger than the tier does not flush it: the next one finds pages there
        again, compared = scan(reader, host_cache=host, depth=2)
        assert compared == ROWS * len(COLUMNS)
        assert again.pages_host > 0 and again.pages_host + again.pages_read == n_pages(reader)
    assert host.stats.bypassed > 0  # pages worth no more than the residents went through the ring
    assert host.pinned_bytes() == 0 and host.held_bytes == host.used_bytes <= 8 * BLOCK


def test_corrupt_page_is_named_and_not_cached(reader, tmp_path):
    copy = tmp_path / "v"
    shutil.copytree(reader.path, copy)
    damaged = TableReader(str(copy), reader.name, reader.version)
    loc = damaged.page_location("i64", 2)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + 10)
        byte = f.read(1)
        f.seek(loc.offset + 10)
        f.write(bytes([byte[0] ^ 0xFF]))
    host = tier()
    for _ in range(2):  # the second scan must check again: the damaged page was never cached
        with pytest.raises(CorruptDataError, match=r"column 'i64'.*page 2.*checksum"):
            scan(damaged, ["i64"], host_cache=host)
    assert host.pinned_bytes() == 0 and host.held_bytes == host.used_bytes
    assert all(k.row_group != 2 for k in host.keys())


def test_recreated_table_at_the_same_path_is_not_served_stale(tmp_path):
    path = str(tmp_path / "db")
    host = tier()
    old = make_table(path, seed=1)
    scan(old, host_cache=host)
    shutil.rmtree(path)
    old_sums = {(c, rg): old.page_location(c, rg).checksum for c in COLUMNS for rg in range(old.num_row_groups)}
    new = make_table(path, seed=2)
    assert new.path == old.path
    changed = sum(new.page_location(c, rg).checksum != old_sums[c, rg]
                  for c in COLUMNS for rg in range(new.num_row_groups))
    assert changed > n_pages(new) // 2
    stats, compared = scan(new, host_cache=host)  # compares with the new data
    assert compared == ROWS * len(COLUMNS)
    # only pages with the very same bytes (same CRC and length) may be served from the tier
    assert stats.pages_read == changed and stats.pages_host == n_pages(new) - changed


def test_early_stop_returns_every_pin(reader):
    from hetdb.backend.gpu.stream import PageStreamer

    host = tier()
    scan(reader, ["i64", "f64"], host_cache=host)
    b = budget()
    with PageStreamer(reader, COLUMNS, budget=b, host_cache=host) as s:
        for rg, _batch in s:
            if rg == 1:
                break
    assert host.pinned_bytes() == 0 and host.held_bytes == host.used_bytes
    assert b.used_bytes == 0


def test_fresh_connections_stream_from_the_host_tier(tmp_path):
    """What the bench's warm mode measures: a new connection (empty GPU cache) per query, with the
    gpu_memory_limit at ~10% of the data so no GPU cache could hold it anyway."""
    import duckdb

    import hetdb
    from hetdb.cache.host_cache import shared_host_cache

    rows, rpp = 200_000, 4096
    rng = np.random.default_rng(3)
    data = pa.table({"a": pa.array(rng.integers(0, 1000, rows), pa.int64()),
                     "b": pa.array(rng.integers(0, 100, rows), pa.int64()),
                     "c": pa.array(rng.integers(-50, 50, rows), pa.int32())})
    db = Database.open(str(tmp_path / "db"), create=True)
    # plain pages: the GPU limit below is a tenth of the bytes on disk, which must be the decoded bytes
    # (a tenth of compressed pages is smaller than one decoded page, and the query would leave the GPU)
    with db.create_table("t", [ColumnSpec("a", T.INT64), ColumnSpec("b", T.INT64), ColumnSpec("c", T.INT32)],
                         rows_per_page=rpp, compression="none") as w:
        w.append_arrow(data)
    limit = db.table("t").bytes_on_disk() // 10
    sql = "select sum(a * c) as s, count(*) as n, min(b) as lo from t where b < 40 and c > -10"
    duck = duckdb.connect()
    duck.register("t", data)
    expected = duck.sql(sql).fetchall()
    shared_host_cache().clear()
    runs = []
    for _ in range(3):
        with hetdb.connect(str(tmp_path / "db"), device="gpu", gpu_memory_limit=limit) as con:
            res = con.sql(sql)
            runs.append((res.fetchall(), res.stats))
    for got, stats in runs:
        assert got == expected and stats["gpu_leaked_bytes"] == 0
    assert expected[0][1] > 0
    assert runs[0][1]["bytes_read"] > 0
    for _, stats in runs[1:]:
        assert stats["bytes_read"] == 0 and stats["pages_read"] > 0  # every page from the host tier
        assert stats["bytes_host_to_device"] >= limit
    # without the limit the pages fit in the GPU cache: a fresh connection fills it from the host tier
    # in one go (fill_cache) and the fused kernel runs one launch over them
    for _ in range(2):
        with hetdb.connect(str(tmp_path / "db"), device="gpu") as con:
            res = con.sql(sql)
            assert res.fetchall() == expected
            assert res.stats["bytes_read"] == 0 and res.stats["gpu_leaked_bytes"] == 0
            assert res.stats["bytes_host_to_device"] >= db.table("t").bytes_on_disk() // 2


def test_fill_cache_from_the_host_tier(reader):
    """The warm path: every page copied out of the host tier into the device cache in one go (dict and
    plain strings, NULLs included); a scan then finds every page cached and equal to the host reader."""
    from hetdb.backend.gpu.stream import PageStreamer

    host = tier()
    b = budget()
    device = DevicePageCache(b, share=0.5)
    with PageStreamer(reader, COLUMNS, budget=b, cache=device, host_cache=host) as s:
        assert not s.fill_cache()  # nothing in the host tier yet: nothing filled
    assert len(device) == 0 and b.used_bytes == 0 and host.pinned_bytes() == 0
    scan(reader, host_cache=host)  # loads the host tier
    hits = host.stats.hits
    with PageStreamer(reader, COLUMNS, budget=b, cache=device, host_cache=host) as s:
        assert s.fill_cache()
        assert s.stats.pages_host == n_pages(reader) and s.stats.pages_read == 0
    assert host.stats.hits == hits + n_pages(reader)
    # the pages, plus the dictionary of each dict-encoded string column (moved once)
    assert sum(k.part == "page" for k in device.keys()) == n_pages(reader)
    assert host.pinned_bytes() == 0 and device.pinned_bytes() == 0
    hot, compared = scan(reader, host_cache=host, cache=device, budget=b)
    assert compared == ROWS * len(COLUMNS)
    assert hot.pages_cached == n_pages(reader) and hot.pages_host == 0
    with PageStreamer(reader, COLUMNS, budget=b, cache=device, host_cache=host) as s:
        assert s.fill_cache()  # all resident already: complete, and nothing is copied
        assert s.stats.bytes_h2d == 0
    small = DevicePageCache(b, capacity_bytes=1024)
    with PageStreamer(reader, COLUMNS, budget=b, cache=small, host_cache=host) as s:
        assert not s.fill_cache() and len(small) == 0  # does not fit: stream instead
    device.clear()
    assert b.used_bytes == 0


def test_measure_host_tier_throughput(tmp_path):
    """GB/s of streaming a table (HETDB_STREAM_ROWS int64 rows x 4 columns; ~2 GB at 1<<26) from disk
    (O_DIRECT), from the OS page cache, into the host tier and from the host tier, against the pinned
    H2D ceiling; written to $OUT/stream_host_tier.json when OUT is set."""
    import gc
    import time

    import cupy

    from hetdb.backend.gpu import measure_bandwidth
    from hetdb.backend.gpu.throughput import stream_throughput

    rows = int(os.environ.get("HETDB_STREAM_ROWS", 1 << 22))
    rows_per_page = 1 << 20
    cols = ["a", "b", "c", "d"]
    db = Database.open(str(tmp_path / "big"), create=True)
    rng = np.random.default_rng(1)
    block = rng.integers(0, 1 << 40, rows_per_page)
    with db.create_table("big", [ColumnSpec(c, T.INT64) for c in cols], rows_per_page=rows_per_page) as w:
        for start in range(0, rows, rows_per_page):
            n = min(rows_per_page, rows - start)
            w.append_arrow(pa.table({c: np.roll(block[:n], i + start) for i, c in enumerate(cols)}))
    reader = db.table("big")
    b = budget(8 << 30)
    host = HostPageCache(2 * reader.bytes_on_disk() + (256 << 20))
    report: dict = {"rows": rows, "bytes": reader.bytes_on_disk()}
    report["warmup"] = stream_throughput(reader, cols, b)
    report["disk_odirect"] = stream_throughput(reader, cols, b)
    report["os_page_cache"] = stream_throughput(reader, cols, b, direct=False)
    start = time.perf_counter()
    report["host_tier_fill"] = stream_throughput(reader, cols, b, host_cache=host)
    report["host_tier_fill"]["pinned_alloc_included"] = True
    report["host_tier"] = [stream_throughput(reader, cols, b, host_cache=host) for _ in range(3)]
    report["host_tier_seconds_total"] = time.perf_counter() - start
    from hetdb.backend.gpu.throughput import fill_throughput

    report["host_tier_fill_cache"] = [fill_throughput(reader, cols, b, host) for _ in range(3)]
    ceiling = measure_bandwidth(64 << 20)
    report["ceilings"] = ceiling
    report["h2d_4mib_copies_gbps"] = _h2d_page_copies(64, 4 << 20)
    best = max(r["gbps"] for r in report["host_tier"])
    report["host_tier_fraction_of_pinned_h2d"] = best / ceiling["h2d_pinned_gbps"]
    report["fill_cache_fraction_of_pinned_h2d"] = (max(r["gbps"] for r in report["host_tier_fill_cache"])
                                                   / ceiling["h2d_pinned_gbps"])
    report["host_tier_stats"] = {"allocated_bytes": host.allocated_bytes, **host.stats.as_dict()}
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "stream_host_tier.json"), "w") as f:
            json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))
    pages = len(cols) * reader.num_row_groups
    assert report["host_tier_fill"]["pages_loaded"] == pages
    assert all(r["pages_host"] == pages and r["pages_read"] == 0 for r in report["host_tier"])
    assert all(r["filled"] and r["pages_host"] == pages for r in report["host_tier_fill_cache"])
    host.release_memory()
    cupy.get_default_memory_pool().free_all_blocks()
    gc.collect()


def _h2d_page_copies(count: int, nbytes: int) -> float:
    """GB/s of ``count`` back-to-back pinned H2D copies of ``nbytes`` each (the per-page ceiling)."""
    import cupy

    from hetdb.backend.gpu.memory import pinned_empty

    host = pinned_empty(nbytes, np.uint8)
    host[:] = 1
    dev = [cupy.empty(nbytes, dtype=cupy.uint8) for _ in range(count)]
    stream = cupy.cuda.Stream(non_blocking=True)
    best = 0.0
    for _ in range(3):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        for d in dev:
            cupy.cuda.runtime.memcpyAsync(d.data.ptr, host.ctypes.data, nbytes, 1, stream.ptr)
        stop.record(stream)
        stop.synchronize()
        best = max(best, count * nbytes / (cupy.cuda.get_elapsed_time(start, stop) / 1e3) / 1e9)
    return best
