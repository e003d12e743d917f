"""The streamer's batched iteration (backend/gpu/stream_batch.py) without a GPU: CuPy's streams and
events are stand-ins, the pinned memory is plain memory, and ``run_delivery`` carries each plan out
with NumPy (tests/backend/batch_host.py) straight from the host addresses the streamer hands it. What
runs for real: grouping, routing, ring-slot layout, O_DIRECT reads with CRC checks, the host tier,
budget reservations and releases, pins, early stops. Every batch must equal the host reader's row
groups concatenated; the kernels themselves are checked on the GPU (test_gpu_stream_batch.py)."""

from __future__ import annotations

import pytest
from stream_batch_host import (
    COLUMNS,
    ROWS,
    RPP,
    Verdicts,
    every_codec_table,
    host_tier,
    install_fake_gpu,
    scan,
    wanted,
)

from hetdb.backend.gpu import stream as gpu_stream
from hetdb.backend.gpu.encoded import EncodedColumn
from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache.router import PageRouter
from hetdb.errors import CorruptDataError


@pytest.fixture()
def fake_gpu(monkeypatch):
    install_fake_gpu(monkeypatch)


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    return every_codec_table(tmp_path_factory)


def test_fixture_pages(reader):
    # row group 0's s_plain page is dictionary-encoded (a first page always is), the others plain
    assert [reader.page_encoding("s_plain", rg) for rg in range(5)] == ["dict"] + ["plain"] * 4
    assert {reader.page_codec(c, rg) for c in COLUMNS for rg in range(5)} >= {"rle", "delta", "for", "plain"}


@pytest.mark.parametrize("route", ["disk", "auto"])
def test_batches_from_the_ring_and_the_host_tier_equal_the_reader(reader, fake_gpu, route):
    b = DeviceMemoryBudget(1 << 30)
    host = host_tier() if route == "auto" else None
    for attempt in range(2 if host else 1):  # with a host tier: loaded into it, then copied out of it
        s, steps, compared = scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4], host_cache=host,
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
    s, steps, compared = scan(reader, b, batch_bytes=1 << 30, router=PageRouter("disk"))
    # row group 0's s_plain page is dictionary-encoded, the others plain: two runs in one group
    assert steps == [(0,), (1, 2, 3, 4)] and compared == ROWS * len(COLUMNS)
    assert s.route_counts().deliveries == 2 and b.used_bytes == 0


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
    cache = Verdicts({2})
    b = DeviceMemoryBudget(1 << 30)
    s, steps, compared = scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4], cache=cache,
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
    _, steps, _ = scan(reader, b, batch_bytes=one + 1, row_groups=[1, 2, 3, 4], router=PageRouter("disk"))
    assert steps == [(1, 2), (3, 4)]
    small = DeviceMemoryBudget(1_200_000)  # a quarter holds less than one row group: one each
    _, steps, _ = scan(reader, small, batch_bytes=1 << 30, row_groups=[1, 2, 3], router=PageRouter("disk"))
    assert steps == [(1,), (2,), (3,)]
    assert small.used_bytes == 0


def test_early_stop_and_errors_return_every_reservation_and_pin(reader, fake_gpu, tmp_path):
    b = DeviceMemoryBudget(1 << 30)
    host = host_tier()
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
    host = host_tier() if route == "auto" else None
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


@pytest.mark.parametrize("paged_decoded", [False, True])
def test_a_compressed_scan_past_the_cache_with_every_column_decoded_is_one_batch(reader, fake_gpu, monkeypatch,
                                                                                  paged_decoded):
    """gpu_compressed_cache with every column kept decoded (exec/device_placement.py) and no device cache
    in the route (a first scan passing through): no page stays encoded, so a delivery is one Batch of
    decoded columns, as an uncompressed scan's (stream_batch.PAGED_DECODED off); with a column kept
    encoded, or PAGED_DECODED on, one Batch per row group."""
    from hetdb.backend.gpu import stream_batch

    monkeypatch.setattr(stream_batch, "PAGED_DECODED", paged_decoded)
    b = DeviceMemoryBudget(1 << 30)
    for decoded in (frozenset(COLUMNS), frozenset(COLUMNS[1:])):
        whole = not paged_decoded and decoded == frozenset(COLUMNS)
        with gpu_stream.PageStreamer(reader, COLUMNS, budget=b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4],
                                     router=PageRouter("disk"), compressed=True, decoded=decoded) as s:
            assert s.paged is not whole
            steps = []
            for rgs, parts in s.deliveries():
                steps.append(rgs)
                assert len(parts) == (1 if whole else len(rgs))
                spans = [rgs] if whole else [(rg,) for rg in rgs]
                for span, part in zip(spans, parts):
                    want = wanted(reader, span)
                    for c in COLUMNS:
                        col = part[c]
                        assert isinstance(col, EncodedColumn) == (c not in decoded and reader.page_codec(c, span[0])
                                                                  not in ("plain", "offsets", "lz4")), (c, span)
                        assert col.to_arrow().equals(want[c]), (c, span)
        assert steps == [(1, 2, 3, 4)] and b.used_bytes == 0


@pytest.mark.parametrize("lazy", [True, False])
def test_a_warm_paged_delivery_of_fixed_width_pages_makes_its_columns_only_when_asked(reader, fake_gpu, monkeypatch,
                                                                                      lazy):
    """A paged delivery in the warm steady state (every page a host-tier hit: a scan past the device
    cache, route 'copy' as a first scan passing through) of fixed-width pages
    without NULLs is a PagedParts (stream_batch.LAZY_PAGED): its layout gives every page's address in
    the buffer (the values or the encoded section) and codec, equal to where the Columns made when
    asked lie; the Batches equal the reader's row groups. Strings, NULLs, or LAZY_PAGED off: the
    Columns come with the delivery."""
    import numpy as np

    from hetdb.backend.gpu import stream_batch
    from hetdb.backend.gpu.paged_parts import PagedParts
    from hetdb.codec.encodings import CODEC_IDS

    monkeypatch.setattr(stream_batch, "LAZY_PAGED", lazy)
    fixed = ["c_rle", "c_delta", "c_plain", "c_flag", "c_f64"]
    b = DeviceMemoryBudget(1 << 30)
    host = host_tier()
    for attempt, columns in enumerate((fixed, fixed, fixed + ["c_nulls"])):
        with gpu_stream.PageStreamer(reader, columns, budget=b, batch_bytes=1 << 30, row_groups=[0, 1, 2, 3, 4],
                                     host_cache=host, router=PageRouter("copy"), compressed=True) as s:
            for rgs, parts in s.deliveries():
                lazy_now = lazy and attempt == 1  # (the first scan loads the tier: not the warm state)
                assert isinstance(parts, PagedParts) == lazy_now and len(parts) == len(rgs) == 5
                if lazy_now:
                    layout = parts.layout
                    assert list(layout.rows) == [reader.row_group_rows(rg) for rg in rgs]
                    assert parts.num_rows == ROWS and parts._made is None
                for r, (rg, part) in enumerate(zip(rgs, parts)):
                    want = reader.read_batch(columns, rg)
                    for c, name in enumerate(columns):
                        col = part[name]
                        assert col.to_arrow().equals(want[name].to_arrow()), (name, rg)
                        if not lazy_now:
                            continue
                        page = getattr(col, "device_page", None)
                        arr = page.data if page is not None else col.data
                        assert parts.base + int(layout.offsets[c, r]) == arr.ctypes.data, (name, rg)
                        assert int(layout.codec_ids[c, r]) == (CODEC_IDS[page.codec] if page is not None else 0)
                        assert layout.dtypes[c] == np.dtype(arr.dtype if page is None else page.dtype)
                if lazy_now:
                    keyed = parts.keyed([(7, "c_delta"), (3, "c_rle")])
                    assert keyed.index == {7: 1, 3: 0} and keyed.layout is parts.layout
                    assert [list(x.columns) for x in keyed] == [[7, 3]] * 5
    assert b.used_bytes == 0 and host.pinned_bytes() == 0


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


@pytest.mark.parametrize("route", ["disk", "auto"])
@pytest.mark.parametrize("span_bytes", [None, 0])
def test_a_columns_adjacent_pages_are_read_as_one_span(reader, fake_gpu, monkeypatch, route, span_bytes):
    from hetdb.io import spans

    if span_bytes is not None:
        monkeypatch.setattr(spans, "MAX_SPAN_BYTES", span_bytes)
    tasks = []
    real = gpu_stream.PageStreamer._read_span

    def read_span(self, items, wait_for):
        tasks.append([(p.column, p.row_group) for p, _, _ in items])
        return real(self, items, wait_for)

    monkeypatch.setattr(gpu_stream.PageStreamer, "_read_span", read_span)
    b = DeviceMemoryBudget(1 << 30)
    host = host_tier() if route == "auto" else None
    s, steps, compared = scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4], host_cache=host,
                              router=PageRouter(route))
    assert steps == [(1, 2, 3, 4)] and compared == (ROWS - RPP) * len(COLUMNS)
    assert sorted(p for t in tasks for p in t) == sorted((c, rg) for c in COLUMNS for rg in (1, 2, 3, 4))
    if span_bytes == 0:  # page by page
        assert len(tasks) == 4 * len(COLUMNS)
    else:  # one group: a column's four pages lie back to back in its file, one read each
        assert sorted(tasks) == sorted([(c, rg) for rg in (1, 2, 3, 4)] for c in COLUMNS)
    assert b.used_bytes == 0 and (host is None or host.pinned_bytes() == 0)


@pytest.mark.parametrize("route", ["disk", "auto"])
def test_crc_checks_apart_from_the_reads_still_fail_the_damaged_page(reader, fake_gpu, monkeypatch, tmp_path, route):
    import shutil

    from hetdb.backend.gpu import stream_io
    from hetdb.storage import TableReader

    monkeypatch.setattr(stream_io, "CHECK_APART", True)
    b = DeviceMemoryBudget(1 << 30)
    host = host_tier() if route == "auto" else None
    s, steps, compared = scan(reader, b, batch_bytes=1 << 30, row_groups=[1, 2, 3, 4], host_cache=host,
                              router=PageRouter(route))
    assert compared == (ROWS - RPP) * len(COLUMNS) and b.used_bytes == 0
    copy = tmp_path / "v"
    shutil.copytree(reader.path, copy)
    damaged = TableReader(str(copy), reader.name, reader.version)
    loc = damaged.page_location("c_delta", 2)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + 3)
        byte = f.read(1)
        f.seek(loc.offset + 3)
        f.write(bytes([byte[0] ^ 0xFF]))
    host = host_tier() if route == "auto" else None
    with pytest.raises(CorruptDataError, match=r"column 'c_delta'.*page 2.*checksum"):
        with gpu_stream.PageStreamer(damaged, COLUMNS, budget=b, host_cache=host, batch_bytes=1 << 30,
                                     row_groups=[1, 2, 3, 4], router=PageRouter(route)) as s:
            for _ in s.batches():
                pass
    assert b.used_bytes == 0 and (host is None or host.pinned_bytes() == 0)
