"""PageStreamer: table pages into device memory (O_DIRECT, pinned ring, async copies), checked against
the host reader; the device page cache across scans; tiny budgets; corruption; and a throughput
measurement written to $OUT when set."""

from __future__ import annotations

import decimal
import gc
import json
import os

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.backend.gpu import gpu_available
from hetdb.errors import CorruptDataError, OutOfMemoryError
from hetdb.storage import ColumnSpec, Database

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

ROWS = 5500
ROWS_PER_PAGE = 1000  # 6 row groups, the last one partial
COLUMNS = ["i32", "i64", "f64", "flag", "price", "day", "cat", "name", "maybe"]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    rng = np.random.default_rng(7)
    maybe = pa.array(rng.integers(-1000, 1000, ROWS), mask=rng.random(ROWS) < 0.3, type=pa.int32())
    table = pa.table({
        "i32": pa.array(rng.integers(-2**31, 2**31 - 1, ROWS), type=pa.int32()),
        "i64": pa.array(rng.integers(-2**62, 2**62, ROWS), type=pa.int64()),
        "f64": pa.array(rng.standard_normal(ROWS)),
        "flag": pa.array(rng.random(ROWS) < 0.5),
        "price": pa.array([int(x) for x in rng.integers(0, 10**6, ROWS)], type=pa.int64()),
        "day": pa.array(rng.integers(0, 20000, ROWS), type=pa.int32()).cast(pa.date32()),
        "cat": pa.array(rng.choice(["red", "green", "blue", None], ROWS).tolist()),
        "name": pa.array([f"name-{i}-{'x' * int(i % 13)}" for i in range(ROWS)]),
        "maybe": maybe,
    })
    schema = [ColumnSpec("i32", T.INT32), ColumnSpec("i64", T.INT64), ColumnSpec("f64", T.FLOAT64),
              ColumnSpec("flag", T.BOOL), ColumnSpec("price", T.decimal(12, 2)), ColumnSpec("day", T.DATE),
              ColumnSpec("cat", T.STRING), ColumnSpec("name", T.STRING), ColumnSpec("maybe", T.INT32)]
    db = Database.open(str(tmp_path_factory.mktemp("stream") / "db"), create=True)
    with db.create_table("t", schema, rows_per_page=ROWS_PER_PAGE) as w:
        w.append_arrow(table_for(table))
    return db.table("t")


def table_for(table: pa.Table) -> pa.Table:
    """The price column as DECIMAL(12,2) (cents / 100)."""
    dec = pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in table["price"].to_pylist()],
                   type=pa.decimal128(12, 2))
    return table.set_column(table.schema.get_field_index("price"), "price", dec)


def host_copy(col):
    """A device Column's content on the host, as the same Column shape (for comparison)."""
    import cupy

    from hetdb.column import Column

    def h(a):
        return None if a is None else cupy.asnumpy(a)

    return Column(col.dtype, data=h(col.data), validity=h(col.validity),
                  dictionary=None if col.dictionary is None else host_copy(col.dictionary),
                  offsets=h(col.offsets), chars=h(col.chars))


def assert_same(device_batch, host_batch) -> int:
    compared = 0
    for name in host_batch.names:
        got = host_copy(device_batch[name]).to_arrow()
        want = host_batch[name].to_arrow()
        assert got.equals(want), name
        compared += len(want)
    return compared


def budget(limit: int):
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    return DeviceMemoryBudget(limit)


def test_stream_matches_host_reader(reader):
    from hetdb.backend.gpu.stream import PageStreamer

    b = budget(1 << 30)
    compared = 0
    seen = []
    with PageStreamer(reader, COLUMNS, budget=b) as s:
        for rg, batch in s:
            seen.append(rg)
            assert batch.num_rows == reader.row_group_rows(rg)
            assert batch["cat"].is_dict  # low cardinality: dictionary pages, codes on the device
            assert batch["maybe"].validity is not None
            compared += assert_same(batch, reader.read_batch(COLUMNS, rg))
        assert s.stats.pages_read == len(COLUMNS) * reader.num_row_groups
    assert seen == list(range(reader.num_row_groups))
    assert compared == ROWS * len(COLUMNS)
    assert b.used_bytes == 0  # every transient reservation returned


def test_only_requested_row_groups_and_columns_are_read(reader):
    from hetdb.backend.gpu.stream import PageStreamer

    with PageStreamer(reader, ["i64"], row_groups=[4, 1], budget=budget(1 << 30)) as s:
        got = [(rg, host_copy(batch["i64"]).data.copy()) for rg, batch in s]
        assert s.stats.pages_read == 2
        assert s.stats.bytes_read == sum(reader.page_location("i64", rg).padded_length for rg in (4, 1))
    assert [rg for rg, _ in got] == [4, 1]
    for rg, data in got:
        np.testing.assert_array_equal(data, reader.read("i64", rg).data)


def test_cache_serves_repeated_scans(reader):
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache import DevicePageCache

    b = budget(1 << 30)
    cache = DevicePageCache(b, share=0.5)
    cols = ["i32", "cat", "maybe"]
    for _ in range(2):
        with PageStreamer(reader, cols, budget=b, cache=cache) as s:
            compared = sum(assert_same(batch, reader.read_batch(cols, rg)) for rg, batch in s)
        assert compared == ROWS * len(cols)
    assert s.stats.pages_read == 0 and s.stats.pages_cached == len(cols) * reader.num_row_groups
    assert cache.stats.hits >= len(cols) * reader.num_row_groups
    assert cache.pinned_bytes() == 0 and b.used_bytes == cache.used_bytes > 0
    cache.clear()
    assert b.used_bytes == 0


def test_tiny_budget_streams_with_eviction(reader):
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache import DevicePageCache

    # Room for about two row groups of two int64/float64 columns: the cache keeps evicting.
    limit = 2 * 2 * (ROWS_PER_PAGE * 8) + 4096
    b = budget(limit)
    cache = DevicePageCache(b, share=1.0)
    cols = ["i64", "f64"]
    compared = 0
    with PageStreamer(reader, cols, budget=b, cache=cache, depth=2) as s:
        for rg, batch in s:
            compared += assert_same(batch, reader.read_batch(cols, rg))
            assert b.used_bytes <= limit
    assert compared == ROWS * len(cols)
    assert cache.stats.evictions > 0 and b.peak_bytes <= limit
    with pytest.raises(OutOfMemoryError, match="gpu_memory_limit"):
        with PageStreamer(reader, cols, budget=budget(1000)) as s2:
            for _ in s2:
                pass


def test_early_stop_returns_everything(reader):
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache import DevicePageCache

    b = budget(1 << 30)
    cache = DevicePageCache(b, share=0.5)
    with PageStreamer(reader, COLUMNS, budget=b, cache=cache) as s:
        for rg, _batch in s:
            if rg == 1:
                break
    assert cache.pinned_bytes() == 0 and b.used_bytes == cache.used_bytes


def test_corrupt_page_is_named(reader, tmp_path):
    import shutil

    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.storage import TableReader

    copy = tmp_path / "v"
    shutil.copytree(reader.path, copy)
    damaged = TableReader(str(copy), reader.name, reader.version)
    loc = damaged.page_location("i32", 2)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + 10)
        byte = f.read(1)
        f.seek(loc.offset + 10)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CorruptDataError, match=r"column 'i32'.*page 2.*checksum"):
        with PageStreamer(damaged, ["i32"], budget=budget(1 << 30)) as s:
            for _ in s:
                pass


def stage_rates(reader, cols) -> dict[str, float]:
    """GB/s of the pipeline's stages alone: O_DIRECT reads (8 threads) and CRC-32 (one thread)."""
    import time
    import zlib

    from hetdb import io

    locs = [reader.page_location(c, rg) for c in cols for rg in range(reader.num_row_groups)]
    total = sum(loc.padded_length for loc in locs)
    start = time.perf_counter()
    bufs = io.read_pages(locs, max_workers=8)
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    for buf in bufs:
        zlib.crc32(memoryview(buf))
    crc_s = time.perf_counter() - start
    return {"odirect_read_gbps": total / read_s / 1e9, "crc32_one_thread_gbps": total / crc_s / 1e9}


def test_measure_streaming_throughput(tmp_path):
    """Effective GB/s of streaming a larger table cold (storage) and hot (device cache) against the
    pinned H2D ceiling; written to $OUT/stream_throughput.json when OUT is set."""
    from hetdb.backend.gpu import measure_bandwidth
    from hetdb.backend.gpu.throughput import stream_throughput
    from hetdb.cache import DevicePageCache

    rows = int(os.environ.get("HETDB_STREAM_ROWS", 1 << 22))
    rows_per_page = 1 << 20
    cols = ["a", "b", "c", "d"]
    db = Database.open(str(tmp_path / "big"), create=True)
    rng = np.random.default_rng(1)
    with db.create_table("big", [ColumnSpec(c, T.INT64) for c in cols], rows_per_page=rows_per_page) as w:
        for start in range(0, rows, rows_per_page):
            n = min(rows_per_page, rows - start)
            w.append_arrow(pa.table({c: rng.integers(0, 1 << 40, n) for c in cols}))
    reader = db.table("big")
    b = budget(8 << 30)
    cache = DevicePageCache(b, share=0.5)
    warmup = stream_throughput(reader, cols, b, cache=None)  # pinned ring, device pool, threads
    cold = stream_throughput(reader, cols, b, cache=None)
    page_cache = stream_throughput(reader, cols, b, cache=None, direct=False)
    first = stream_throughput(reader, cols, b, cache=cache)
    hot = stream_throughput(reader, cols, b, cache=cache)
    ceiling = measure_bandwidth(64 << 20)
    report = {"rows": rows, "bytes": reader.bytes_on_disk(), "first_scan": warmup,
              "odirect_no_cache": cold, "os_page_cache_no_cache": page_cache, "odirect_fill_cache": first,
              "hot": hot, "ceilings": ceiling, "parts": stage_rates(reader, cols),
              "odirect_fraction_of_pinned_h2d": cold["gbps"] / ceiling["h2d_pinned_gbps"],
              "page_cache_fraction_of_pinned_h2d": page_cache["gbps"] / ceiling["h2d_pinned_gbps"]}
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "stream_throughput.json"), "w") as f:
            json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))
    assert cold["pages_read"] == len(cols) * reader.num_row_groups
    assert hot["pages_read"] == 0 and hot["pages_cached"] == len(cols) * reader.num_row_groups
    cache.clear()
    gc.collect()
