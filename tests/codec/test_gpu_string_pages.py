"""Plain-string pages in codecs "lz4" and "offsets" on the GPU (backend/gpu/strings_codec.py): the
page streamer's device Columns equal the host reader's, with nvCOMP's batched LZ4 decompressor and
with the host fallback (``HETDB_NVCOMP=0``, named by EXPLAIN ANALYZE); GPU queries over such
columns equal the CPU's; a damaged chunk directory is CorruptDataError on the device too."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.backend.gpu import gpu_available
from hetdb.errors import CorruptDataError
from hetdb.storage import ColumnSpec, Database
from hetdb.storage.format import MANIFEST, checksum, decode_manifest, encode_manifest

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

ROWS = 50000
ROWS_PER_PAGE = 20000
WORDS = ["final", "ironic", "deposits", "sleep", "carefully", "packages", "ß€"]


def _table() -> pa.Table:
    rng = np.random.default_rng(9)
    comment = [None if i % 11 == 5 else " ".join(rng.choice(WORDS, int(rng.integers(0, 12)))) + f" {i}"
               for i in range(ROWS)]
    return pa.table({"comment": comment, "hex": [f"{x:016x}" for x in rng.integers(0, 2 ** 62, ROWS)],
                     "k": np.arange(ROWS, dtype=np.int64)})


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("gpu-strings") / "db")
    db = Database.open(path, create=True)
    schema = [ColumnSpec("comment", T.STRING), ColumnSpec("hex", T.STRING), ColumnSpec("k", T.INT64)]
    with db.create_table("t", schema, rows_per_page=ROWS_PER_PAGE) as w:
        w.append_arrow(_table())
    r = db.table("t")
    # page 0 may be dictionary-coded; the later ones are plain strings in the string codecs
    assert [r.page_codec("comment", rg) for rg in (1, 2)] == ["lz4", "lz4"]
    assert [r.page_codec("hex", rg) for rg in (1, 2)] == ["offsets", "offsets"]
    return path


def _host(a):
    import cupy

    return None if a is None else cupy.asnumpy(a)


def _stream_and_compare(reader, **kw) -> int:
    from hetdb.backend.gpu.memory import DeviceMemoryBudget
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.column import Column

    compared = 0
    with PageStreamer(reader, ["comment", "hex"], budget=DeviceMemoryBudget(1 << 30), **kw) as s:
        for rows, batch in s.batches():
            want = {c: pa.concat_arrays([reader.read(c, rg).to_arrow() for rg in rows]) for c in ("comment", "hex")}
            for c in ("comment", "hex"):
                col = batch[c]
                host = Column(col.dtype, data=_host(col.data), validity=_host(col.validity), offsets=_host(col.offsets),
                              chars=_host(col.chars),
                              dictionary=None if col.dictionary is None else Column(
                                  col.dictionary.dtype, offsets=_host(col.dictionary.offsets),
                                  chars=_host(col.dictionary.chars)))
                assert host.to_arrow().equals(want[c]), (c, rows)
                compared += len(want[c])
    return compared


@pytest.mark.parametrize("nvcomp", ["on", "off"])
@pytest.mark.parametrize("batch_bytes", [0, 64 << 20])
def test_streamed_string_pages_equal_the_host_reader(db_path, monkeypatch, nvcomp: str, batch_bytes: int) -> None:
    from hetdb.backend.gpu import strings_codec

    if nvcomp == "on" and strings_codec.nvcomp_module()[0] is None:
        pytest.skip(f"nvCOMP unavailable: {strings_codec.nvcomp_module()[1]} (carry its wheels in .whl/)")
    import hetdb.exec.hostutil as hostutil

    notes: list[str] = []
    monkeypatch.setattr(hostutil, "note_host_step", lambda backend, what: notes.append(what))
    monkeypatch.setenv(strings_codec.NVCOMP_ENV, "1" if nvcomp == "on" else "0")
    reader = Database.open(db_path).table("t")
    assert _stream_and_compare(reader, batch_bytes=batch_bytes) == 2 * ROWS
    lz4_pages = sum(reader.page_codec("comment", rg) == "lz4" for rg in range(reader.num_row_groups))
    assert notes == ([] if nvcomp == "on" else ["LZ4 string pages decoded on the host (HETDB_NVCOMP=0)"] * lz4_pages)


def test_lz4_pages_delivered_together_decompress_in_one_call(db_path, monkeypatch) -> None:
    """A delivery of row groups 1 and 2 (both lz4 comment pages) decompresses their chunks in one
    nvCOMP call (strings_codec.decode_string_pages) and equals the host reader, NULLs included."""
    from hetdb.backend.gpu import strings_codec

    if strings_codec.nvcomp_module()[0] is None:
        pytest.skip(f"nvCOMP unavailable: {strings_codec.nvcomp_module()[1]}")
    calls: list[int] = []
    real = strings_codec.decompress_sections

    def counted(nvcomp, buf, items):
        calls.append(len(items))
        return real(nvcomp, buf, items)

    monkeypatch.setattr(strings_codec, "decompress_sections", counted)
    reader = Database.open(db_path).table("t")
    assert _stream_and_compare_groups(reader, [1, 2]) == ROWS - ROWS_PER_PAGE  # (row group 2 is partial)
    assert calls == [2]


def _stream_and_compare_groups(reader, groups: list[int]) -> int:
    from hetdb.backend.gpu.memory import DeviceMemoryBudget
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.column import Column

    compared = 0
    with PageStreamer(reader, ["comment"], groups, budget=DeviceMemoryBudget(1 << 30), batch_bytes=64 << 20) as s:
        for rows, batch in s.batches():
            assert list(rows) == groups  # one delivery
            col = batch["comment"]
            host = Column(col.dtype, validity=_host(col.validity), offsets=_host(col.offsets), chars=_host(col.chars))
            want = pa.concat_arrays([reader.read("comment", rg).to_arrow() for rg in rows])
            assert want.null_count > 0 and host.to_arrow().equals(want)
            compared += len(want)
    return compared


def test_nvcomp_decodes_lz4_chunks_exactly(db_path) -> None:
    """nvCOMP's batched LZ4 against pyarrow's lz4_raw on every chunk of a page (no fallback)."""
    import cupy

    from hetdb.backend.gpu import strings_codec
    from hetdb.codec import strings as sc

    nvcomp, reason = strings_codec.nvcomp_module()
    if nvcomp is None:
        pytest.skip(f"nvCOMP unavailable: {reason}")
    r = Database.open(db_path).table("t")
    loc = r.page_location("comment", 1)
    with open(loc.path, "rb") as f:
        f.seek(loc.offset)
        page = np.frombuffer(f.read(loc.length), np.uint8)
    off, ln = r.page_sections("comment", 1)["chars"]
    section = page[off:off + ln]
    raw, chunk, starts, lengths = sc.chunk_table(section)
    dev = cupy.asarray(section)
    got = strings_codec._nvcomp_decompress(nvcomp, dev, raw, chunk, starts, lengths)
    assert np.array_equal(cupy.asnumpy(got), sc.decompress_chars(section, raw))


def test_nvcomp_decodes_the_chunks_of_several_pages_in_one_call(db_path) -> None:
    """strings_codec.decompress_sections: the LZ4 chars sections of pages 1 and 2 in one device buffer,
    every chunk of both in one nvCOMP call, against pyarrow's lz4_raw."""
    import cupy

    from hetdb.backend.gpu import strings_codec
    from hetdb.codec import strings as sc

    nvcomp, reason = strings_codec.nvcomp_module()
    if nvcomp is None:
        pytest.skip(f"nvCOMP unavailable: {reason}")
    r = Database.open(db_path).table("t")
    sections = []
    for rg in (1, 2):
        loc = r.page_location("comment", rg)
        with open(loc.path, "rb") as f:
            f.seek(loc.offset)
            page = np.frombuffer(f.read(loc.length), np.uint8)
        off, ln = r.page_sections("comment", rg)["chars"]
        sections.append(page[off:off + ln])
    base2 = -(-sections[0].shape[0] // 16) * 16 + 16
    buf = np.zeros(base2 + sections[1].shape[0], np.uint8)
    buf[:sections[0].shape[0]] = sections[0]
    buf[base2:] = sections[1]
    tables = [sc.chunk_table(s) for s in sections]
    out, firsts = strings_codec.decompress_sections(nvcomp, cupy.asarray(buf), [(0, tables[0]), (base2, tables[1])])
    got = cupy.asnumpy(out)
    for section, table, first in zip(sections, tables, firsts):
        assert np.array_equal(got[first:first + table[0]], sc.decompress_chars(section, table[0]))


def test_gpu_queries_on_compressed_strings_equal_the_cpu(db_path, monkeypatch) -> None:
    from hetdb.backend.gpu import strings_codec

    sql = ("SELECT count(*), count(comment), sum(length(comment)), min(hex), max(comment), "
           "count(*) FILTER (WHERE comment LIKE '%ironic%sleep%') FROM t")
    with hetdb.connect(db_path, device="cpu") as con:
        want = con.sql(sql).fetchall()
    assert want[0][0] == ROWS and want[0][5] > 0
    for env in ("1", "0"):
        monkeypatch.setenv(strings_codec.NVCOMP_ENV, env)
        with hetdb.connect(db_path, device="gpu") as con:
            assert con.sql(sql).fetchall() == want
            text = con.explain(sql, analyze=True)
        if env == "1" and strings_codec.nvcomp_module()[0] is not None:
            assert "LZ4 string pages decoded on the host" not in text, text


def test_damaged_chunk_directory_is_corrupt_data_on_the_gpu(db_path, tmp_path) -> None:
    import shutil

    from hetdb.backend.gpu.memory import DeviceMemoryBudget
    from hetdb.backend.gpu.stream import PageStreamer

    copy = str(tmp_path / "db")
    shutil.copytree(db_path, copy)
    r = Database.open(copy).table("t")
    start, _ = r.page_sections("comment", 1)["chars"]
    loc = r.page_location("comment", 1)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + start + 8)
        f.write(np.uint32(777).tobytes())
        f.seek(loc.offset)
        page = f.read(loc.length)
    path = f"{r.path}/{MANIFEST}"
    with open(path, "rb") as f:
        m = decode_manifest(f.read(), "test")
    next(c for c in m["columns"] if c["name"] == "comment")["pages"][1]["crc"] = checksum(page)
    with open(path, "wb") as f:
        f.write(encode_manifest(m))
    reader = Database.open(copy).table("t")
    with pytest.raises(CorruptDataError, match="column 'comment' page 1: lz4-encoded strings are damaged"):
        with PageStreamer(reader, ["comment"], [1], budget=DeviceMemoryBudget(1 << 30)) as s:
            for _ in s:
                pass
    # delivered with page 2 (the pages' chunks in one nvCOMP call): the same error names page 1
    with pytest.raises(CorruptDataError, match="column 'comment' page 1: lz4-encoded strings are damaged"):
        with PageStreamer(reader, ["comment"], [1, 2], budget=DeviceMemoryBudget(1 << 30), batch_bytes=64 << 20) as s:
            for _ in s:
                pass
