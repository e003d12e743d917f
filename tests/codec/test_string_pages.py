"""Plain-string pages in codecs "offsets" and "lz4" (hetdb.codec.strings): round trips of the
sections and of whole pages, the per-page choice, the compression settings, damaged chunks."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb.codec import CodecError
from hetdb.codec import strings as sc
from hetdb.column import Column
from hetdb.errors import CorruptDataError
from hetdb.storage import Database
from hetdb.storage.format import MANIFEST, checksum, decode_manifest, encode_manifest
from hetdb.storage.ingest import import_files
from hetdb.storage.pages import PLAIN, decode_page, encode_page
from hetdb.types import STRING

WORDS = ["furiously", "quickly", "final", "deposits", "carefully", "ironic", "packages", "sleep", "ß€😀"]


def _words(rng: np.random.Generator, n: int, nulls: bool = False) -> list[str | None]:
    out = [" ".join(rng.choice(WORDS, int(rng.integers(0, 9)))) for _ in range(n)]
    if nulls:
        out = [None if i % 7 == 3 else s for i, s in enumerate(out)]
    return out


def _random_hex(rng: np.random.Generator, n: int) -> list[str]:
    return [f"{x:016x}" for x in rng.integers(0, 2 ** 62, n)]


def _column(values: list[str | None]) -> Column:
    return Column.from_arrow(pa.array(values, pa.large_string()), STRING)


def _page_round_trip(values: list[str | None], codecs: tuple[str, ...]) -> tuple[str, int, int]:
    col = _column(values)
    page, sections, length, codec, decoded = encode_page(col, PLAIN, codecs)
    got = decode_page(page[:length], STRING, len(values), PLAIN, sections, None, "test page", codec)
    assert got.to_arrow().to_pylist() == values
    return codec, length, decoded


@pytest.mark.parametrize("case", ["compressible", "nulls", "one", "all_empty", "long_values", "random",
                                  "chunk_multiple"])
def test_string_pages_round_trip(case: str) -> None:
    rng = np.random.default_rng(7)
    values = {
        "compressible": _words(rng, 40000),
        "nulls": _words(rng, 20000, nulls=True),
        "one": ["a lone value"],
        "all_empty": [""] * 3000,
        "long_values": ["x" * 200000, "abc" * 70000, ""],
        "random": _random_hex(rng, 30000),
        # exactly two chunks of bytes
        "chunk_multiple": ["ab" * 16] * (2 * sc.CHUNK // 32),
    }[case]
    plain_codec, plain_len, plain_decoded = _page_round_trip(values, ())
    assert plain_codec == "plain" and plain_decoded == plain_len
    for codecs in (("offsets",), ("offsets", "lz4")):
        codec, length, decoded = _page_round_trip(values, codecs)
        assert decoded == plain_decoded  # the decoded size does not depend on the encoding
        assert length <= plain_len and codec in {"plain", *codecs}
    expect = {"compressible": "lz4", "nulls": "lz4", "random": "offsets", "long_values": "lz4",
              "chunk_multiple": "lz4", "all_empty": "offsets"}
    if case in expect:
        assert _page_round_trip(values, ("offsets", "lz4"))[0] == expect[case]


def test_lz4_chars_are_independent_aligned_chunks_readable_by_pyarrow() -> None:
    rng = np.random.default_rng(1)
    chars = np.frombuffer(" ".join(_words(rng, 30000)).encode(), np.uint8)
    section = sc.compress_chars(chars)
    raw, chunk, starts, lengths = sc.chunk_table(section)
    assert raw == chars.shape[0] and chunk == sc.CHUNK and starts.shape[0] == -(-raw // chunk) > 2
    assert np.all(starts % 16 == 0)
    codec = pa.Codec("lz4_raw")
    for i in (0, starts.shape[0] - 1):  # any chunk decodes on its own
        size = min(chunk, raw - i * chunk)
        got = codec.decompress(section[starts[i]:starts[i] + lengths[i]], decompressed_size=size)
        assert bytes(got) == chars[i * chunk:i * chunk + size].tobytes()
    assert np.array_equal(sc.decompress_chars(section, raw), chars)


def test_lz4_is_skipped_when_the_sample_does_not_compress() -> None:
    chars = np.random.default_rng(2).integers(0, 256, 5 * sc.CHUNK).astype(np.uint8)
    assert sc.compress_chars(chars, sc.LZ4_MIN_SAVING) is None
    assert sc.compress_chars(chars) is not None  # forced, it still round-trips
    assert np.array_equal(sc.decompress_chars(sc.compress_chars(chars), chars.shape[0]), chars)


def test_damaged_lz4_sections_are_codec_errors() -> None:
    rng = np.random.default_rng(4)
    chars = np.frombuffer(" ".join(_words(rng, 20000)).encode(), np.uint8)
    section = sc.compress_chars(chars)
    _, _, starts, lengths = sc.chunk_table(section)
    with pytest.raises(CodecError, match="offsets end at"):
        sc.decompress_chars(section, chars.shape[0] - 1)
    bad = section.copy()
    bad[8:12] = np.frombuffer(np.uint32(1000).tobytes(), np.uint8)  # chunk size no longer matches K
    with pytest.raises(CodecError, match="header"):
        sc.chunk_table(bad)
    bad = section.copy()
    k = starts.shape[0]
    bad[16 + 8 * k:16 + 8 * k + 4] = np.frombuffer(np.uint32(section.shape[0]).tobytes(), np.uint8)
    with pytest.raises(CodecError, match="directory"):
        sc.chunk_table(bad)
    bad = section.copy()
    bad[16 + 8 * k:16 + 8 * k + 4] = np.frombuffer(np.uint32(lengths[0] // 2).tobytes(), np.uint8)  # cut
    with pytest.raises(CodecError, match="chunk 0 is damaged"):
        sc.decompress_chars(bad, chars.shape[0])
    with pytest.raises(CodecError, match="encoding header"):
        sc.decode_offsets(np.zeros(32, np.uint8), 3)


# ---- through the table store -----------------------------------------------------------------------

ROWS = 30000


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    # numbered: too many distinct values for a dictionary
    comment = [None if s is None else f"{s} {i}" for i, s in enumerate(_words(rng, ROWS, nulls=True))]
    return pa.table({"comment": comment, "hex": _random_hex(rng, ROWS),
                     "k": np.arange(ROWS, dtype=np.int64)})


def _import(tmp_path, compression: str) -> Database:
    db = Database.open(str(tmp_path / compression), create=True)
    path = str(tmp_path / f"{compression}.parquet")
    pq.write_table(_table(), path)
    # rows_per_page 10000 with many distinct strings: the dictionary gives up after page 0
    import_files(db, "t", [path], rows_per_page=10000, compression=compression)
    return db


def _codecs(r, column: str) -> list[str]:
    return [r.page_codec(column, rg) for rg in range(r.num_row_groups)]


def test_compression_settings_and_identical_values(tmp_path) -> None:
    auto, light, none = (_import(tmp_path, c).table("t") for c in ("auto", "light", "none"))
    expected = _table()
    for r in (auto, light, none):
        assert r.arrow().equals(expected.cast(r.arrow().schema))
    assert _codecs(auto, "comment")[1:] == ["lz4", "lz4"] and _codecs(auto, "hex")[1:] == ["offsets", "offsets"]
    assert _codecs(light, "comment")[1:] == ["offsets", "offsets"] and _codecs(light, "hex")[1:] == ["offsets"] * 2
    assert set(_codecs(none, "comment") + _codecs(none, "hex")) == {"plain"}
    for c in ("comment", "hex"):
        assert auto.bytes_on_disk(c) <= light.bytes_on_disk(c) < none.bytes_on_disk(c)
        for rg in range(auto.num_row_groups):
            assert auto.decoded_bytes(c, rg) == light.decoded_bytes(c, rg) == none.decoded_bytes(c, rg)
            assert auto.zone_map(c, rg) == none.zone_map(c, rg)  # zone maps stay on values
    assert auto.bytes_on_disk("comment") * 3 < none.bytes_on_disk("comment") * 2


def test_sql_over_compressed_string_pages_matches_plain(tmp_path) -> None:
    import hetdb

    sql = ("SELECT count(*), count(comment), sum(length(comment)), min(hex), max(comment), "
           "count(*) FILTER (WHERE comment LIKE '%ironic%sleep%') FROM t")
    answers = []
    for compression in ("auto", "none"):
        _import(tmp_path, compression)
        con = hetdb.connect(str(tmp_path / compression), device="cpu", threads=2)
        answers.append(con.sql(sql).fetchall())
    assert answers[0] == answers[1] and answers[0][0][0] == ROWS and answers[0][0][5] > 0


def _rewrite_manifest(r, edit) -> None:
    path = os.path.join(r.path, MANIFEST)
    with open(path, "rb") as f:
        m = decode_manifest(f.read(), "test")
    edit(m)
    with open(path, "wb") as f:
        f.write(encode_manifest(m))


def test_flipped_byte_in_an_lz4_chunk_names_the_page(tmp_path) -> None:
    r = _import(tmp_path, "auto").table("t")
    assert r.page_codec("comment", 2) == "lz4"
    start, length = r.page_sections("comment", 2)["chars"]
    loc = r.page_location("comment", 2)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + start + length // 2)
        byte = f.read(1)
        f.seek(loc.offset + start + length // 2)
        f.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(CorruptDataError, match=r"column 'comment' .* page 2 .*checksum"):
        r.read("comment", 2)
    assert r.read("comment", 1).offsets.shape[0] == 10001  # the other pages still read


def test_damaged_chunk_directory_behind_a_matching_checksum_is_corrupt_data(tmp_path) -> None:
    """Bytes damaged before the checksum was taken (what the CRC cannot see) still fail cleanly."""
    db = _import(tmp_path, "auto")
    r = db.table("t")
    start, _ = r.page_sections("comment", 1)["chars"]
    loc = r.page_location("comment", 1)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + start + 8)  # the chunk size field
        f.write(np.uint32(12345).tobytes())
        f.seek(loc.offset)
        page = f.read(loc.length)

    def fix(m: dict) -> None:
        entry = next(c for c in m["columns"] if c["name"] == "comment")["pages"][1]
        entry["crc"] = checksum(page)

    _rewrite_manifest(r, fix)
    with pytest.raises(CorruptDataError, match=r"column 'comment' .* page 1 .*lz4-encoded strings are damaged"):
        Database.open(db.path).table("t").read("comment", 1)


@pytest.mark.parametrize("compressed", [False, True])
def test_device_byte_bounds_cover_decoded_string_pages(tmp_path, compressed: bool) -> None:
    """What a GPU scan reserves for a string-codec page (decoded on arrival, even into a compressed
    cache) and the column bound the cache plans with (cache/pages.py) hold the decoded arrays."""
    from hetdb.cache.pages import column_device_bytes, page_info

    r = _import(tmp_path, "auto").table("t")
    for c in ("comment", "hex"):
        infos = [page_info(r, c, rg, compressed) for rg in range(r.num_row_groups)]
        for rg, info in enumerate(infos):
            col = r.read(c, rg)
            arrays = sum(int(a.nbytes) for a in (col.offsets, col.chars, col.data) if a is not None)
            view = info.location.length if info.codec == "offsets" else 0  # chars view the page as stored
            validity = r.row_group_rows(rg) if col.validity is not None else 0
            if info.codec in ("offsets", "lz4"):
                assert info.device_bytes >= arrays - int(col.chars.nbytes if view else 0) + view + validity
        assert column_device_bytes(r, c, compressed) + r.num_rows >= sum(i.device_bytes for i in infos)
