"""The streamer's batched iteration (backend/gpu/stream_batch.py) without a GPU: CuPy's streams and
events are stand-ins, the pinned memory is plain memory, and ``run_delivery`` carries each plan out
with NumPy (tests/backend/batch_host.py) straight from the host addresses the streamer hands it. What
runs for real: grouping, routing, ring-slot layout, O_DIRECT reads with CRC checks, the host tier,
budget reservations and releases, pins, early stops. Every batch must equal the host reader's row
groups concatenated; the kernels themselves are checked on the GPU (test_gpu_stream_batch.py)."""

from __future__ import annotations

import ctypes
import types

import numpy as np
import pyarrow as pa
import pytest
from batch_host import run_plan_on_host

from hetdb import codec
from hetdb import types as T
from hetdb.backend.gpu import batch as gpu_batch
from hetdb.backend.gpu import memory as gpu_memory
from hetdb.backend.gpu import stream as gpu_stream
from hetdb.backend.gpu import stream_batch as gpu_stream_batch
from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn
from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import HostPageCache
from hetdb.cache.router import PageRouter
from hetdb.errors import CorruptDataError
from hetdb.storage import ColumnSpec, Database

RPP = 4096
ROWS = 4 * RPP + 700
COLUMNS = ["c_rle", "c_delta", "c_plain", "c_nulls", "c_flag", "c_f64", "s_dict", "s_plain"]


class _Event:
    done = True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass


class _Stream:
    ptr = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class _Device:
    id = 0

    def __init__(self, *args) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _host_run_delivery(plan, sources, dtypes, stream, staged=None, launch_stream=None, regions=None):
    def fetch(ci, pi, off, n):
        out = np.empty(n, np.uint8)
        start = 0
        for addr, ln in sources[ci][pi]:
            lo, hi = max(off, start), min(off + n, start + ln)
            if lo < hi:
                run = np.ctypeslib.as_array((ctypes.c_uint8 * ln).from_address(addr))
                out[lo - off:hi - off] = run[lo - start:hi - start]
            start += ln
        return out

    # the copies run_delivery queues: a column's neighbouring host-tier pages as one (plan.linked)
    copies = None
    if regions is not None and plan.linked:
        from hetdb.backend.gpu.batch import _linked_pieces
        from hetdb.backend.gpu.batch_plan import coalesce_linked

        copies = coalesce_linked(_linked_pieces(plan, sources, regions))
    return run_plan_on_host(plan, fetch, [np.uint8 if d is None else d for d in dtypes], copies)


def _host_decode_stored(self, page, got):
    """A page in a string codec (LZ4 chunks, encoded offsets), decoded by the host reader."""
    buf = got if isinstance(got, np.ndarray) else np.concatenate(got.runs)
    return self.reader.decode(page.column, page.row_group, buf[:page.location.length])


def _host_coded_column(self, pages, raws):
    from hetdb.column import Column

    arrays = [_host_decode_stored(self, p, got).to_arrow() for p, got in zip(pages, raws)]
    return Column.from_arrow(pa.concat_arrays(arrays), T.STRING)


@pytest.fixture()
def fake_gpu(monkeypatch):
    cuda = types.SimpleNamespace(Device=_Device, Event=lambda disable_timing=True: _Event(),
                                 get_current_stream=lambda: _Stream())
    monkeypatch.setitem(__import__("sys").modules, "cupy", types.SimpleNamespace(cuda=cuda, asarray=np.asarray))
    monkeypatch.setattr(gpu_stream, "copy_stream", lambda device_id: _Stream())
    monkeypatch.setattr(gpu_stream_batch, "decode_stream", lambda device_id: _Stream())
    monkeypatch.setattr(gpu_stream.PageStreamer, "_observe_rates", lambda self: None)
    monkeypatch.setattr(gpu_batch, "run_delivery", _host_run_delivery)
    monkeypatch.setattr(gpu_stream.PageStreamer, "_coded_column", _host_coded_column)
    monkeypatch.setattr(gpu_stream.PageStreamer, "_decode_stored", _host_decode_stored)
    monkeypatch.setattr(gpu_memory, "pinned_empty", lambda shape, dtype=np.uint8: np.empty(shape, dtype))
    # a page kept encoded decodes through the CPU codec (decode.cu is checked on the GPU)
    monkeypatch.setattr(DevicePage, "decode", lambda self: codec.decode(self.data, self.codec, self.n, self.dtype))


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    rng = np.random.default_rng(11)
    n = ROWS
    cols = {
        "c_rle": (T.INT64, pa.array(np.repeat(rng.integers(0, 1 << 40, n // 20 + 1), 20)[:n])),
        "c_delta": (T.INT64, pa.array(np.sort(rng.integers(-10**12, 10**12, n)))),
        "c_plain": (T.INT64, pa.array(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n))),
        "c_nulls": (T.INT32, pa.array(rng.integers(0, 100, n).astype(np.int32), mask=rng.random(n) < 0.3)),
        "c_flag": (T.BOOL, pa.array(rng.random(n) < 0.5)),
        "c_f64": (T.FLOAT64, pa.array(rng.standard_normal(n))),
        "s_dict": (T.STRING, pa.array(rng.choice(["red", "green", "blue", None], n).tolist())),
        "s_plain": (T.STRING, pa.array([None if i % 17 == 0 else f"n{i}-{'x' * (i % 9)}" for i in range(n)])),
    }
    db = Database.open(str(tmp_path_factory.mktemp("batches-cpu") / "db"), create=True)
    with db.create_table("t", [ColumnSpec(k, t) for k, (t, _) in cols.items()], rows_per_page=RPP) as w:
        w.append_arrow(pa.table({k: a for k, (_, a) in cols.items()}))
    return db.table("t")


def _tier() -> HostPageCache:
    def allocate(nbytes: int) -> np.ndarray:  # 4096-aligned plain memory (O_DIRECT reads into it)
        raw = np.empty(nbytes + 4096, np.uint8)
        start = (-raw.ctypes.data) % 4096
        return raw[start:start + nbytes]

    return HostPageCache(64 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20, allocate=allocate)


def _want(reader, rgs):
    parts = [reader.read_batch(COLUMNS, rg) for rg in rgs]
    return {c: pa.concat_arrays([p[c].to_arrow() for p in parts]) for c in COLUMNS}


def _scan(reader, budget, **kw):
    steps, compared = [], 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=budget, **kw) as s:
        for rgs, batch in s.batches():
            steps.append(rgs)
            want = _want(reader, rgs)
            assert batch.num_rows == sum(reader.row_group_rows(r) for r in rgs)
            assert budget.used_bytes > 0  # the delivery's buffer is reserved while in use
            for c in COLUMNS:
                assert batch[c].to_arrow().equals(want[c]), (c, rgs)
                compared += batch.num_rows
    return s, steps, compared


def test_fixture_pages(reader):
    # row group 0's s_plain page is dictionary-encoded (a first page always is), the others plain
    assert [reader.page_encoding("s_plain", rg) for rg in range(5)] == ["dict"] + ["plain"] * 4
    assert {reader.page_codec(c, rg) for c in COLUMNS for rg in range(5)} >= {"rle", "delta", "for", "plain"}


@pytest.mark.parametrize("route", ["disk", "auto"])
def test_batches_from_the_ring_and_the_host_tier_equal_the_reader(reader, fake_gpu, route):
    b = DeviceMemoryBudget(1 << 30)
    host = _tier() if route == "auto" else None
    for attempt in range(2 if host else 1):  # with a host tier: loaded into it, then copied out of it
        s, steps, compared = _scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4], host_cache=host,
                                   router=PageRouter(route))
        assert steps == [(1, 2, 3, 4)] and compared == (ROWS - RPP) * len(COLUMNS)
        assert s.route_counts().deliveries == 1
        assert b.used_bytes == 0
        st = s.stats
        assert st.row_groups == 4 and st.rows == ROWS - RPP
        pages = 4 * len(COLUMNS)
        if host is None:
            assert st.pages_read == pages and s.route_counts().pages == {"disk_direct": pages}
        elif attempt == 0:
            assert st.pages_read == st.pages_loaded == pages
        else:
            assert st.pages_host == pages and st.pages_read == 0
            assert s.route_counts().pages == {"host_to_gpu": pages}
    if host is not None:
        assert host.pinned_bytes() == 0


def test_a_run_ends_where_a_string_column_changes_encoding(reader, fake_gpu):
    b = DeviceMemoryBudget(1 << 30)
    s, steps, compared = _scan(reader, b, batch_bytes=1 << 30, router=PageRouter("disk"))
    # row group 0's s_plain page is dictionary-encoded, the others plain: two runs in one group
    assert steps == [(0,), (1, 2, 3, 4)] and compared == ROWS * len(COLUMNS)
    assert s.route_counts().deliveries == 2 and b.used_bytes == 0


class _Verdicts:
    """A device cache that admits the pages of some row groups (and holds nothing)."""

    capacity_bytes = 1 << 40
    stats = types.SimpleNamespace(admitted=0, evictions=0, bypassed=0)

    def __init__(self, admit: set[int]) -> None:
        self.admit, self.asked = admit, []

    def get(self, key, pin=False):
        return None

    def kept_bytes(self) -> int:
        return 0

    def reserve(self, nbytes, key=None, link_bytes=None, first_reuse=None, headroom=0) -> bool:
        if key is None:
            return False  # a dictionary: transient
        self.asked.append((key.column, key.row_group))
        return key.row_group in self.admit and key.column == "c_f64"

    def release(self, nbytes) -> None:
        raise AssertionError("an admitted page the stand-in per-page path took must not be released")


def test_row_groups_with_admitted_pages_go_alone_the_others_in_runs(reader, fake_gpu, monkeypatch):
    per_row_group = []

    def deliver(self, rg):  # the per-page path (CuPy) stands in: the host reader's row group
        rg_id = self.row_groups[rg.index]
        per_row_group.append(rg_id)
        for p in rg.pages:
            assert p.admitted is not None  # the verdict asked with the group's is used, not asked again
            p.admitted = None
        return reader.read_batch(COLUMNS, rg_id)

    monkeypatch.setattr(gpu_stream.PageStreamer, "_deliver", deliver)
    cache = _Verdicts({2})
    b = DeviceMemoryBudget(1 << 30)
    s, steps, compared = _scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4], cache=cache,
                               router=PageRouter("auto"))  # no host tier: every page from the ring
    assert steps == [(1,), (2,), (3, 4)] and per_row_group == [2]
    assert compared == (ROWS - RPP) * len(COLUMNS)
    # every page's verdict was asked once, in page order, before any was moved
    assert cache.asked == [(c, rg) for rg in (1, 2, 3, 4) for c in COLUMNS]
    assert b.used_bytes == 0


def test_groups_follow_the_target_and_a_budget_quarter(reader, fake_gpu):
    # a target just above the largest row group: every group closes at its second row group
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in range(1, 5))
    b = DeviceMemoryBudget(1 << 30)
    _, steps, _ = _scan(reader, b, batch_bytes=one + 1, row_groups=[1, 2, 3, 4], router=PageRouter("disk"))
    assert steps == [(1, 2), (3, 4)]
    small = DeviceMemoryBudget(1_200_000)  # a quarter holds less than one row group: one each
    _, steps, _ = _scan(reader, small, batch_bytes=1 << 30, row_groups=[1, 2, 3], router=PageRouter("disk"))
    assert steps == [(1,), (2,), (3,)]
    assert small.used_bytes == 0


def test_early_stop_and_errors_return_every_reservation_and_pin(reader, fake_gpu, tmp_path):
    b = DeviceMemoryBudget(1 << 30)
    host = _tier()
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in range(1, 5))
    s = gpu_stream.PageStreamer(reader, COLUMNS, budget=b, host_cache=host, batch_bytes=one + 1,
                                row_groups=[1, 2, 3, 4], depth=1)
    rgs, batch = next(s.batches())
    assert rgs == (1, 2) and b.used_bytes > 0
    s.close()
    assert b.used_bytes == 0 and host.pinned_bytes() == 0 and host.held_bytes == host.used_bytes

    import shutil

    from hetdb.storage import TableReader

    copy = tmp_path / "v"
    shutil.copytree(reader.path, copy)
    damaged = TableReader(str(copy), reader.name, reader.version)
    loc = damaged.page_location("c_plain", 3)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + 10)
        byte = f.read(1)
        f.seek(loc.offset + 10)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CorruptDataError, match=r"column 'c_plain'.*page 3.*checksum"):
        with gpu_stream.PageStreamer(damaged, COLUMNS, budget=b, host_cache=host, batch_bytes=one + 1,
                                     row_groups=[1, 2, 3, 4]) as s:
            for _ in s.batches():
                pass
    assert b.used_bytes == 0 and host.pinned_bytes() == 0


@pytest.mark.parametrize("route", ["disk", "auto"])
def test_compressed_batches_keep_encoded_pages_one_batch_per_row_group(reader, fake_gpu, route):
    b = DeviceMemoryBudget(1 << 30)
    host = _tier() if route == "auto" else None
    for attempt in range(2 if host else 1):  # with a host tier: loaded into it, then copied out of it
        compared = encoded = 0
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                     host_cache=host, router=PageRouter(route), compressed=True) as s:
            steps = []
            for rgs, parts in s.deliveries():
                steps.append(rgs)
                assert len(parts) == len(rgs) and b.used_bytes > 0
                for rg, part in zip(rgs, parts):
                    want = reader.read_batch(COLUMNS, rg)
                    assert part.num_rows == reader.row_group_rows(rg)
                    for c in COLUMNS:
                        col = part[c]
                        # encoded: stays as stored (string pages in a string codec are decoded)
                        kept = reader.page_codec(c, rg) not in ("plain", "offsets", "lz4")
                        assert isinstance(col, EncodedColumn) == kept, (c, rg)
                        if kept:
                            assert col.device_page.codec == reader.page_codec(c, rg)
                            encoded += 1
                        assert col.to_arrow().equals(want[c].to_arrow()), (c, rg)
                        compared += part.num_rows
        assert steps == [(1, 2, 3, 4)] and s.route_counts().deliveries == 1
        assert compared == (ROWS - RPP) * len(COLUMNS) and encoded > 0
        assert b.used_bytes == 0 and s.stats.rows == ROWS - RPP
        pages = 4 * len(COLUMNS)
        want_route = "disk_direct" if host is None else "disk_to_host" if attempt == 0 else "host_to_gpu"
        assert s.route_counts().pages == {want_route: pages}
        if host is not None:
            assert host.pinned_bytes() == 0


def test_batches_hands_out_a_paged_delivery_row_group_by_row_group(reader, fake_gpu):
    b = DeviceMemoryBudget(1 << 30)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3],
                                 router=PageRouter("disk"), compressed=True) as s:
        steps = []
        for rgs, batch in s.batches():
            steps.append(rgs)
            assert batch.num_rows == reader.row_group_rows(rgs[0])
            assert batch["c_delta"].to_arrow().equals(reader.read_batch(["c_delta"], rgs[0])["c_delta"].to_arrow())
    assert steps == [(1,), (2,), (3,)] and s.route_counts().deliveries == 1 and b.used_bytes == 0


@pytest.mark.parametrize("compressed", [False, True])
def test_a_shared_scan_delivers_only_what_the_gpu_claims(reader, fake_gpu, compressed):
    """Co-processing: CPU workers steal row groups from the back of the scan (before and while it
    streams); the streamer delivers the rest, each once, and stops where they began."""
    import threading

    from hetdb.cache.coscan import SharedScan

    rgs = [0, 1, 2, 3, 4]
    b = DeviceMemoryBudget(1 << 30)
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in rgs)
    for early in (0, 2):
        shared = SharedScan(rgs, [1] * len(rgs), len(COLUMNS), PageRouter("auto"), "on")
        stolen = [shared.steal() for _ in range(early)]
        delivered: list[int] = []
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=one + 1, row_groups=rgs, depth=1,
                                     router=PageRouter("disk"), compressed=compressed, shared=shared) as s:
            it = s.deliveries()
            first = next(it)
            # a CPU worker steals everything it can while the GPU works on its first delivery
            t = threading.Thread(target=stolen.extend, args=(iter(shared.steal, None),))
            t.start()
            t.join()
            for got, parts in [first, *it]:
                delivered.extend(got)
                for rg, part in zip(got, parts if len(parts) == len(got) else [None]):
                    if part is not None:
                        assert part.num_rows == reader.row_group_rows(rg)
        assert sorted(delivered + stolen) == rgs and not set(delivered) & set(stolen)
        assert delivered == rgs[:len(delivered)] and len(delivered) >= 1
        assert shared.gpu_taken == delivered and b.used_bytes == 0


class _Keeps(_Verdicts):
    """A device cache that admits some pages and keeps what is put (pinned until unpinned)."""

    def __init__(self, admit: set[tuple[str, int]]) -> None:
        super().__init__(set())
        self.admit_pages, self.entries, self.pins = admit, {}, {}

    def reserve(self, nbytes, key=None, link_bytes=None, first_reuse=None, headroom=0) -> bool:
        if key is None:
            return False
        self.asked.append((key.column, key.row_group))
        return (key.column, key.row_group) in self.admit_pages

    def put(self, key, value, nbytes, pin=False, reserved=False, link_bytes=None, first_reuse=None) -> bool:
        assert reserved and pin and key not in self.entries
        self.entries[key] = value
        self.pins[key] = self.pins.get(key, 0) + 1
        return True

    def unpin(self, key) -> None:
        self.pins[key] -= 1


def test_a_paged_delivery_keeps_copies_of_admitted_pages(reader, fake_gpu):
    admit = {("c_delta", 2), ("s_dict", 3), ("c_nulls", 2)}
    cache = _Keeps(admit)
    b = DeviceMemoryBudget(1 << 30)
    compared = 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 cache=cache, router=PageRouter("auto"), compressed=True) as s:
        steps = []
        for rgs, parts in s.deliveries():
            steps.append(rgs)
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                for c in COLUMNS:
                    assert part[c].to_arrow().equals(want[c].to_arrow()), (c, rg)
                    compared += 1
    # the admitted pages rode along in the one delivery; the cache holds copies, equal to the pages
    assert steps == [(1, 2, 3, 4)] and compared == 4 * len(COLUMNS)
    assert {(k.column, k.row_group) for k in cache.entries} == admit
    for key, value in cache.entries.items():
        assert value.to_arrow().equals(reader.read_batch([key.column], key.row_group)[key.column].to_arrow())
        page = getattr(value, "device_page", None)
        own = [page.data if page is not None else value.data, value.validity, value.offsets, value.chars]
        assert all(a is None or a.base is None for a in own)  # copies, not views of the delivery's buffer
    assert all(n == 0 for n in cache.pins.values())  # unpinned once the step was done
    assert b.used_bytes == 0


class _Holds(_Keeps):
    """``_Keeps`` that also holds some pages already (device-cache hits, pinned by ``get``)."""

    def __init__(self, held: dict) -> None:
        super().__init__(set())
        self.held = held

    def get(self, key, pin=False):
        value = self.held.get((key.column, key.row_group))
        if value is not None and pin:
            self.pins[key] = self.pins.get(key, 0) + 1
        return value


def test_a_paged_delivery_takes_cached_pages_as_they_are(reader, fake_gpu):
    held = {("c_f64", 3): reader.read_batch(["c_f64"], 3)["c_f64"],
            ("s_plain", 2): reader.read_batch(["s_plain"], 2)["s_plain"]}
    cache = _Holds(held)
    b = DeviceMemoryBudget(1 << 30)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 cache=cache, router=PageRouter("auto"), compressed=True) as s:
        steps = []
        for rgs, parts in s.deliveries():
            steps.append(rgs)
            for rg, part in zip(rgs, parts):
                want = reader.read_batch(COLUMNS, rg)
                for c in COLUMNS:
                    if (c, rg) in held:
                        assert part[c] is held[(c, rg)]  # the cached Column itself: nothing moved
                    assert part[c].to_arrow().equals(want[c].to_arrow()), (c, rg)
    assert steps == [(1, 2, 3, 4)]
    routes = s.route_counts()
    assert routes.pages["gpu_resident"] == 2 and routes.pages["disk_direct"] == 4 * len(COLUMNS) - 2
    assert s.stats.pages_cached == 2 and s.stats.pages_read == 4 * len(COLUMNS) - 2
    assert all(n == 0 for n in cache.pins.values()) and len(cache.pins) == 2
    assert b.used_bytes == 0


@pytest.mark.parametrize("compressed", [False, True])
def test_a_budget_for_one_delivery_at_a_time_single_buffers(reader, fake_gpu, compressed):
    """A budget that holds one delivery but not two: the step the consumer finished with is given
    back before the next one is reserved (single-buffered), instead of OutOfMemoryError."""
    from hetdb.errors import OutOfMemoryError

    rgs = [1, 2, 3]
    probe = DeviceMemoryBudget(1 << 30)
    sizes = []
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=probe, batch_bytes=1, row_groups=rgs,
                                 router=PageRouter("disk"), compressed=compressed) as s:
        for _ in s.deliveries():
            sizes.append(probe.used_bytes)
    tight = DeviceMemoryBudget(max(sizes) + min(sizes) // 2)  # room for one delivery, not two
    compared = 0
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=tight, batch_bytes=1, row_groups=rgs,
                                 router=PageRouter("disk"), compressed=compressed) as s:
        for got, parts in s.deliveries():
            assert tight.used_bytes <= tight.limit_bytes
            for rg, part in zip(got, parts):
                assert part["c_delta"].to_arrow().equals(reader.read_batch(["c_delta"], rg)["c_delta"].to_arrow())
                compared += 1
    assert compared == len(rgs) and tight.used_bytes == 0
    with pytest.raises(OutOfMemoryError):  # less than one delivery: still refused, with the reason
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(min(sizes) // 2), batch_bytes=1,
                                     row_groups=rgs, router=PageRouter("disk"), compressed=compressed) as s:
            for _ in s.deliveries():
                pass


def test_a_batch_of_string_codec_pages_alone(reader, fake_gpu):
    """Only string-codec columns: the delivery plan is empty, the batch still spans its row groups."""
    assert {reader.page_codec("s_plain", rg) for rg in range(1, 5)} <= {"offsets", "lz4"}
    b = DeviceMemoryBudget(1 << 30)
    steps = []
    with gpu_stream.PageStreamer(reader, ["s_plain"], budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                 router=PageRouter("disk")) as s:
        for rgs, batch in s.batches():
            steps.append(rgs)
            want = pa.concat_arrays([reader.read("s_plain", rg).to_arrow() for rg in rgs])
            assert batch.num_rows == len(want) and batch["s_plain"].to_arrow().equals(want)
    assert steps == [(1, 2, 3, 4)] and s.stats.rows == ROWS - RPP and b.used_bytes == 0


def test_overlapped_deliveries_start_small_and_equal_the_reader(reader, fake_gpu):
    # gpu_delivery_overlap: the first deliveries aim at 1/8, 1/4, 1/2 of the batch size (the decode
    # launches' stream is the GPU's business: here the rows must be the same, in order)
    b = DeviceMemoryBudget(1 << 30)
    rgs = [1, 2, 3, 4] * 4
    link = sum(reader.page_location(c, rg).length for c in COLUMNS for rg in [1, 2, 3, 4])
    s, steps, compared = _scan(reader, b, batch_bytes=link, row_groups=rgs, router=PageRouter("disk"),
                               overlap=True)
    assert [r for step in steps for r in step] == rgs and compared == 4 * (ROWS - RPP) * len(COLUMNS)
    assert len(steps[0]) < len(steps[2]) and b.used_bytes == 0
    _, plain, _ = _scan(reader, b, batch_bytes=link, row_groups=rgs, router=PageRouter("disk"))
    assert len(plain) < len(steps)


@pytest.mark.parametrize("compressed", [True, False], ids=["others-as-stored", "others-decoded"])
def test_zero_copy_columns_stay_in_the_host_tier_and_read_the_same(reader, fake_gpu, monkeypatch, compressed):
    # gpu_zero_copy: a paged delivery leaves random-access pages of the chosen columns in the pinned
    # host tier; the consumer gets encoded columns over those very bytes (here decoded by the CPU
    # codec), pinned until the step after the one that read them, and nothing of them is copied
    from hetdb.backend.gpu.stream_pages import RANDOM_ACCESS_CODECS

    monkeypatch.setattr(gpu_memory, "host_view", lambda address, nbytes, owner:
                        np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address)))
    rgs = [1, 2, 3, 4]
    chosen = [c for c in COLUMNS if all(reader.page_codec(c, rg) in RANDOM_ACCESS_CODECS
                                        and "validity" not in reader.page_sections(c, rg) for rg in rgs)]
    assert chosen  # the fixture has such columns
    b = DeviceMemoryBudget(1 << 30)
    host = _tier()
    _scan(reader, b, batch_bytes=1 << 30, row_groups=rgs, host_cache=host, compressed=True)  # loads the tier
    s, steps, compared = _scan(reader, b, batch_bytes=1 << 30, row_groups=rgs, host_cache=host,
                               compressed=compressed, router=PageRouter("copy"),
                               zero_copy=frozenset(chosen + ["c_rle"]))
    # one Batch per row group either way (the consumer's kernel reads them through one page table)
    assert steps == [(rg,) for rg in rgs] and compared == (ROWS - RPP) * len(COLUMNS)
    routes = s.route_counts()
    # c_rle's rle pages are not random-access: copied (a page of it in another codec is not)
    left = {(c, rg) for c in chosen + ["c_rle"] for rg in rgs if reader.page_codec(c, rg) in RANDOM_ACCESS_CODECS
            and "validity" not in reader.page_sections(c, rg)}
    assert len(left) > len(chosen) * len(rgs) - 1 and routes.pages["host_zero_copy"] == len(left)
    moved = sum(reader.page_location(c, rg).length for c in COLUMNS for rg in rgs if (c, rg) not in left)
    assert s.stats.bytes_host == moved and routes.bytes["host_zero_copy"] == sum(
        reader.page_location(c, rg).length for c, rg in left)
    assert b.used_bytes == 0 and host.pinned_bytes() == 0


def test_a_batch_step_reads_in_place_columns_from_the_tier_it_pinned(reader, fake_gpu, monkeypatch):
    from hetdb.backend.gpu.stream_pages import RANDOM_ACCESS_CODECS
    from hetdb.cache.pages import page_info

    monkeypatch.setattr(gpu_memory, "host_view", lambda address, nbytes, owner:
                        np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address)))
    col = next(c for c in COLUMNS if all(reader.page_codec(c, rg) in RANDOM_ACCESS_CODECS
                                         and "validity" not in reader.page_sections(c, rg) for rg in range(5)))
    host = _tier()
    b = DeviceMemoryBudget(1 << 30)
    _scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2], host_cache=host, compressed=True)
    with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, host_cache=host, batch_bytes=1 << 30, row_groups=[1, 2],
                                 compressed=True, router=PageRouter("copy"), zero_copy=frozenset([col])) as s:
        rgs, batch = next(s.batches())
        page = batch[col].device_page
        entry = host.lookup(page_info(reader, col, rgs[0], True).host_key)
        assert entry is not None and entry.pins >= 1  # pinned while the step may read it
        assert page.data.ctypes.data == entry.runs[0].ctypes.data + reader.page_sections(col, rgs[0])["data"][0]
    assert host.pinned_bytes() == 0


def test_overlapped_scans_stopped_early_or_under_a_tight_budget_return_everything(reader, fake_gpu):
    # with overlap the next delivery is made before the consumer gets this one (when the budget has
    # room for three); an early stop then holds two, and a budget of one delivery still streams
    host = _tier()
    one = max(sum(reader.page_location(c, rg).length for c in COLUMNS) for rg in range(1, 5))
    b = DeviceMemoryBudget(1 << 30)
    s = gpu_stream.PageStreamer(reader, COLUMNS, budget=b, host_cache=host, batch_bytes=one + 1,
                                row_groups=[1, 2, 3, 4] * 2, overlap=True)
    it = s.batches()
    next(it)
    assert s.routes.deliveries == 2 and b.used_bytes > 0  # one ahead
    s.close()
    assert b.used_bytes == 0 and host.pinned_bytes() == 0
    most = 0
    for rg in [1, 2, 3, 4]:
        probe = DeviceMemoryBudget(1 << 30)
        _scan(reader, probe, batch_bytes=1, row_groups=[rg], router=PageRouter("disk"))
        most = max(most, probe.peak_bytes)
    tight = DeviceMemoryBudget(most + 1)  # room for one delivery at a time: none ahead
    _, steps, compared = _scan(reader, tight, batch_bytes=1, row_groups=[1, 2, 3, 4], router=PageRouter("disk"),
                               overlap=True)
    assert steps == [(1,), (2,), (3,), (4,)] and compared == (ROWS - RPP) * len(COLUMNS)
    assert tight.used_bytes == 0


def test_a_scan_under_a_tight_budget_admits_what_its_deliveries_leave_free(reader, fake_gpu):
    """Paged deliveries (pages kept as stored, as under a tight budget by default). A streaming scan asks the device cache to keep free what its deliveries hold at most at once:
    the consumer's and the one being made next to it (scheduled groups hold host memory only), not
    one per scheduled group too. With deliveries of a quarter of the budget each, that left nothing
    to admit (every hot run copied every page again); now the later scans find every page cached."""
    from hetdb.cache import DevicePageCache

    compressed = True

    with gpu_stream.PageStreamer(reader, COLUMNS, budget=DeviceMemoryBudget(1 << 30), batch_bytes=1 << 30,
                                 compressed=compressed) as probe:
        whole = sum(b[1] for b in (probe._rg_bounds(rg) for rg in probe.row_groups))
    limit = 2 * whole  # deliveries of at most a quarter of it: about half the scan each
    budget = DeviceMemoryBudget(limit)
    cache = DevicePageCache(budget, share=0.5)
    hits = []
    for _ in range(3):
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=budget, batch_bytes=1 << 30, cache=cache,
                                     router=PageRouter("auto"), compressed=compressed, overlap=True) as s:
            for rgs, parts in s.deliveries():
                for rg, part in zip(rgs, parts if len(parts) == len(rgs) else [None] * len(rgs)):
                    if part is not None:
                        want = reader.read_batch(COLUMNS, rg)
                        assert all(part[c].to_arrow().equals(want[c].to_arrow()) for c in COLUMNS), rg
            groups = len(s._plan_groups())
            assert groups >= 2 and s._group_need <= limit // 4 + max(b[1] for b in map(s._rg_bounds, s.row_groups))
            assert s._ring_need == 2 * s._group_need  # (a cache in play: no delivery made ahead)
        hits.append((s.stats.pages_cached, s.stats.pages_read))
        assert budget.used_bytes == cache.used_bytes > 0
    # the scan's pages fit in the cache beside two deliveries: the first scan admits every one and
    # the next ones copy nothing (with room kept for four deliveries, 13 of the 40 pages were copied
    # again on every scan)
    pages = reader.num_row_groups * len(COLUMNS)
    assert hits == [(0, pages), (pages, 0), (pages, 0)]
