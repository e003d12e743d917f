"""The per-connection plan cache: a repeated query skips planning, a new table version re-plans,
EXPLAIN ANALYZE says which happened."""

from __future__ import annotations

import pyarrow as pa

import hetdb
from hetdb import types as T
from hetdb.storage import ColumnSpec, Database


def _table(db: Database, values: list[int]) -> None:
    with db.create_table("t", [ColumnSpec("x", T.INT64, False)], replace=db.has_table("t")) as w:
        w.append_arrow(pa.table({"x": pa.array(values, pa.int64())}))


def test_plans_are_reused_until_a_table_changes(tmp_path) -> None:
    db = Database.open(str(tmp_path / "db"), create=True)
    _table(db, [1, 2, 3])
    sql = "select sum(x) as s, count(*) as n from t where x > 1"
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con:
        first = con.sql(sql)
        assert first.stats["plan_cached"] is False
        again = con.sql(sql)
        assert again.stats["plan_cached"] is True
        assert again.arrow().to_pylist() == first.arrow().to_pylist() == [{"s": 5, "n": 2}]
        assert "plan from the plan cache" in con.explain(sql, analyze=True)
        _table(Database.open(str(tmp_path / "db")), [5, 6, 7, 8])  # a new committed version
        changed = con.sql(sql)
        assert changed.stats["plan_cached"] is False
        assert changed.arrow().to_pylist() == [{"s": 26, "n": 4}]
        assert con.sql(sql).stats["plan_cached"] is True
        other = con.sql("select count(*) as n from t")
        assert other.stats["plan_cached"] is False and other.arrow().to_pylist() == [{"n": 4}]


def test_a_fresh_connection_reuses_the_plan_of_another(tmp_path) -> None:
    """Connections of one process share plans (exec/plan_cache.py) while the tables are unchanged."""
    db = Database.open(str(tmp_path / "db"), create=True)
    _table(db, [1, 2, 30])
    sql = "select max(x) as m, count(*) as n from t"
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as a:
        assert a.sql(sql).stats["plan_cached"] is False
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as b:
        got = b.sql(sql)
        assert got.stats["plan_cached"] is True and got.arrow().to_pylist() == [{"m": 30, "n": 3}]
    # another schema under the same name: the shared plan no longer applies
    with db.create_table("t", [ColumnSpec("x", T.STRING, False)], replace=True) as w:
        w.append_arrow(pa.table({"x": pa.array(["30", "4"])}))
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as c:
        got = c.sql(sql)
        assert got.stats["plan_cached"] is False and got.arrow().to_pylist() == [{"m": "4", "n": 2}]
    # options that change the plan are part of the key
    with hetdb.connect(str(tmp_path / "db"), device="cpu", zone_maps=False) as d:
        assert d.sql(sql).stats["plan_cached"] is False


def test_a_registered_object_shadows_a_shared_plan(tmp_path) -> None:
    db = Database.open(str(tmp_path / "db"), create=True)
    _table(db, [1, 2, 3])
    sql = "select count(*) as n from t"
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as a:
        assert a.sql(sql).arrow().to_pylist() == [{"n": 3}]
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as b:
        b.register("t", pa.table({"x": pa.array(range(10))}))
        assert b.sql(sql).arrow().to_pylist() == [{"n": 10}]
        b.unregister("t")
        assert b.sql(sql).arrow().to_pylist() == [{"n": 3}]


def test_fresh_connections_see_commits_through_the_shared_plan(tmp_path) -> None:
    """Fresh connections per query (the warm benchmark's way) take the shared plan and its readers
    while the table is unchanged, and read every commit made meanwhile through another connection."""
    path = str(tmp_path / "db")
    _table(Database.open(path, create=True), [1, 2, 3])
    sql = "select max(x) as m, count(*) as n from t"
    for i, (write, values) in enumerate(((False, [1, 2, 3]), (False, [1, 2, 3]), (True, [10]), (False, [10]),
                                         (True, [4, 5]), (False, [4, 5]))):
        if write:
            _table(Database.open(path), values)
        with hetdb.connect(path, device="cpu") as con:
            got = con.sql(sql)
            assert got.arrow().to_pylist() == [{"m": max(values), "n": len(values)}]
            assert got.stats["plan_cached"] is not (write or i == 0)
    with hetdb.connect(path, device="cpu") as con:
        con.sql("insert into t values (100)")
    with hetdb.connect(path, device="cpu") as con:
        assert con.sql(sql).arrow().to_pylist() == [{"m": 100, "n": 3}]


def test_equal_options_are_one_object_per_process(tmp_path) -> None:
    """Connections with equal options share one Options object (memos keyed by it hold across fresh
    connections); 1 and True, equal in Python, stay apart."""
    path = str(tmp_path / "db")
    Database.open(path, create=True)
    with hetdb.connect(path, device="cpu") as a, hetdb.connect(path, device="cpu") as b:
        assert a.options is b.options
    with hetdb.connect(path, device="cpu", zone_maps=False) as c, hetdb.connect(path, device="cpu", zone_maps=0) as d:
        assert c.options == d.options and c.options is not d.options
        assert d.options.zone_maps == 0 and d.options.zone_maps is not False
