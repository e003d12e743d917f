"""One query run looks each table up once (exec/snapshot.py): a hot query from the plan cache reads
the catalog only for the plan cache's validity check, and the next query still sees a new commit."""

from __future__ import annotations

import pyarrow as pa

import hetdb
from hetdb import types as T
from hetdb.exec.snapshot import QuerySnapshot
from hetdb.storage import ColumnSpec, Database


class _CountingDb:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.path = "/nowhere"

    def table(self, name: str) -> object:
        self.calls.append(name)
        return ("reader", name, len(self.calls))

    def tables(self) -> list[str]:
        self.calls.append("*")
        return ["a", "b"]


def test_snapshot_answers_each_table_once_and_seeded_ones_never() -> None:
    db = _CountingDb()
    seeded = ("reader", "a", 0)
    snap = QuerySnapshot(db, (("a", seeded),))
    assert snap.table("a") is seeded
    first = snap.table("b")
    assert snap.table("b") is first and snap.tables() == ["a", "b"] == snap.tables()
    assert db.calls == ["b", "*"]
    assert snap.path == "/nowhere" and snap.database is db


def _write(db: Database, name: str, values: list[int], replace: bool = False) -> None:
    with db.create_table(name, [ColumnSpec("k", T.INT64)], replace=replace) as w:
        w.append_arrow(pa.table({"k": pa.array(values, pa.int64())}))


def test_hot_query_looks_tables_up_only_for_the_plan_cache(tmp_path, monkeypatch) -> None:
    path = str(tmp_path / "db")
    db = Database.open(path, create=True)
    _write(db, "t", [1, 2, 3])
    _write(db, "u", [2, 3, 4])
    sql = "select count(*) as n, sum(t.k) as s from t join u on t.k = u.k"
    calls: list[str] = []
    checks: list[str] = []
    real, real_check = Database.table, Database.is_current

    def counting(self, name):
        calls.append(name)
        return real(self, name)

    def counting_check(self, name, reader):
        checks.append(name)
        return real_check(self, name, reader)

    with hetdb.connect(path, device="cpu") as con:
        assert con.sql(sql).fetchall() == [(2, 5)]
        monkeypatch.setattr(Database, "table", counting)
        monkeypatch.setattr(Database, "is_current", counting_check)
        assert con.sql(sql).fetchall() == [(2, 5)]
        # the plan cache's check (one stat of each table's CURRENT); the run itself asks nothing
        assert sorted(checks) == ["t", "u"] and calls == []
        _write(db, "u", [1, 2, 3, 4], replace=True)
        assert con.sql(sql).fetchall() == [(3, 6)]  # a new commit: planned and read again


def test_compressed_cache_decision_memo_follows_commits(tmp_path, monkeypatch) -> None:
    """keep_compressed ("auto") reads the tables only when the catalog stamp (tables directory and
    CURRENT files) changed: a create, a replacing commit and a drop each change its answer."""
    import types

    from hetdb.exec.device import DeviceResources

    db = Database.open(str(tmp_path / "db"), create=True)
    _write(db, "t", [1, 2, 3])  # 24 decoded bytes
    res = types.SimpleNamespace(cache=types.SimpleNamespace(capacity_bytes=100, kept_bytes=lambda: 0),
                                _decoded_db_bytes=None)
    calls: list[str] = []
    real = Database.table
    monkeypatch.setattr(Database, "table", lambda self, name: calls.append(name) or real(self, name))

    def keep() -> bool:
        return DeviceResources.keep_compressed(res, "auto", db)

    assert keep() is False and calls == ["t"]
    assert keep() is False and calls == ["t"]  # nothing changed: no table read
    _write(db, "u", list(range(20)))  # +160 bytes: no longer fits
    assert keep() is True
    _write(db, "u", [1], replace=True)
    assert keep() is False
    db.drop_table("u")
    _write(db, "w", list(range(30)))
    assert keep() is True and res._decoded_db_bytes[1] == 24 + 240


def test_compressed_cache_decision_takes_other_processes_changes_after_a_moment(tmp_path, monkeypatch) -> None:
    """keep_compressed takes the catalog's stamp (a stat per table) again at once after a change by
    this process, and after KEEP_COMPRESSED_TTL_S for a change it cannot know of (another process:
    here a commit whose epoch bump is hidden), not on every query."""
    import types

    from hetdb.exec import device as device_mod
    from hetdb.exec.device import DeviceResources
    from hetdb.storage import versions

    db = Database.open(str(tmp_path / "db"), create=True)
    _write(db, "t", [1, 2, 3])
    res = types.SimpleNamespace(cache=types.SimpleNamespace(capacity_bytes=100, kept_bytes=lambda: 0),
                                _decoded_db_bytes=None)
    clock = [1000.0]
    monkeypatch.setattr(device_mod.time, "monotonic", lambda: clock[0])
    stamps: list[int] = []
    real_stamp = device_mod.catalog_stamp
    monkeypatch.setattr(device_mod, "catalog_stamp", lambda *a: stamps.append(1) or real_stamp(*a))

    def keep() -> bool:
        return DeviceResources.keep_compressed(res, "auto", db)

    assert keep() is False and len(stamps) == 1
    assert keep() is False and len(stamps) == 1  # within the moment: no stat
    epoch = versions.catalog_epoch()
    monkeypatch.setattr(versions, "catalog_epoch", lambda: epoch)  # (as another process's commit)
    _write(db, "u", list(range(20)))
    assert keep() is False and len(stamps) == 1  # not seen yet
    clock[0] += device_mod.KEEP_COMPRESSED_TTL_S
    assert keep() is True and len(stamps) == 2  # seen after the moment
    monkeypatch.setattr(versions, "catalog_epoch", lambda: epoch + 1)  # this process drops a table
    db.drop_table("u")
    assert keep() is False and len(stamps) == 3


def test_a_fresh_connection_takes_the_compressed_cache_decision_memo_of_the_process(tmp_path, monkeypatch) -> None:
    """A second DeviceResources (a fresh connection) on the same database state finds the decoded
    bytes another one computed: no table is read again; a commit reads them again."""
    import types

    from hetdb.exec.device import DeviceResources

    db = Database.open(str(tmp_path / "db"), create=True)
    _write(db, "t", [1, 2, 3])

    def fresh():
        return types.SimpleNamespace(cache=types.SimpleNamespace(capacity_bytes=100, kept_bytes=lambda: 0),
                                     _decoded_db_bytes=None)

    calls: list[str] = []
    real = Database.table
    monkeypatch.setattr(Database, "table", lambda self, name: calls.append(name) or real(self, name))
    first, second = fresh(), fresh()
    assert DeviceResources.keep_compressed(first, "auto", db) is False and calls == ["t"]
    assert DeviceResources.keep_compressed(second, "auto", db) is False and calls == ["t"]
    assert second._decoded_db_bytes == first._decoded_db_bytes
    _write(db, "u", list(range(20)))
    assert DeviceResources.keep_compressed(fresh(), "auto", db) is True and sorted(calls) == ["t", "t", "u"]


def test_is_current_follows_commits_and_drops(tmp_path) -> None:
    """Database.is_current (the plan cache's per-table check): True while CURRENT is the file the
    reader came with; a commit by another Database object of the directory, a drop and a re-create
    each make it False."""
    db = Database.open(str(tmp_path / "db"), create=True)
    _write(db, "t", [1, 2, 3])
    r = db.table("t")
    assert db.is_current("t", r) and db.is_current("t", r)
    other = Database.open(db.path)
    _write(other, "t", [4], replace=True)
    assert not db.is_current("t", r)
    r2 = db.table("t")
    assert db.is_current("t", r2) and r2.num_rows == 1
    other.drop_table("t")
    assert not db.is_current("t", r2)
    _write(other, "t", [5, 6])
    assert not db.is_current("t", r2) and db.table("t").num_rows == 2
