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
