"""import_files: type mapping, CSV options and errors, schema agreement, and leaving the database unchanged
when an import fails."""

from __future__ import annotations

import datetime
import decimal
import os
import zoneinfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb import types as T
from hetdb.errors import CatalogError, InputError, UnsupportedError
from hetdb.storage import Database
from hetdb.storage.ingest import import_files


def _tree(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, x), path) for d, ds, fs in os.walk(path) for x in ds + fs)


def _ipc(path, table: pa.Table) -> str:
    with pa.ipc.new_file(str(path), table.schema) as w:
        w.write_table(table)
    return str(path)


def test_arrow_types_are_widened_and_converted(tmp_path, db: Database) -> None:
    ts = [datetime.datetime(2021, 3, 4, 5, 6, 7, 123456, tzinfo=zoneinfo.ZoneInfo("America/New_York")), None]
    src = pa.table({
        "i8": pa.array([-128, None], pa.int8()),
        "i16": pa.array([32767, -1], pa.int16()),
        "u8": pa.array([255, None], pa.uint8()),
        "u16": pa.array([65535, 0], pa.uint16()),
        "u32": pa.array([4294967295, 1], pa.uint32()),
        "f32": pa.array([1.5, None], pa.float32()),
        "sv": pa.array(["view", None], pa.string_view()),
        "ls": pa.array(["large", ""], pa.large_string()),
        "dict": pa.array(["p", None]).dictionary_encode(),
        "dec38": pa.array([decimal.Decimal("12345678901234.5678"), None], pa.decimal128(38, 4)),
        "ts_ns_tz": pa.array(ts, pa.timestamp("ns", tz="America/New_York")),
        "ts_s": pa.array([datetime.datetime(1999, 12, 31, 23, 59, 59), None], pa.timestamp("s")),
        "d32": pa.array([datetime.date(2024, 2, 29), None], pa.date32()),
    })
    r = import_files(db, "t", [_ipc(tmp_path / "x.arrow", src)], rows_per_page=1)
    kinds = {c.name: str(c.dtype) for c in r.schema}
    assert kinds == {"i8": "INTEGER", "i16": "INTEGER", "u8": "INTEGER", "u16": "INTEGER", "u32": "BIGINT",
                     "f32": "DOUBLE", "sv": "VARCHAR", "ls": "VARCHAR", "dict": "VARCHAR",
                     "dec38": "DECIMAL(18,4)", "ts_ns_tz": "TIMESTAMP WITH TIME ZONE", "ts_s": "TIMESTAMP",
                     "d32": "DATE"}
    out = r.arrow().to_pydict()
    assert out["i8"] == [-128, None] and out["u16"] == [65535, 0] and out["u32"] == [4294967295, 1]
    assert out["sv"] == ["view", None] and out["ls"] == ["large", ""] and out["dict"] == ["p", None]
    assert out["dec38"] == [decimal.Decimal("12345678901234.5678"), None]
    # a tz-aware timestamp is stored as its UTC instant (TIMESTAMPTZ)
    assert out["ts_ns_tz"][0] == datetime.datetime(2021, 3, 4, 10, 6, 7, 123456, tzinfo=datetime.UTC)
    assert out["ts_s"] == [datetime.datetime(1999, 12, 31, 23, 59, 59), None]
    assert out["d32"] == [datetime.date(2024, 2, 29), None]


def test_parquet_dictionary_and_required_columns(tmp_path, db: Database) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.string())])
    src = pa.table({"k": list(range(50)), "s": [["a", "b"][i % 2] for i in range(50)]}, schema=schema)
    pq.write_table(src, tmp_path / "x.parquet", use_dictionary=True)
    pf = str(tmp_path / "x.parquet")
    r = import_files(db, "t", [pf], rows_per_page=8)
    assert [(c.name, c.nullable) for c in r.schema] == [("k", False), ("s", True)]
    assert r.arrow().column("s").to_pylist() == src.column("s").to_pylist()
    r2 = import_files(db, "t", [pf], replace=True)
    assert r2.version == 2


def test_decimal_that_does_not_fit_names_file_and_column(tmp_path, db: Database) -> None:
    src = pa.table({"amount": pa.array([decimal.Decimal("1.5"), decimal.Decimal("10") ** 20],
                                       pa.decimal128(38, 2))})
    path = str(tmp_path / "wide.parquet")
    pq.write_table(src, path)
    with pytest.raises(InputError) as e:
        import_files(db, "t", [path])
    assert path in str(e.value) and "'amount'" in str(e.value) and "18 digits" in str(e.value)
    assert db.tables() == []


def test_unsupported_type_is_named(tmp_path, db: Database) -> None:
    path = _ipc(tmp_path / "x.arrow", pa.table({"big": pa.array([1], pa.uint64())}))
    with pytest.raises(UnsupportedError, match="'big'"):
        import_files(db, "t", [path])


def test_schemas_must_agree(tmp_path, db: Database) -> None:
    a = _ipc(tmp_path / "a.arrow", pa.table({"x": [1], "y": ["p"]}))
    b = _ipc(tmp_path / "b.arrow", pa.table({"x": [1.5], "y": ["q"]}))
    c = _ipc(tmp_path / "c.arrow", pa.table({"x": [1], "z": ["q"]}))
    with pytest.raises(InputError, match="b.arrow.*'x'"):
        import_files(db, "t", [a, b])
    with pytest.raises(InputError, match="c.arrow"):
        import_files(db, "t", [a, c])
    assert db.tables() == []


def test_all_null_column_takes_type_from_other_files(tmp_path, db: Database) -> None:
    a = _ipc(tmp_path / "a.arrow", pa.table({"x": pa.nulls(3)}))
    b = _ipc(tmp_path / "b.arrow", pa.table({"x": pa.array([4, 5], pa.int64())}))
    r = import_files(db, "t", [a, b])
    assert r.column("x").dtype == T.INT64
    assert r.arrow().column("x").to_pylist() == [None, None, None, 4, 5]


def test_format_detection_and_errors(tmp_path, db: Database) -> None:
    with pytest.raises(InputError, match="extension"):
        import_files(db, "t", [str(tmp_path / "data.xlsx")])
    with pytest.raises(InputError, match="no such file"):
        import_files(db, "t", [str(tmp_path / "missing.csv")])
    with pytest.raises(InputError, match="unknown input format"):
        import_files(db, "t", [str(tmp_path / "x")], format="xml")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"this is not parquet at all")
    with pytest.raises(InputError, match="junk.parquet"):
        import_files(db, "t", [str(junk)])
    (tmp_path / "data.txt").write_text("a|b\n1|2\n")
    r = import_files(db, "t", [str(tmp_path / "data.txt")], format="csv", csv_options={"delimiter": "|"})
    assert r.arrow().to_pydict() == {"a": [1], "b": [2]}
    with pytest.raises(CatalogError, match="already exists"):
        import_files(db, "t", [str(tmp_path / "data.txt")], format="csv")


def test_csv_options_and_inference(tmp_path, db: Database) -> None:
    p = tmp_path / "x.csv"
    p.write_text("1;2020-01-02;NA;x\n2;2020-01-03;;\n")
    r = import_files(db, "t", [str(p)], csv_options={"header": False, "delimiter": ";"})
    assert [c.name for c in r.schema] == ["f0", "f1", "f2", "f3"]
    assert [str(c.dtype) for c in r.schema] == ["BIGINT", "DATE", "VARCHAR", "VARCHAR"]
    # "NA" is a value, an unquoted empty field is NULL
    assert r.arrow().column("f2").to_pylist() == ["NA", None]
    r = import_files(db, "t2", [str(p)], csv_options={
        "column_names": ["a", "b", "c", "d"], "column_types": {"a": "INTEGER", "c": "VARCHAR"},
        "delimiter": ";", "null_values": ["", "NA"]})
    assert str(r.column("a").dtype) == "INTEGER"
    assert r.arrow().column("c").to_pylist() == [None, None]
    with pytest.raises(InputError, match="unknown csv_options"):
        import_files(db, "t3", [str(p)], csv_options={"delimeter": ";"})


def test_csv_inference_sees_enough_rows(tmp_path, db: Database) -> None:
    # the first 50k rows look like integers; a float appears later, still in the first block
    lines = ["v"] + [str(i) for i in range(50000)] + ["2.5"]
    p = tmp_path / "x.csv"
    p.write_text("\n".join(lines) + "\n")
    r = import_files(db, "t", [str(p)], rows_per_page=10000)
    assert str(r.column("v").dtype) == "DOUBLE" and r.num_rows == 50001


@pytest.mark.parametrize("content,line,what", [
    ("a,b\n1,x\n2,y\nzz,w\n3,q\n", 4, "'zz'"),
    ("a,b\n1,x\n2,y,3\n3,q\n", 3, "expected 2 columns"),
    ("a,b\n1,x\n2\n", 3, "expected 2 columns"),
])
def test_bad_csv_names_file_and_line_and_changes_nothing(tmp_path, db: Database, content: str, line: int,
                                                         what: str) -> None:
    import_files(db, "t", [_ipc(tmp_path / "ok.arrow", pa.table({"a": [9], "b": ["z"]}))])
    p = tmp_path / "bad.csv"
    p.write_text(content)
    before = _tree(db.path)
    for table, replace in (("t", True), ("new", False)):
        with pytest.raises(InputError) as e:
            import_files(db, table, [str(p)], replace=replace, rows_per_page=1,
                         csv_options={"column_types": {"a": "BIGINT"}})
        assert f"{p}:{line}:" in str(e.value) and what in str(e.value)
    assert _tree(db.path) == before
    assert db.table("t").version == 1 and db.table("t").arrow().to_pydict() == {"a": [9], "b": ["z"]}


def test_bad_csv_row_deep_in_a_later_file(tmp_path, db: Database) -> None:
    good = tmp_path / "a.csv"
    good.write_text("a,b\n" + "".join(f"{i},s{i}\n" for i in range(1000)))
    bad = tmp_path / "b.csv"
    bad.write_text("a,b\n" + "".join(f"{i},s{i}\n" for i in range(30000)) + "x1,oops\n")
    with pytest.raises(InputError, match=rf"{bad}:30002:.*'x1'"):
        import_files(db, "t", [str(good), str(bad)], rows_per_page=1000, csv_options={"block_size": 1 << 14})
    assert db.tables() == []
    assert os.listdir(os.path.join(db.path, "tables")) == []


def test_progress_bar_runs(tmp_path, db: Database, capsys) -> None:
    path = str(tmp_path / "x.parquet")
    pq.write_table(pa.table({"a": list(range(1000))}), path)
    r = import_files(db, "t", [path], progress=True)
    assert r.num_rows == 1000
    assert "import t" in capsys.readouterr().out
