"""Bad input files and names on import: typed errors naming what is wrong, never a crash or a hang
(invalid UTF-8 in Parquet strings, a truncated .csv.gz, FIFOs and devices, names too long)."""

from __future__ import annotations

import gzip
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb import types as T
from hetdb.errors import CatalogError, InputError
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec
from hetdb.storage.ingest import import_files


def _invalid_utf8_parquet(path: str, bad_row: int, rows: int = 50) -> None:
    # written as valid text with a marker, then the marker's bytes are replaced by invalid UTF-8
    values = [f"value-{i}" for i in range(rows)]
    values[bad_row] = "XMARKX"
    pq.write_table(pa.table({"k": list(range(rows)), "s": values}), path, compression="none",
                   use_dictionary=False, write_statistics=False)
    with open(path, "rb") as f:
        data = f.read()
    assert data.count(b"XMARKX") == 1
    with open(path, "wb") as f:
        f.write(data.replace(b"XMARKX", b"\xff\xfeBAD!"))


def test_parquet_strings_with_invalid_utf8_are_refused(db: Database, tmp_path):
    path = str(tmp_path / "bad.parquet")
    _invalid_utf8_parquet(path, bad_row=37)
    with pytest.raises(InputError) as ei:
        import_files(db, "t", [path])
    msg = str(ei.value)
    assert path in msg and "column 's'" in msg and "invalid UTF-8" in msg and "row 37 " in msg
    assert not db.has_table("t") and db.tables() == []


def test_truncated_csv_gz_is_an_input_error(db: Database, tmp_path):
    data = ("a,b\n" + "".join(f"{i},name-{i}\n" for i in range(100_000))).encode()
    packed = gzip.compress(data)
    path = str(tmp_path / "cut.csv.gz")
    with open(path, "wb") as f:
        f.write(packed[: len(packed) // 2])
    with pytest.raises(InputError, match="cut.csv.gz.*(Truncated|truncated)"):
        import_files(db, "t", [path])
    assert db.tables() == []
    # a file truncated past the schema sample fails while streaming: the same typed error
    big = ("a,b\n" + "".join(f"{i},name-{i}\n" for i in range(2_000_000))).encode()
    packed = gzip.compress(big, compresslevel=1)
    with open(path, "wb") as f:
        f.write(packed[: len(packed) * 9 // 10])
    with pytest.raises(InputError, match="cut.csv.gz"):
        import_files(db, "t", [path])
    assert db.tables() == []


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_import_refuses_files_that_are_not_regular(db: Database, tmp_path, kind):
    if kind == "fifo":
        path = str(tmp_path / "pipe.csv")
        os.mkfifo(path)  # nobody writes it: opening it would block forever
    elif kind == "device":
        path = "/dev/zero"  # never ends
    else:
        path = str(tmp_path / "dir.csv")
        os.mkdir(path)
    with pytest.raises(InputError, match="regular files only"):
        import_files(db, "t", [path], format="csv")
    assert db.tables() == []


def test_table_name_too_long_is_a_catalog_error(db: Database, tmp_path):
    path = str(tmp_path / "one.parquet")
    pq.write_table(pa.table({"a": [1]}), path)
    for name in ("x" * 256, "é" * 101, "t" * 5000):  # bytes, not characters, count
        with pytest.raises(CatalogError, match="bytes long"):
            import_files(db, name, [path])
        with pytest.raises(CatalogError, match="bytes long"):
            db.create_table(name, [ColumnSpec("a", T.INT64, True)])
    assert db.tables() == []
    name = "n" * 200
    assert import_files(db, name, [path]).num_rows == 1
    db.drop_table(name)  # the drop's temporary name fits too
    # long column names and long file paths are no file names: they are fine
    col = "c" * 1000
    pq.write_table(pa.table({col: [7]}), path)
    assert import_files(db, "wide", [path]).arrow().column(col).to_pylist() == [7]
