"""Compressed pages in the table store: same data with and without compression, manifest records,
corruption of compressed bytes, version-1 databases, `hetdb describe`."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

from hetdb.errors import CorruptDataError, InputError
from hetdb.storage import Database
from hetdb.storage.format import FORMAT_VERSION, MANIFEST, decode_manifest, encode_manifest
from hetdb.storage.ingest import import_files

ROWS = 5000


def _table() -> pa.Table:
    rng = np.random.default_rng(3)
    valid = rng.random(ROWS) > 0.2
    return pa.table({
        "key": pa.array(np.arange(ROWS, dtype=np.int64) * 4),
        "qty": pa.array(rng.integers(1, 51, ROWS).astype(np.int32)),
        "nullable": pa.array(rng.integers(-5, 5, ROWS).astype(np.int32), mask=~valid),
        "const": pa.array(np.full(ROWS, 7, np.int64)),
        "price": pa.array(rng.integers(0, 10**9, ROWS) / 100.0),
        "flag": pa.array(rng.random(ROWS) > 0.5),
        "day": pa.array(rng.integers(8000, 10000, ROWS).astype(np.int32), pa.date32()),
        "amount": pa.array([int(x) for x in rng.integers(-10**12, 10**12, ROWS)], pa.decimal128(15, 2)),
        "mode": pa.array(rng.choice(["AIR", "RAIL", "SHIP", None], ROWS)),
        "order_day": pa.array(np.repeat(rng.integers(0, 1000, ROWS // 5), 5)),
        "cost": pa.array(rng.choice(rng.integers(0, 1 << 40, 50), ROWS)),
    })


def _write(tmp_path, compression: str) -> Database:
    db = Database.open(str(tmp_path / compression), create=True)
    path = str(tmp_path / f"{compression}.parquet")
    import pyarrow.parquet as pq

    pq.write_table(_table(), path)
    import_files(db, "t", [path], rows_per_page=1500, compression=compression)
    return db


def test_compressed_and_plain_tables_hold_the_same_values(tmp_path) -> None:
    auto, none = _write(tmp_path, "auto"), _write(tmp_path, "none")
    a, b = auto.table("t"), none.table("t")
    assert a.arrow().equals(b.arrow()) and a.arrow().equals(_table().cast(a.arrow().schema))
    codecs = {(c.name, rg): a.page_codec(c.name, rg) for c in a.schema for rg in range(a.num_row_groups)}
    assert {b.page_codec(c.name, rg) for c in b.schema for rg in range(b.num_row_groups)} == {"plain"}
    assert codecs[("key", 0)] == "delta" and codecs[("const", 1)] == "const" and codecs[("qty", 2)] == "for"
    assert a.bytes_on_disk() < b.bytes_on_disk()
    for c in a.schema:
        for rg in range(a.num_row_groups):
            assert a.decoded_bytes(c.name, rg) == b.decoded_bytes(c.name, rg)
            assert a.page_location(c.name, rg).length <= b.page_location(c.name, rg).length
            assert a.zone_map(c.name, rg) == b.zone_map(c.name, rg)  # zone maps stay on values


def test_unknown_compression_is_refused(tmp_path) -> None:
    db = Database.open(str(tmp_path / "db"), create=True)
    with pytest.raises(InputError, match="compression 'zip'"):
        import_files(db, "t", [str(tmp_path / "x.parquet")], compression="zip")


def test_flipped_byte_in_a_compressed_page_names_the_page(tmp_path) -> None:
    db = _write(tmp_path, "auto")
    r = db.table("t")
    assert r.page_codec("qty", 2) == "for"
    loc = r.page_location("qty", 2)
    with open(loc.path, "r+b") as f:
        f.seek(loc.offset + loc.length // 2)
        byte = f.read(1)
        f.seek(loc.offset + loc.length // 2)
        f.write(bytes([byte[0] ^ 0x10]))
    with pytest.raises(CorruptDataError, match=r"column 'qty' .* page 2 .*checksum"):
        r.read("qty", 2)
    assert r.read("qty", 1).data.shape[0] == 1500  # the other pages still read


def _downgrade_to_v1(db: Database) -> None:
    """Rewrite a plain database as format version 1 wrote it (no codec fields, version 1)."""
    vdir = os.path.join(db.path, "tables", "t", f"v{db.table('t').version}")
    with open(os.path.join(vdir, MANIFEST), "rb") as f:
        m = decode_manifest(f.read(), "test")
    m["format_version"] = 1
    for c in m["columns"]:
        for p in c["pages"]:
            assert p.pop("codec") == "plain"
            p.pop("decoded")
    with open(os.path.join(vdir, MANIFEST), "wb") as f:
        f.write(encode_manifest(m))
    with open(os.path.join(db.path, "hetdb.json"), "w") as f:
        json.dump({"format": "hetdb", "format_version": 1}, f)


def test_version_1_database_is_read_as_it_is(tmp_path) -> None:
    db = _write(tmp_path, "none")
    expected = db.table("t").arrow()
    _downgrade_to_v1(db)
    old = Database.open(db.path)
    assert old.format_version == 1
    r = old.table("t")
    assert r.arrow().equals(expected) and r.page_codec("qty", 0) == "plain"
    with old.create_table("u", r.schema) as w:
        w.append_arrow(expected)
    with open(os.path.join(db.path, "hetdb.json")) as f:
        assert json.load(f)["format_version"] == FORMAT_VERSION  # written in the current version from now on
    assert Database.open(db.path).table("u").arrow().equals(expected)
    assert Database.open(db.path).table("t").arrow().equals(expected)


def test_describe_shows_encodings_and_ratio(tmp_path, capsys, monkeypatch) -> None:
    db = _write(tmp_path, "auto")
    from hetdb.cli import commands
    from hetdb.cli.main import main

    # Without a terminal rich assumes 80 columns and shortens cells; the check is about content.
    monkeypatch.setattr(commands.console, "width", 200)

    assert main(["describe", db.path, "t"]) == 0
    out = capsys.readouterr().out
    assert "delta:4" in out and "const:4" in out and "ratio" in out


def _flip(path: str, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x10]))


def _one_page_per_codec(r) -> dict[str, tuple[str, int]]:
    pages: dict[str, tuple[str, int]] = {}
    for c in r.schema:
        for rg in range(r.num_row_groups):
            pages.setdefault(r.page_codec(c.name, rg), (c.name, rg))
    return pages


def test_flipped_byte_in_a_page_of_every_codec_names_the_page(tmp_path) -> None:
    db = _write(tmp_path, "auto")
    r = db.table("t")
    pages = _one_page_per_codec(r)
    assert set(pages) == {"plain", "const", "for", "delta", "rle", "dict"}, pages
    for column, rg in pages.values():
        loc = r.page_location(column, rg)
        data_off, data_len = r.page_sections(column, rg)["data"]
        _flip(loc.path, loc.offset + data_off + data_len - 1)  # the last byte of the encoded values
        with pytest.raises(CorruptDataError, match=rf"column '{column}' .* page {rg} .*checksum"):
            r.read(column, rg)


def test_damaged_codec_header_with_a_matching_checksum_names_the_page(tmp_path) -> None:
    """Bytes damaged before the checksum was taken (or a checksum collision) reach the decoder: an
    inconsistent encoded section is a CorruptDataError naming the page, never a crash or a read past
    the page."""
    from hetdb.storage.format import checksum

    db = _write(tmp_path, "auto")
    r = db.table("t")
    pages = _one_page_per_codec(r)
    vdir = r.path
    with open(os.path.join(vdir, MANIFEST), "rb") as f:
        m = decode_manifest(f.read(), "test")
    entries = {c["name"]: c["pages"] for c in m["columns"]}
    damaged = {}
    for codec_name, (column, rg) in pages.items():
        if codec_name == "plain":
            continue
        loc = r.page_location(column, rg)
        _flip(loc.path, loc.offset + 4)  # the header's value count
        with open(loc.path, "rb") as f:
            f.seek(loc.offset)
            entries[column][rg]["crc"] = checksum(f.read(loc.length))
        damaged[codec_name] = (column, rg)
    with open(os.path.join(vdir, MANIFEST), "wb") as f:
        f.write(encode_manifest(m))
    fresh = Database.open(db.path).table("t")
    assert set(damaged) == {"const", "for", "delta", "rle", "dict"}
    for codec_name, (column, rg) in damaged.items():
        with pytest.raises(CorruptDataError, match=rf"column '{column}' .* page {rg} .*{codec_name}-encoded"):
            fresh.read(column, rg)
