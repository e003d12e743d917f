"""EncodedColumn / DevicePage bookkeeping without a GPU (host arrays stand in for device arrays): lazy
decoding per delivered object (never in the cached one), length, slicing to plain columns, the
device bytes a compressed cache entry accounts, and which pages stay compressed."""

from __future__ import annotations

import dataclasses

import numpy as np

from hetdb import types as T
from hetdb.backend.gpu.encoded import DevicePage, EncodedColumn, page_codec_of
from hetdb.backend.gpu.stream import _column_nbytes, _delivered, device_page_bytes, keeps_compressed
from hetdb.codec.encodings import decode, encode_as
from hetdb.column import Column
from hetdb.storage.format import PageLocation


class HostPage(DevicePage):
    """A DevicePage decoded with the CPU decoder (counts its decodes)."""

    decodes = 0

    def decode(self):
        HostPage.decodes += 1
        return decode(self.data, self.codec, self.n, self.dtype)


def test_decoding_happens_per_delivered_object_only():
    values = np.arange(3000, dtype=np.int64) * 3 - 7
    page = HostPage(encode_as(values, "for"), "for", 3000, np.dtype(np.int64))
    cached = EncodedColumn(T.INT64, validity=np.ones(3000, bool), device_page=page)
    assert len(cached) == 3000 and page_codec_of(cached) == "for" and page_codec_of(Column(T.INT64)) == "plain"
    HostPage.decodes = 0
    one = _delivered(cached)
    assert one is not cached and one.device_page is page and one.validity is cached.validity
    assert np.array_equal(one.data, values) and np.array_equal(one.data, values)
    assert HostPage.decodes == 1  # memoised on the delivered object
    assert cached._decoded is None  # ... never on the cache entry
    assert _column_nbytes(cached) == page.nbytes + 3000  # stored bytes + unpacked validity, nothing decoded
    assert HostPage.decodes == 1
    sliced = dataclasses.replace(one, data=one.data[10:20], validity=None)
    assert sliced.device_page is None and page_codec_of(sliced) == "plain" and len(sliced) == 10
    assert _delivered(Column(T.INT64, data=values)).data is values


def test_which_pages_stay_compressed_and_what_they_cost():
    loc = PageLocation("c0000.col", 0, 5000, 8192, 0)
    fixed = {"data": [0, 4000], "validity": [4000, 125]}
    assert keeps_compressed("for", fixed) and keeps_compressed("rle", {"data": [0, 10]})
    assert not keeps_compressed("plain", fixed)
    assert not keeps_compressed("for", {"data": [0, 0], "offsets": [0, 8], "chars": [8, 1]})

    class Reader:
        def column(self, name):
            return type("C", (), {"dtype": T.INT64})()

    r = Reader()
    assert device_page_bytes(r, "c", 0, loc, fixed, 1000, "for", compressed=True) == 5000 + 1000
    assert device_page_bytes(r, "c", 0, loc, fixed, 1000, "for", compressed=False) == 8 * 1000 + 1000
    assert device_page_bytes(r, "c", 0, loc, fixed, 1000, "plain", compressed=True) == 5000 + 1000


def test_option_is_set_at_connect_and_by_sql():
    import hetdb

    with hetdb.connect(":memory:", device="cpu", gpu_compressed_cache=True) as con:
        assert con.options.gpu_compressed_cache is True
        con.sql("SET gpu_compressed_cache = false")
        assert con.options.gpu_compressed_cache is False
        con.sql("RESET gpu_compressed_cache")
        assert con.options.gpu_compressed_cache is True
    with hetdb.connect(":memory:", device="cpu") as con:
        # "auto" by default: on only when the decoded pages would not fit in the device cache
        assert con.options.gpu_compressed_cache == "auto"
        con.sql("SET gpu_compressed_cache = true")
        assert con.options.gpu_compressed_cache is True
        con.sql("SET gpu_compressed_cache = 'auto'")
        assert con.options.gpu_compressed_cache == "auto"


def test_auto_keeps_pages_compressed_only_when_the_decoded_database_does_not_fit(tmp_path):
    import types

    import numpy as np
    import pyarrow as pa

    import hetdb
    from hetdb.exec.device import DeviceResources

    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con:
        con.register("t", pa.table({"a": np.arange(100_000, dtype=np.int64), "b": np.zeros(100_000, np.int32)}))
        con.sql("CREATE TABLE t2 AS SELECT * FROM t")
        db = con._get_engine().db
        decoded = 100_000 * (8 + 4)

        def resources(capacity: int, kept: int = 0):
            cache = types.SimpleNamespace(capacity_bytes=capacity, kept_bytes=lambda: kept)
            return types.SimpleNamespace(cache=cache, _decoded_db_bytes=None)

        def keep(res, option="auto"):
            return DeviceResources.keep_compressed(res, option, db)

        assert keep(resources(decoded * 4)) is False           # fits decoded: scan decoded pages
        assert keep(resources(decoded // 2)) is True           # does not fit: keep them compressed
        assert keep(resources(decoded * 4, kept=decoded * 4)) is True  # kept entries take the room
        assert keep(resources(decoded // 2), option=False) is False    # set: as set
        assert keep(resources(decoded * 4), option=True) is True
