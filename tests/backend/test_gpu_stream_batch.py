"""Batches of row groups for the GPU (``PageStreamer.batches()`` with ``batch_bytes``; stream_batch.py,
batch.py, kernels/batch_decode.cu): every batch equals the host reader's row groups concatenated and
the per-page path's output, over every codec, NULLs, dictionary and plain strings, from storage (the
ring), into and out of the pinned host tier; under a budget that evicts cached pages mid-scan; the
pages and bytes counted as the per-page path counts them; and a scan stopped early returns every pin,
reservation and device byte."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.backend.gpu import gpu_available
from hetdb.cache import DevicePageCache, HostPageCache
from hetdb.storage import ColumnSpec, Database

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

RPP = 4096
ROWS = 4 * RPP + 1000  # 5 row groups, the last one partial
I64 = np.iinfo(np.int64)
ENCODED = {"const", "for", "delta", "rle", "dict"}


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    rng = np.random.default_rng(5)
    n = ROWS
    cols = {
        "c_const": (T.INT32, pa.array(np.full(n, 19980101, np.int32))),
        "c_for": (T.INT64, pa.array(rng.integers(1000, 1050, n).astype(np.int64))),
        "c_delta": (T.INT64, pa.array(np.sort(rng.integers(-10**12, 10**12, n)))),
        "c_rle": (T.INT64, pa.array(np.repeat(rng.integers(0, 1 << 40, n // 20 + 1), 20)[:n])),
        "c_dict": (T.INT64, pa.array(rng.choice(np.array([-(1 << 50), 3, 1 << 45, 19920101], np.int64), n))),
        "c_plain": (T.INT64, pa.array(rng.integers(I64.min, I64.max, n, endpoint=True))),
        "c_nulls": (T.INT32, pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.3)),
        "c_flag": (T.BOOL, pa.array(rng.random(n) < 0.5)),
        "c_f64": (T.FLOAT64, pa.array(rng.standard_normal(n))),
        "c_date": (T.DATE, pa.array(rng.integers(0, 20000, n).astype(np.int32)).cast(pa.date32())),
        "s_dict": (T.STRING, pa.array(rng.choice(["red", "green", "blue", None], n).tolist())),
        "s_plain": (T.STRING, pa.array([None if i % 17 == 0 else f"name-{i}-{'x' * (i % 13)}" for i in range(n)])),
    }
    path = str(tmp_path_factory.mktemp("batches") / "db")
    db = Database.open(path, create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP) as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    return path


@pytest.fixture(scope="module")
def reader(db_path):
    return Database.open(db_path, create=False).table("t")


COLUMNS = ["c_const", "c_for", "c_delta", "c_rle", "c_dict", "c_plain", "c_nulls", "c_flag", "c_f64", "c_date",
           "s_dict", "s_plain"]


def budget(limit: int = 1 << 30):
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    return DeviceMemoryBudget(limit)


def tier(limit: int = 64 << 20) -> HostPageCache:
    return HostPageCache(limit, block_bytes=16 << 10, chunk_bytes=1 << 20)


def arrow_of(col) -> pa.Array:
    import cupy

    from hetdb.column import Column

    def h(a):
        return None if a is None else cupy.asnumpy(a)

    dictionary = None
    if col.dictionary is not None:
        d = col.dictionary
        dictionary = Column(d.dtype, data=h(d.data), validity=h(d.validity), offsets=h(d.offsets), chars=h(d.chars))
    return Column(col.dtype, data=h(col.data), validity=h(col.validity), dictionary=dictionary,
                  offsets=h(col.offsets), chars=h(col.chars)).to_arrow()


def want(reader, columns, rgs) -> dict[str, pa.Array]:
    out: dict[str, list] = {c: [] for c in columns}
    for rg in rgs:
        b = reader.read_batch(columns, rg)
        for c in columns:
            out[c].append(b[c].to_arrow())
    return {c: pa.concat_arrays(v) for c, v in out.items()}


def per_group(reader, columns, k: int) -> int:
    """batch_bytes that make groups of ``k`` full row groups."""
    return (k - 1) * sum(reader.page_location(c, 1).length for c in columns) + 1


def batched(reader, columns=COLUMNS, batch_bytes=None, **kw):
    """Stream with batches; compare each with the host reader. (stats, row groups per step, values
    compared, routes)."""
    from hetdb.backend.gpu.stream import PageStreamer

    steps, compared = [], 0
    batch_bytes = per_group(reader, columns, 3) if batch_bytes is None else batch_bytes
    with PageStreamer(reader, columns, budget=kw.pop("budget", None) or budget(), batch_bytes=batch_bytes,
                      **kw) as s:
        for rgs, batch in s.batches():
            steps.append(rgs)
            expected = want(reader, columns, rgs)
            assert batch.num_rows == sum(reader.row_group_rows(r) for r in rgs)
            for c in columns:
                assert arrow_of(batch[c]).equals(expected[c]), (c, rgs)
                compared += batch.num_rows
    return s.stats, steps, compared, s.route_counts()


def test_fixture_covers_every_codec(reader):
    codecs = {reader.page_codec(c, rg) for c in COLUMNS for rg in range(reader.num_row_groups)}
    assert ENCODED | {"plain"} <= codecs


@pytest.mark.parametrize("with_tier", [False, True], ids=["ring", "host-tier"])
def test_batches_equal_the_host_reader_and_count_like_the_per_page_path(reader, with_tier):
    from hetdb.backend.gpu.stream import PageStreamer

    host = tier() if with_tier else None
    stats, steps, compared, routes = batched(reader, host_cache=host)
    assert compared == ROWS * len(COLUMNS)
    # row group 0's s_plain page is dictionary-encoded (a column's first page always is, up to 64Ki
    # values), the others plain: the group of row groups 0-2 goes as two runs, 3-4 as one
    assert steps == [(0,), (1, 2), (3, 4)], steps
    assert [r for s in steps for r in s] == list(range(reader.num_row_groups))
    # the per-page path over a tier in the same state counts the same pages and bytes
    host2 = tier() if with_tier else None
    with PageStreamer(reader, COLUMNS, budget=budget(), host_cache=host2) as s:
        for rg, batch in s:
            expected = want(reader, COLUMNS, [rg])
            for c in COLUMNS:
                assert arrow_of(batch[c]).equals(expected[c]), (c, rg)
    per_page = s.stats.as_dict()
    got = stats.as_dict()
    per_page.pop("seconds")
    got.pop("seconds")
    assert got == per_page
    assert routes.pages == s.route_counts().pages and routes.bytes == s.route_counts().bytes
    if with_tier:
        again, _, compared, routes = batched(reader, host_cache=host)  # now every page is a host-tier hit
        assert compared == ROWS * len(COLUMNS)
        assert again.pages_host == len(COLUMNS) * reader.num_row_groups and again.pages_read == 0
        assert host.pinned_bytes() == 0


def test_single_row_group_batches_and_a_subset_of_row_groups(reader):
    stats, steps, compared, _ = batched(reader, batch_bytes=1, row_groups=[0, 2, 4])
    assert steps == [(0,), (2,), (4,)]
    assert compared == sum(reader.row_group_rows(r) for r in (0, 2, 4)) * len(COLUMNS)
    stats, steps, compared, _ = batched(reader, batch_bytes=1 << 30, row_groups=[1, 3, 4])
    assert steps == [(1, 3, 4)]


def test_budget_evicting_cached_pages_mid_scan(reader):
    """Cached pages of other columns fill most of a small budget: the batches' transient memory
    evicts them as the scan goes (the scan itself keeps nothing: route "copy"); results stay exact and
    nothing is left reserved."""
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache.pages import page_info
    from hetdb.cache.router import PageRouter

    kept = ["c_plain", "c_f64", "c_for", "c_rle", "c_dict", "c_const"]
    held = sum(page_info(reader, c, rg).device_bytes for c in kept for rg in range(reader.num_row_groups))
    # one row group's delivery of the three columns below is ~152-156 KB of device memory (row groups
    # 1-3): more than the 100 KB left free, so each delivery evicts cached pages even when the
    # consumer's previous delivery is released before the next is reserved (stream_batch does so
    # since budget13; with 300 KB free, as before, a delivery fits without evicting anything)
    b = budget(held + 100_000)
    device = DevicePageCache(b, share=1.0)
    with PageStreamer(reader, kept, budget=b, cache=device, keep=True) as s:
        for _ in s:
            pass
    assert len(device) == len(kept) * reader.num_row_groups
    before = device.stats.evictions
    stats, steps, compared, _ = batched(reader, ["c_delta", "s_plain", "c_nulls"], batch_bytes=1 << 30,
                                        budget=b, cache=device, row_groups=[1, 2, 3, 4],
                                        router=PageRouter("copy"))
    # a quarter of the budget holds one row group: four deliveries, each needing more than the free room
    assert steps == [(1,), (2,), (3,), (4,)] and stats.pages_cached == 0
    assert compared == (ROWS - RPP) * 3
    assert device.stats.evictions > before
    assert device.pinned_bytes() == 0 and b.used_bytes == device.used_bytes
    device.clear()
    assert b.used_bytes == 0


def test_cached_pages_are_delivered_row_group_by_row_group(reader):
    b = budget()
    device = DevicePageCache(b, share=0.9)
    batched(reader, ["c_rle", "s_dict"], cache=device, budget=b)  # a scan that fits: admitted
    stats, steps, compared, routes = batched(reader, ["c_rle", "s_dict"], cache=device, budget=b)
    assert compared == ROWS * 2
    assert stats.pages_cached == 2 * reader.num_row_groups and all(len(s) == 1 for s in steps)
    assert device.pinned_bytes() == 0
    device.clear()
    assert b.used_bytes == 0


@pytest.mark.parametrize("hold", [False, True], ids=["dropped", "held"])
@pytest.mark.parametrize("mode", ["batched", "paged", "row-group"])
def test_early_stop_returns_every_pin_reservation_and_device_byte(reader, mode, hold):
    """close() after one step frees the delivery's device buffer while the streamer and its iterator
    are still referenced (833,536 B batched, 374,784 B per row group were left on the H100: on its
    CPython 3.12.3, closing a generator paused outside a ``try`` kept its frame's locals, the last
    step's Batches; python/cpython gh-118272) — and while the consumer still holds the step's Batch
    (``held``: close() empties it, as it would be for a consumer's own suspended frame)."""
    import cupy

    from hetdb.backend.gpu.stream import PageStreamer

    pool = cupy.get_default_memory_pool()
    host = tier()
    b = budget()
    cupy.cuda.Device().synchronize()
    used = pool.used_bytes()
    batch_bytes = 0 if mode == "row-group" else per_group(reader, COLUMNS, 2)
    s = PageStreamer(reader, COLUMNS, budget=b, host_cache=host, batch_bytes=batch_bytes,
                     depth=2, row_groups=[1, 2, 3, 4], compressed=mode == "paged")
    it = s.batches()
    rgs, batch = next(it)
    if mode == "batched":
        assert len(rgs) > 1 and batch.num_rows > RPP
    else:
        assert len(rgs) == 1 and batch.num_rows == RPP
    kept = batch if hold else None
    del batch
    s.close()
    gc.collect()  # (nothing the streamer or ``it`` references may keep it)
    cupy.cuda.Device().synchronize()
    assert b.used_bytes == 0 and host.pinned_bytes() == 0
    assert host.held_bytes == host.used_bytes
    assert pool.used_bytes() <= used, (mode, pool.used_bytes() - used)
    assert kept is None or kept.columns == {}
    with pytest.raises(StopIteration):
        next(it)
    del it, s, kept
    gc.collect()


def test_sql_answers_equal_with_and_without_batches(db_path):
    import hetdb

    sql = ("SELECT c_dict, count(*), sum(c_nulls), min(s_plain), max(s_dict), sum(c_rle % 1000), "
           "sum(c_f64) FROM t WHERE c_for < 1040 GROUP BY c_dict ORDER BY c_dict")
    answers = []
    for batch_bytes in (0, 100_000, 64 << 20):
        with hetdb.connect(db_path, device="gpu", gpu_batch_bytes=batch_bytes, gpu_memory_limit="4MB") as con:
            answers.append(con.sql(sql).fetchall())
    with hetdb.connect(db_path, device="cpu") as con:
        cpu = con.sql(sql).fetchall()
    assert len(cpu) == 4
    for got in answers:
        assert [r[:6] for r in got] == [r[:6] for r in cpu]
        assert all(abs(g[6] - c[6]) < 1e-6 * max(1.0, abs(c[6])) for g, c in zip(got, cpu))



def test_explain_counts_pages_alike_and_fewer_deliveries_with_batches(db_path):
    """The pages a GPU scan reports (EXPLAIN ANALYZE's paths, the query stats) do not depend on
    batching; the deliveries do."""
    import hetdb

    sql = "SELECT c_dict, count(*), sum(c_nulls), sum(c_delta % 1000) FROM t GROUP BY c_dict ORDER BY c_dict"
    routes = {}
    for batch_bytes in (0, 64 << 20):
        with hetdb.connect(db_path, device="gpu", gpu_batch_bytes=batch_bytes, gpu_memory_limit="16MB",
                           route="copy") as con:
            res = con.sql(sql)
            rows = res.fetchall()
            routes[batch_bytes] = (rows, res.stats["routes"])
    (rows0, r0), (rows1, r1) = routes[0], routes[64 << 20]
    assert rows0 == rows1 and len(rows0) == 4
    assert sum(r0["pages"].values()) == sum(r1["pages"].values()) == 3 * 5  # 3 columns x 5 row groups
    assert r0["deliveries"] == 5 and 1 <= r1["deliveries"] < 5


@pytest.mark.parametrize("with_tier", [False, True], ids=["ring", "host-tier"])
def test_compressed_deliveries_keep_encoded_pages_and_equal_the_host_reader(reader, with_tier):
    """gpu_compressed_cache: a delivery is one Batch per row group out of one buffer; encoded pages are
    EncodedColumns over their stored bytes (decode.cu decodes them on .data), no decode launch."""
    from hetdb.backend.gpu.encoded import EncodedColumn
    from hetdb.backend.gpu.stream import PageStreamer

    host = tier() if with_tier else None
    b = budget()
    compared = encoded = 0
    with PageStreamer(reader, COLUMNS, budget=b, batch_bytes=per_group(reader, COLUMNS, 3), host_cache=host,
                      compressed=True) as s:
        steps = []
        for rgs, parts in s.deliveries():
            steps.append(rgs)
            assert len(parts) == len(rgs)
            for rg, part in zip(rgs, parts):
                expected = want(reader, COLUMNS, [rg])
                for c in COLUMNS:
                    col = part[c]
                    # string pages in a string codec (LZ4 chunks, encoded offsets) are decoded
                    kept = reader.page_codec(c, rg) not in ("plain", "offsets", "lz4")
                    assert isinstance(col, EncodedColumn) == kept, (c, rg)
                    encoded += kept
                    assert arrow_of(col).equals(expected[c]), (c, rg)
                    compared += part.num_rows
    assert compared == ROWS * len(COLUMNS) and encoded > 0
    assert [r for st in steps for r in st] == list(range(reader.num_row_groups))
    assert s.route_counts().deliveries == len(steps) < reader.num_row_groups
    assert b.used_bytes == 0
    if host is not None:
        assert host.pinned_bytes() == 0


@pytest.mark.parametrize("compressed", [False, True], ids=["decoded", "kept-encoded"])
def test_overlapped_deliveries_equal_the_host_reader(reader, compressed):
    # gpu_delivery_overlap: ramped group sizes, decode kernels on the consumer's stream (here the
    # current stream: the comparison reads the arrays after them); every codec, NULLs, strings
    host = tier()
    batched(reader, host_cache=host, compressed=compressed, overlap=True)  # loads the tier
    for _ in range(2):
        stats, steps, compared, routes = batched(reader, host_cache=host, compressed=compressed, overlap=True,
                                                 batch_bytes=per_group(reader, COLUMNS, 4))
        assert compared == ROWS * len(COLUMNS)
        assert [r for s in steps for r in s] == list(range(reader.num_row_groups))
        assert stats.pages_host == len(COLUMNS) * reader.num_row_groups
    assert host.pinned_bytes() == 0
