"""Per-page scan metadata computed once per table version (cache/pages.py), and the GPU streamer's
scheduling that reads it (its CPU part: routing, ring slots, O_DIRECT reads and checksums)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hetdb.backend.gpu import memory as gpu_memory
from hetdb.backend.gpu.stream import PageStreamer, device_page_bytes, page_codec, page_layout
from hetdb.cache.base import PageKey
from hetdb.cache.pages import column_device_bytes, page_info, row_group_padded_bytes
from hetdb.cache.router import PageRouter, Route


def _reader(con):
    return con._get_engine().db.table("t")


@pytest.fixture()
def con(paged_con):
    return paged_con


@pytest.mark.parametrize("compressed", [False, True])
def test_page_info_is_what_the_reader_says(con, compressed):
    r = _reader(con)
    for column in ("a", "b", "s"):
        for rg in range(r.num_row_groups):
            info = page_info(r, column, rg, compressed)
            enc, sections = page_layout(r, column, rg)
            loc = r.page_location(column, rg)
            n = r.row_group_rows(rg)
            codec = page_codec(r, column, rg)
            assert info.key == PageKey("t", r.version, column, rg)
            assert info.host_key == PageKey(r.path, r.version, column, rg)
            assert (info.location, info.encoding, info.sections, info.num_rows, info.codec) == (
                loc, enc, sections, n, codec)
            assert info.device_bytes == device_page_bytes(r, column, rg, loc, sections, n, codec, compressed)
            assert page_info(r, column, rg, compressed) is info  # computed once
        # the bound fill_cache uses: the column's pages and dictionary, plus unpacked validity
        validity = r.num_rows if r.column(column).nullable else 0
        assert column_device_bytes(r, column, compressed) + validity >= sum(
            page_info(r, column, rg, compressed).device_bytes for rg in range(r.num_row_groups))


def test_a_new_table_version_gets_its_own_page_info(con):
    r1 = _reader(con)
    before = page_info(r1, "a", 0)
    con.execute("INSERT INTO t VALUES (1, 2.0, 'x')")
    r2 = _reader(con)
    assert r2 is not r1 and r2.version != r1.version
    after = page_info(r2, "a", 0)
    assert after.key.version == r2.version and before.key.version == r1.version
    assert row_group_padded_bytes(r2, ("a", "b"), 0) == sum(
        r2.page_location(c, 0).padded_length for c in ("a", "b"))


def test_streamer_schedules_pages_from_the_page_info(con, monkeypatch):
    """PageStreamer._schedule without a GPU: every page routed to the ring (route 'disk'), read with
    O_DIRECT into a slot sized for the largest row group, checksums verified."""
    monkeypatch.setattr(gpu_memory, "pinned_empty", lambda shape, dtype=np.uint8: np.empty(shape, dtype))
    r = _reader(con)
    s = object.__new__(PageStreamer)  # the CuPy parts of __init__ are not needed to schedule
    s.reader, s.columns, s.row_groups = r, ["a", "b", "s"], list(range(r.num_row_groups))
    s.router, s.compressed, s.depth, s.direct = PageRouter("disk", gpu=True), False, 2, True
    s.cache = s.host_cache = s._device_tier = None
    s._slots, s._slot_events, s._slot_bytes = [None, None], [None, None], None
    s._to_read = []  # (pages routed whose reads start with their group's: stream_io.submit_reads)
    s._readers = ThreadPoolExecutor(2)  # (the I/O threads: PageStreamer._pool)
    try:
        for i in range(len(s.row_groups)):
            rg = s._schedule(i)
            assert [p.key for p in rg.pages] == [page_info(r, c, i).key for c in s.columns]
            for p in rg.pages:
                assert p.route is Route.DISK_DIRECT and p.host_key == page_info(r, p.column, i).host_key
                got = p.future.result()  # raises CorruptDataError on a checksum mismatch
                assert got.shape[0] == p.location.padded_length
        assert s._slot_bytes == max(row_group_padded_bytes(r, ("a", "b", "s"), g) for g in s.row_groups)
    finally:
        s._pool.shutdown()
