"""Database catalog: open/create, tables, versions, replace, drop, abort, and error messages."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from storage_helpers import assert_tables_equal, schema_of

from hetdb import types as T
from hetdb.errors import CatalogError, InputError
from hetdb.storage import ColumnSpec, Database


def _write(db: Database, name: str, table: pa.Table, **kw) -> int:
    with db.create_table(name, schema_of(table), **kw) as w:
        w.append_arrow(table)
    return db.table(name).version


def test_open_missing_and_non_database(tmp_path) -> None:
    with pytest.raises(CatalogError, match="does not exist"):
        Database.open(str(tmp_path / "nope"))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "file.txt").write_text("hi")
    with pytest.raises(CatalogError, match="not a hetdb database"):
        Database.open(str(tmp_path / "other"))
    with pytest.raises(CatalogError, match="not empty"):
        Database.open(str(tmp_path / "other"), create=True)
    db = Database.open(str(tmp_path / "new"), create=True)
    assert db.tables() == []
    assert Database.open(str(tmp_path / "new")).path == db.path


def test_tables_sorted_and_unknown_table_suggests(db: Database) -> None:
    t = pa.table({"a": [1, 2]})
    for name in ("lineitem", "orders", "customer"):
        _write(db, name, t)
    assert db.tables() == ["customer", "lineitem", "orders"]
    assert db.has_table("orders") and not db.has_table("order")
    with pytest.raises(CatalogError, match=r"unknown table 'lineitems' \(did you mean 'lineitem'\?\)"):
        db.table("lineitems")
    with pytest.raises(CatalogError, match="unknown table 'zzz'"):
        db.table("zzz")


def test_unknown_column_names_table_and_suggests(db: Database) -> None:
    _write(db, "orders", pa.table({"o_orderkey": [1], "o_custkey": [2]}))
    r = db.table("orders")
    assert r.column("o_custkey") == ColumnSpec("o_custkey", T.INT64, True)
    with pytest.raises(CatalogError, match=r"table 'orders' has no column 'o_custky' \(did you mean 'o_custkey'\?\)"):
        r.column("o_custky")
    with pytest.raises(CatalogError):
        r.read("nope", 0)
    with pytest.raises(CatalogError):
        r.zone_map("nope", 0)


def test_create_existing_needs_replace_and_versions_advance(db: Database) -> None:
    a, b = pa.table({"x": [1, 2, 3]}), pa.table({"y": ["p", "q"]})
    assert _write(db, "t", a) == 1
    with pytest.raises(CatalogError, match="already exists"):
        db.create_table("t", schema_of(a))
    snapshot = db.table("t")
    assert _write(db, "t", b, replace=True) == 2
    assert assert_tables_equal(db.table("t").arrow(), b) == 2
    # the older snapshot still reads its own version
    assert assert_tables_equal(snapshot.arrow(), a) == 3
    assert _write(db, "t", a, replace=True) == 3
    # versions older than the previous one are removed
    entries = sorted(e for e in os.listdir(os.path.join(db.path, "tables", "t")) if e.startswith("v"))
    assert entries == ["v2", "v3"]


def test_abort_leaves_nothing(db: Database) -> None:
    before = sorted(os.listdir(os.path.join(db.path, "tables")))
    t = pa.table({"x": list(range(100))})
    with pytest.raises(RuntimeError):
        with db.create_table("t", schema_of(t), rows_per_page=10) as w:
            w.append_arrow(t)
            raise RuntimeError("boom")
    assert not db.has_table("t")
    assert sorted(os.listdir(os.path.join(db.path, "tables"))) == before
    # aborting a replacement keeps the old version
    _write(db, "t", t)
    w = db.create_table("t", schema_of(t), replace=True)
    w.append_arrow(t.slice(0, 5))
    w.abort()
    assert db.table("t").num_rows == 100 and db.table("t").version == 1
    assert sorted(os.listdir(os.path.join(db.path, "tables", "t"))) == ["CURRENT", "LOCK", "v1"]  # LOCK: the writers' lock file


def test_drop_table(db: Database) -> None:
    _write(db, "t", pa.table({"x": [1]}))
    db.drop_table("t")
    assert db.tables() == [] and not db.has_table("t")
    # only the dropped table's highest version number stays (a new "t" numbers its versions above it)
    assert os.listdir(os.path.join(db.path, "tables")) == [".top-version-t"]
    with pytest.raises(CatalogError, match="unknown table"):
        db.drop_table("t")


def test_bad_names_and_schemas(db: Database) -> None:
    for name in ("", "../x", "a/b", ".hidden"):
        with pytest.raises(CatalogError):
            db.create_table(name, [ColumnSpec("a", T.INT32)])
    with pytest.raises(CatalogError, match="duplicate"):
        db.create_table("t", [ColumnSpec("a", T.INT32), ColumnSpec("a", T.INT64)])
    with db.create_table("t", [ColumnSpec("a", T.INT32, nullable=False)]) as w:
        with pytest.raises(InputError, match="missing"):
            w.append_arrow(pa.table({"b": [1]}))
        with pytest.raises(InputError, match="NOT NULL"):
            w.append_arrow(pa.table({"a": [1, None]}))
        w.append_arrow(pa.table({"a": pa.array([7], pa.int64())}))
        with pytest.raises(InputError, match="'a'"):
            w.append_arrow(pa.table({"a": pa.array([2**40], pa.int64())}))
    assert db.table("t").arrow().column("a").to_pylist() == [7]


def test_bytes_on_disk_and_page_alignment(db: Database) -> None:
    t = pa.table({"x": list(range(10000)), "s": [str(i % 10) for i in range(10000)]})
    _write(db, "t", t, rows_per_page=3000)
    r = db.table("t")
    total = 0
    for rg in range(r.num_row_groups):
        loc = r.page_location("x", rg)
        assert loc.offset % 4096 == 0 and loc.padded_length % 4096 == 0 and loc.length <= loc.padded_length
        # no NULLs: the page is the (encoded) value array
        assert r.decoded_bytes("x", rg) == r.row_group_rows(rg) * 8 and r.page_codec("x", rg) == "delta"
        total += loc.padded_length
    assert r.bytes_on_disk("x") == total == os.path.getsize(r.page_location("x", 0).path)
    assert r.bytes_on_disk() > r.bytes_on_disk("x") + r.bytes_on_disk("s")


def test_empty_table(db: Database) -> None:
    t = pa.table({"x": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    _write(db, "t", t)
    r = db.table("t")
    assert r.num_rows == 0 and r.num_row_groups == 0
    assert list(r.scan()) == []
    out = r.arrow()
    assert out.num_rows == 0 and out.schema.names == ["x", "s"]
    assert out.schema.field("s").type == pa.string()


def test_table_sees_commits_and_drops_of_another_database_object(db: Database) -> None:
    """table() answers from two stats while CURRENT and the manifest are the files it read last; a
    commit (a new CURRENT), a drop and a re-create through another Database object of the same
    directory (as another process would) are each seen by the next call."""
    _write(db, "t", pa.table({"a": [1, 2]}))
    first = db.table("t")
    assert db.table("t") is first and first.num_rows == 2
    other = Database.open(db.path)
    _write(other, "t", pa.table({"a": [1, 2, 3]}), replace=True)
    second = db.table("t")
    assert second is not first and second.version == first.version + 1 and second.num_rows == 3
    other.drop_table("t")
    with pytest.raises(CatalogError, match="unknown table"):
        db.table("t")
    _write(other, "t", pa.table({"a": [7]}))
    assert db.table("t").num_rows == 1


def test_another_database_object_checks_versions_by_stat_and_sees_every_commit_and_drop(db: Database,
                                                                                     monkeypatch) -> None:
    """A second Database object of the same path (a fresh connection's) takes the first's view of a table's
    committed version while CURRENT and the manifest are the same files (no CURRENT read), and still sees
    a commit, a replacement and a drop made through the first."""
    from hetdb.storage import versions

    _write(db, "t", pa.table({"a": [1, 2]}))
    first = db.table("t")
    other = Database.open(db.path)
    reads = []
    orig = versions.read_current
    monkeypatch.setattr(versions, "read_current", lambda *a: reads.append(a) or orig(*a))
    assert other.table("t") is first and other.table_identity("t") == db.table_identity("t")
    assert reads == []
    with db.append_table("t", 1) as w:
        w.append_arrow(pa.table({"a": [3]}))
    assert other.table("t").version == first.version + 1 and other.table("t").num_rows == 3
    assert other.table_identity("t") == db.table_identity("t") != (first.version, 0, 0, 0)
    v = _write(db, "t", pa.table({"a": [7]}), replace=True)
    assert other.table("t").version == v and other.table("t").num_rows == 1
    db.drop_table("t")
    with pytest.raises(CatalogError, match="unknown table 't'"):
        other.table("t")
    with pytest.raises(CatalogError, match="unknown table 't'"):
        other.table_identity("t")


def test_table_and_identity_is_one_stat_while_current_and_sees_commits_and_drops(db: Database,
                                                                                  monkeypatch) -> None:
    """Database.table_and_identity (a shared plan's check and readers): one stat of CURRENT while it is
    the file seen last, by this or another Database object of the path; a commit, a replacement and a
    drop through another object are seen."""
    import hetdb.storage.database as dbmod

    _write(db, "t", pa.table({"a": [1, 2]}))
    first = db.table("t")
    other = Database.open(db.path)
    stats = []
    orig = dbmod._file_identity
    monkeypatch.setattr(dbmod, "_file_identity", lambda p: stats.append(p) or orig(p))
    assert other.table_and_identity("t") == (first, db.table_identity("t"))
    assert len(stats) == 1 + 2  # (its own check; table_identity's two)
    with db.append_table("t", 1) as w:
        w.append_arrow(pa.table({"a": [3]}))
    reader, identity = other.table_and_identity("t")
    assert reader.version == first.version + 1 and reader.num_rows == 3 and identity == db.table_identity("t")
    _write(db, "t", pa.table({"a": [7]}), replace=True)
    reader, identity = other.table_and_identity("t")
    assert reader.num_rows == 1 and identity == db.table_identity("t")
    db.drop_table("t")
    with pytest.raises(CatalogError, match="unknown table 't'"):
        other.table_and_identity("t")
