"""Damaged files are detected and reported as CorruptDataError naming what is damaged."""

from __future__ import annotations

import os
import random

import pyarrow as pa
import pytest
from storage_helpers import edge_table, schema_of

from hetdb.errors import CorruptDataError
from hetdb.storage import Database


def _flip(path: str, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


@pytest.fixture
def table(db: Database):
    src = edge_table(40)
    with db.create_table("t", schema_of(src), rows_per_page=7) as w:
        w.append_arrow(src)
    return db, db.table("t")


def test_flipped_byte_in_every_column_file_is_named(table) -> None:
    db, r = table
    rng = random.Random(1)
    checked = 0
    for spec in r.schema:
        for _ in range(3):
            rg = rng.randrange(r.num_row_groups)
            loc = r.page_location(spec.name, rg)
            off = loc.offset + rng.randrange(loc.padded_length)  # padding included
            _flip(loc.path, off)
            fresh = db.table("t")
            with pytest.raises(CorruptDataError) as e:
                fresh.read(spec.name, rg)
            msg = str(e.value)
            assert "'t'" in msg and f"'{spec.name}'" in msg and loc.path in msg and f"page {rg}" in msg
            with pytest.raises(CorruptDataError):
                fresh.read_batch([spec.name], rg)
            _flip(loc.path, off)  # repair
            fresh.read(spec.name, rg)
            checked += 1
    assert checked == 3 * len(r.schema)


def test_decode_verifies_checksum(table) -> None:
    _, r = table
    loc = r.page_location("i64", 2)
    with open(loc.path, "rb") as f:
        f.seek(loc.offset)
        raw = bytearray(f.read(loc.length))
    r.decode("i64", 2, memoryview(bytes(raw)))
    raw[3] ^= 1
    with pytest.raises(CorruptDataError, match="checksum"):
        r.decode("i64", 2, memoryview(bytes(raw)))
    with pytest.raises(CorruptDataError, match="truncated"):
        r.decode("i64", 2, memoryview(bytes(raw[:-1])))


def test_flipped_byte_in_dictionary_file(db: Database) -> None:
    t = pa.table({"s": ["red", "green", "blue", "red"] * 10})
    with db.create_table("t", schema_of(t), rows_per_page=8) as w:
        w.append_arrow(t)
    r = db.table("t")
    assert r.page_encoding("s", 0) == "dict"
    path = os.path.join(r.path, "c0000.dict")
    size = os.path.getsize(path)
    for off in random.Random(2).sample(range(size), min(size, 8)):
        _flip(path, off)
        with pytest.raises(CorruptDataError, match="dictionary"):
            db.table("t").read("s", 0)
        _flip(path, off)
    assert db.table("t").read("s", 0).to_pylist()[:3] == ["red", "green", "blue"]


def test_truncated_column_file(table) -> None:
    db, r = table
    loc = r.page_location("str", r.num_row_groups - 1)
    os.truncate(loc.path, loc.offset + 100)
    with pytest.raises(CorruptDataError, match="truncated") as e:
        db.table("t").read("str", r.num_row_groups - 1)
    assert loc.path in str(e.value)
    with pytest.raises(CorruptDataError):
        db.table("t").arrow()


def test_missing_column_file(table) -> None:
    db, r = table
    os.unlink(r.page_location("i32", 0).path)
    with pytest.raises(CorruptDataError, match="missing"):
        db.table("t").read("i32", 0)


def test_garbled_manifest_at_random_offsets(table) -> None:
    db, r = table
    path = os.path.join(r.path, "manifest.json")
    size = os.path.getsize(path)
    offsets = random.Random(3).sample(range(size), 40) + [0, size - 1, size - 5]
    for off in offsets:
        _flip(path, off)
        with pytest.raises(CorruptDataError, match="manifest"):
            db.table("t")
        _flip(path, off)
    assert db.table("t").num_rows == 40
    os.truncate(path, size // 2)
    with pytest.raises(CorruptDataError, match="manifest"):
        db.table("t")
    os.unlink(path)
    with pytest.raises(CorruptDataError, match="missing"):
        db.table("t")


def test_bad_current(table) -> None:
    db, r = table
    path = os.path.join(db.path, "tables", "t", "CURRENT")
    good = open(path, "rb").read()
    for off in range(len(good)):
        _flip(path, off)
        with pytest.raises(CorruptDataError, match="CURRENT"):
            db.table("t")
        _flip(path, off)
    for bad in (b"", b"garbage", b"7\n", b"2 deadbeef\n"):
        with open(path, "wb") as f:
            f.write(bad)
        with pytest.raises(CorruptDataError):
            db.table("t")
    # a well-formed CURRENT naming a version that does not exist
    from hetdb.storage.format import encode_current

    with open(path, "wb") as f:
        f.write(encode_current(9))
    with pytest.raises(CorruptDataError, match="version 9"):
        db.table("t")
    with open(path, "wb") as f:
        f.write(good)
    assert db.table("t").num_rows == 40


def test_garbled_database_marker(tmp_path) -> None:
    Database.open(str(tmp_path / "db"), create=True)
    with open(tmp_path / "db" / "hetdb.json", "w") as f:
        f.write("{not json")
    with pytest.raises(CorruptDataError, match="hetdb.json"):
        Database.open(str(tmp_path / "db"))
