"""The Python API against DuckDB's: connect(':memory:'), module-level sql/execute, parameters,
register and replacement scans of pandas/Polars/Arrow objects, result methods, PEP 249 cursor."""

from __future__ import annotations

import datetime
import decimal
import os

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import hetdb
from hetdb.errors import HetdbError, SqlError


def _norm(rows):
    return sorted(rows, key=lambda r: tuple((x is None, str(x)) for x in r))


@pytest.fixture
def con():
    c = hetdb.connect(":memory:", device="cpu")
    yield c
    c.close()


def test_memory_database_is_private_and_removed_on_close():
    c = hetdb.connect(":memory:", device="cpu")
    path = c.path
    assert not os.path.exists(":memory:") and os.path.isdir(path)
    c.execute("CREATE TABLE t AS SELECT 1 AS a")
    assert c.sql("SELECT a FROM t").fetchall() == [(1,)]
    c.close()
    assert not os.path.exists(path)
    with pytest.raises(HetdbError, match="closed"):
        c.sql("SELECT 1")


def test_module_level_sql_and_execute():
    assert hetdb.sql("SELECT 41 + 1 AS x").fetchall() == [(42,)]
    assert hetdb.execute("SELECT ? AS a, $2 AS b", [1, "two"]).fetchone() == (1, "two")


@pytest.mark.parametrize("sql,params", [
    ("SELECT ? AS a, ? AS b, ? AS c", [1, "it's", None]),
    ("SELECT $1 AS a, $2 AS b, $1 + 1 AS c", [5, 2.5]),
    ("SELECT $x AS a, $y AS b", {"x": decimal.Decimal("1.25"), "y": datetime.date(2024, 2, 29)}),
    ("SELECT ? AS t, ? AS f", [True, -7.0]),
])
def test_parameters_match_duckdb(con, sql, params):
    got = con.execute(sql, params).fetchall()
    want = duckdb.execute(sql, params).fetchall()
    assert got == want


def test_parameter_count_mismatch_is_an_error(con):
    with pytest.raises(SqlError):
        con.execute("SELECT ? AS a", [1, 2])
    with pytest.raises(SqlError):
        con.execute("SELECT ?, ? AS a", [1])


def _frames():
    import pandas as pd
    import polars as pl

    data = {"k": [1, 2, 2, None, 3], "s": ["a", None, "b", "c", "a"], "f": [1.5, None, -2.0, 3.25, 0.0]}
    arrow = pa.table({"k": pa.array(data["k"], pa.int64()), "s": data["s"], "f": data["f"]})
    return {"pandas": pd.DataFrame(data).astype({"k": "Int64"}), "polars": pl.DataFrame(data), "arrow": arrow}


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow"])
def test_register_and_replacement_scan_match_duckdb(con, kind):
    pytest.importorskip("pandas")
    pytest.importorskip("polars")
    obj = _frames()[kind]
    query = "SELECT s, count(*) AS n, sum(k) AS sk, min(f) AS mf FROM {} GROUP BY s"
    want = _norm(duckdb.sql(query.format("obj")).fetchall())
    assert _norm(con.sql(query.format("obj")).fetchall()) == want      # replacement scan
    con.register("data", obj)
    assert _norm(con.sql(query.format("data")).fetchall()) == want
    con.unregister("data")
    with pytest.raises(HetdbError):
        con.sql("SELECT * FROM data")


def test_registered_name_shadows_a_cached_table_plan(con):
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    assert con.sql("SELECT a FROM t").fetchall() == [(1,)]
    con.register("t", pa.table({"a": [7, 8]}))
    assert sorted(con.sql("SELECT a FROM t").fetchall()) == [(7,), (8,)]
    con.unregister("t")
    assert con.sql("SELECT a FROM t").fetchall() == [(1,)]


def test_arrow_reader_and_dataset(con, tmp_path):
    t = pa.table({"x": list(range(10)), "y": [str(i % 3) for i in range(10)]})
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=3))
    con.register("r", reader)
    assert con.sql("SELECT sum(x) AS s FROM r").fetchall() == [(45,)]
    pq.write_table(t, tmp_path / "a.parquet")
    pq.write_table(t, tmp_path / "b.parquet")
    dset = ds.dataset(str(tmp_path), format="parquet")  # noqa: F841 - found by its name
    assert _norm(con.sql("SELECT y, count(*) AS n FROM dset GROUP BY y").fetchall()) == \
        _norm(duckdb.sql("SELECT y, count(*) AS n FROM dset GROUP BY y").fetchall())


def test_result_methods(con):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    q = "SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y' UNION ALL SELECT 3, CAST(NULL AS VARCHAR)"
    r = con.sql(q)
    d = duckdb.sql(q)
    assert r.description[0][0] == "a" and [x[0] for x in r.description] == [x[0] for x in d.description]
    assert r.fetchone() is not None and len(r.fetchmany(5)) == 2 and r.fetchone() is None
    r = con.sql(q + " ORDER BY a")
    batches = list(r.fetch_record_batch(2))
    assert [b.num_rows for b in batches] == [2, 1]
    r = con.sql(q + " ORDER BY a")
    pd.testing.assert_frame_equal(r.df(), d.order("a").df(), check_dtype=False)
    assert r.pl().equals(pl.from_arrow(duckdb.sql(q + " ORDER BY a").arrow()))
    assert "<table>" in r._repr_html_() and "NULL" in r._repr_html_()
    assert "│" in repr(r)


def test_pep249_cursor(con):
    assert hetdb.apilevel == "2.0" and hetdb.paramstyle == "qmark"
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
    cur.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "y")])
    cur.execute("SELECT a, b FROM t ORDER BY a")
    assert [d[0] for d in cur.description] == ["a", "b"]
    assert list(cur) == [(1, "x"), (2, "y")]
    con.commit()


def test_missing_extra_names_it(con, monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "polars":
            raise ImportError("no polars")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    monkeypatch.delitem(__import__("sys").modules, "polars", raising=False)
    with pytest.raises(ImportError, match=r"hetdb\[polars\]"):
        con.sql("SELECT 1 AS a").pl()
