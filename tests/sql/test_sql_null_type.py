"""A bare NULL has DuckDB's NULL type: an Arrow null column in results, kept where the value passes
through unchanged (CASE, coalesce, min/max, lag, VALUES, subqueries, GROUP BY keys, UNION of NULLs),
a concrete type where computed (-NULL, NULL + 1, count(NULL)) or stored (CREATE TABLE AS: INTEGER)."""

from __future__ import annotations

import duckdb
import pytest

import hetdb

QUERIES = [
    "SELECT NULL, NULL AS x",
    "SELECT * FROM (SELECT NULL AS x, 1 AS y)",
    "SELECT NULL UNION ALL SELECT NULL",
    "SELECT NULL UNION ALL SELECT 1",
    "SELECT CASE WHEN true THEN NULL END, coalesce(NULL, NULL), NULL + 1, -NULL, NULL IS NULL, max(NULL), "
    "count(NULL), min(NULL), sum(NULL), first(NULL), CAST(NULL AS VARCHAR)",
    "SELECT x FROM (SELECT NULL AS x) GROUP BY x",
    "SELECT DISTINCT NULL",
    "SELECT nullif(NULL, NULL), ifnull(NULL, NULL), NULL = NULL, NULL AND true",
    "WITH t AS (SELECT NULL AS x) SELECT x, x IS NULL, typeof(x) FROM t",
    "SELECT lag(NULL) OVER (), row_number() OVER (), sum(NULL) OVER () FROM range(2)",
    "SELECT typeof(NULL), typeof(CASE WHEN true THEN NULL END)",
    "SELECT NULL FROM range(3) WHERE false",
    "SELECT * FROM (VALUES (NULL, NULL)) t(x, y)",
    "SELECT * FROM (VALUES (NULL), (1)) t(x)",
    "SELECT upper(NULL), length(NULL), substring(NULL, 1, 2), NULL LIKE 'a%', lower(x) FROM (SELECT NULL AS x)",
    "SELECT NULL + 2.5, NULL * 2.5, 2.5 * NULL, NULL % 2.5, NULL || 'a', 'a' || NULL, concat(NULL, 'a'), abs(NULL), "
    "round(NULL), NULL + 1, CAST(NULL AS INTEGER) * 2.5, x * 2.5, x || 'a' FROM (SELECT NULL AS x)",
    "SELECT 7.5 // 2, 7.5 // 2.5, -7.5 // 2, 7 // 2.5, CAST(7.5 AS DECIMAL(10,2)) // 2, NULL // 2.5, 7 // 2, -7 // 2",
]


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    with hetdb.connect(str(tmp_path_factory.mktemp("nulltype") / "db")) as c:
        yield c


@pytest.mark.parametrize("sql", QUERIES)
def test_bare_null_types_and_values_as_duckdb(con, sql) -> None:
    want = duckdb.sql(sql).to_arrow_table()
    got = con.sql(sql).arrow()
    assert got.num_rows == want.num_rows
    assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types]
    assert got.to_pylist() == want.to_pylist()


def test_a_stored_bare_null_is_an_integer(con) -> None:
    con.execute("CREATE TABLE nt AS SELECT NULL AS x, 1 AS y")
    con.execute("INSERT INTO nt SELECT NULL, NULL")
    got = con.sql("SELECT x, typeof(x) FROM nt").fetchall()
    assert got == [(None, "INTEGER"), (None, "INTEGER")]
    assert str(con.sql("SELECT * FROM nt").arrow().schema.field("x").type) == "int32"
