"""List indexes survive statements whose query hetdb prints back as SQL (CREATE TABLE AS, INSERT ...
SELECT, views): the 1-based index written stays the index used (sql/strict.py keeps it as written),
and lambdas print back in the syntax DuckDB 2.0 accepts."""

from __future__ import annotations

import duckdb

import hetdb

STATEMENTS = [
    "CREATE TABLE t AS SELECT string_split('a,b,c', ',')[2] AS x, [1, 2, 3][1:2][2] AS y",
    "INSERT INTO t SELECT [10, 20][1], [5, 6][-1]",
    "INSERT INTO t SELECT list_extract(['p', 'q'], 2), len([1, 2][2:])",
    "CREATE VIEW v AS SELECT [7, 8, 9][3] AS z, x, list_transform([y], lambda e: e * 2)[1] AS w FROM t",
]


def test_indexes_in_stored_queries_answer_as_duckdb(tmp_path):
    duck = duckdb.connect()
    with hetdb.connect(str(tmp_path / "db")) as con:
        for st in STATEMENTS:
            con.sql(st)
            duck.execute(st)
        for q in ("SELECT * FROM t", "SELECT * FROM v"):
            got, want = sorted(con.sql(q).fetchall()), sorted(duck.sql(q).fetchall())
            assert got == want and len(got) == 3, q
