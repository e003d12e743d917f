"""SQL statements differential against DuckDB: the same statement sequence on both engines, then
the same queries compared (rows, column names, types)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import duckdb
import pytest

import hetdb
from hetdb.errors import CatalogError, HetdbError, UnsupportedError

SEQUENCE = [
    "CREATE TABLE t (id INTEGER, name VARCHAR, price DECIMAL(10,2), d DATE, ok BOOLEAN)",
    "INSERT INTO t VALUES (1, 'a', 1.50, DATE '2024-01-02', true), (2, NULL, -3, NULL, false)",
    "INSERT INTO t (id, name) VALUES (3, 'it''s')",
    "INSERT INTO t SELECT id + 10, upper(name), price * 2, d, ok FROM t WHERE id < 3",
    "CREATE TABLE s AS SELECT id, name FROM t WHERE id > 1",
    "CREATE OR REPLACE TABLE s AS SELECT id * 2 AS id2, name FROM t",
    "CREATE VIEW v AS SELECT name, count(*) AS n FROM t GROUP BY name",
    "CREATE OR REPLACE VIEW v AS SELECT id, price FROM t WHERE price IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS s (x INTEGER)",
    "DROP TABLE IF EXISTS nothing",
    "DROP VIEW IF EXISTS nothing",
]
QUERIES = ["SELECT * FROM t", "SELECT * FROM s", "SELECT * FROM v", "SELECT id, max(price) AS p, count(*) AS n FROM t GROUP BY id"]


def _norm(rows):
    return sorted(rows, key=lambda r: tuple((x is None, str(x)) for x in r))


@pytest.fixture
def con(tmp_path):
    c = hetdb.connect(str(tmp_path / "db"), device="cpu")
    yield c
    c.close()


def test_ddl_dml_sequence_matches_duckdb(con):
    duck = duckdb.connect()
    for st in SEQUENCE:
        con.execute(st)
        duck.execute(st)
    compared = 0
    for q in QUERIES:
        got, want = con.sql(q), duck.sql(q)
        assert _norm(got.fetchall()) == _norm(want.fetchall()), q
        assert got.columns == want.columns, q
        assert got.types == [str(t) for t in want.types], q
        compared += 1
    assert compared == len(QUERIES)
    assert con.sql("SHOW TABLES").fetchall() == duck.sql("SHOW TABLES").fetchall()
    assert con.sql("DESCRIBE t").fetchall() == duck.sql("DESCRIBE t").fetchall()
    for st in ["DROP VIEW v", "DROP TABLE s"]:
        con.execute(st)
        duck.execute(st)
    assert con.sql("SHOW TABLES").fetchall() == duck.sql("SHOW TABLES").fetchall() == [("t",)]


def test_insert_counts_and_versions(con):
    con.execute("CREATE TABLE t (a BIGINT)")
    assert con.execute("INSERT INTO t VALUES (1), (2), (3)").fetchall() == [(3,)]
    v1 = con.table("t")._reader.version
    con.execute("INSERT INTO t SELECT a + 3 FROM t")
    assert con.table("t")._reader.version > v1
    assert sorted(con.sql("SELECT a FROM t").fetchall()) == [(i,) for i in range(1, 7)]


def test_a_table_dropped_and_created_again_is_read_anew(con, tmp_path):
    """The page caches key pages by version directory: a table created again under a dropped one's
    name numbers its versions above the dropped one's, so neither this connection (which cached the
    old pages) nor another one answers from the old table (it returned min 0 here, DuckDB 10000)."""
    other = hetdb.connect(str(tmp_path / "db"), device="cpu")
    duck = duckdb.connect()
    query = "SELECT min(v), max(v), count(*) FROM t"
    for lo in (0, 10_000, 20_000):
        for c in (con, duck):
            c.execute("DROP TABLE IF EXISTS t")
            c.execute(f"CREATE TABLE t AS SELECT range AS v FROM range({lo}, {lo + 10_000})")
        want = duck.execute(query).fetchall()
        assert want == [(lo, lo + 9_999, 10_000)]
        assert con.sql(query).fetchall() == want
        assert other.sql(query).fetchall() == want
    other.close()
    assert con.table("t")._reader.version == 3  # versions 1 and 2 were the dropped tables'


def test_insert_appends_row_groups_and_vacuum_fills_them(con):
    duck = duckdb.connect()
    for c in (con, duck):
        c.execute("CREATE TABLE t (a BIGINT, s VARCHAR, p DECIMAL(10,2))")
        c.execute("INSERT INTO t SELECT 1, 'x', 2.5")
    first = con.table("t")._reader
    for i in range(12):
        st = f"INSERT INTO t VALUES ({i}, 's{i % 3}', {i}.25), ({-i}, NULL, NULL)"
        assert con.execute(st).fetchall() == duck.execute(st).fetchall() == [(2,)]
    r = con.table("t")._reader
    assert r.version == first.version + 12
    # the last INSERT wrote its rows only: the earlier row groups are pages of earlier versions
    own = f"c0000.v{r.version}.col"
    assert [r.page_file("a", g) == own for g in range(r.num_row_groups)] == [False] * (r.num_row_groups - 1) + [True]
    assert 1 < r.num_row_groups <= 6
    q = "SELECT a, s, p FROM t"
    assert _norm(con.sql(q).fetchall()) == _norm(duck.sql(q).fetchall())
    assert con.execute("VACUUM t").fetchall() == []
    assert con.table("t")._reader.num_row_groups == 1
    con.execute("CHECKPOINT")
    assert _norm(con.sql(q).fetchall()) == _norm(duck.sql(q).fetchall())
    with pytest.raises(CatalogError, match="unknown table"):
        con.execute("VACUUM nothing")


def test_errors_are_typed(con):
    con.execute("CREATE TABLE t (a INTEGER NOT NULL)")
    with pytest.raises(CatalogError, match="already exists"):
        con.execute("CREATE TABLE t (b INTEGER)")
    with pytest.raises(HetdbError, match="NOT NULL"):
        con.execute("INSERT INTO t VALUES (NULL)")
    with pytest.raises(HetdbError, match="cannot convert"):
        con.execute("INSERT INTO t VALUES ('x')")
    with pytest.raises(UnsupportedError, match="UPDATE"):
        con.execute("UPDATE t SET a = 1 FROM t AS u")
    with pytest.raises(CatalogError, match="unknown table"):
        con.execute("DROP TABLE nope")
    with pytest.raises(CatalogError, match="unknown option"):
        con.execute("SET nonsense = 1")
    assert con.sql("SELECT count(*) AS n FROM t").fetchall() == [(0,)]


def test_copy_to_parquet_and_csv_round_trip(con, tmp_path):
    con.execute("CREATE TABLE t AS SELECT 1 AS a, 'x,y' AS b UNION ALL SELECT 2, CAST(NULL AS VARCHAR)")
    pq_path, csv_path = tmp_path / "o.parquet", tmp_path / "o.csv"
    assert con.execute(f"COPY t TO '{pq_path}' (FORMAT parquet)").fetchall() == [(2,)]
    con.execute(f"COPY (SELECT a, b FROM t ORDER BY a) TO '{csv_path}' (HEADER, DELIMITER ',')")
    want = duckdb.sql("SELECT 1 AS a, 'x,y' AS b UNION ALL SELECT 2, CAST(NULL AS VARCHAR)").fetchall()
    assert _norm(duckdb.sql(f"SELECT * FROM '{pq_path}'").fetchall()) == _norm(want)
    assert _norm(duckdb.sql(f"SELECT * FROM read_csv('{csv_path}')").fetchall()) == _norm(want)


def test_explain_set_reset_and_multi_statement(con):
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    plan = con.sql("EXPLAIN SELECT a FROM t").fetchall()
    assert plan[0][0] == "physical_plan" and "TableScan t" in plan[0][1]
    analyzed = con.sql("EXPLAIN ANALYZE SELECT a FROM t WHERE a > 0").fetchall()[0][1]
    assert "rows in=" in analyzed
    con.execute("SET threads = 1; SET memory_limit = '64MB'")
    assert con.options.threads == 1 and con.options.host_memory_limit == 64 << 20
    con.execute("RESET threads")
    assert con.options.threads == con._defaults.threads
    assert con.sql("SELECT 1 AS x; SELECT a + 1 AS y FROM t").fetchall() == [(2,)]


def test_summarize_matches_duckdb_min_max_count(con):
    duck = duckdb.connect()
    for c in (con, duck):
        c.execute("CREATE TABLE t AS SELECT 1 AS a, 'p' AS s UNION ALL SELECT 5, CAST(NULL AS VARCHAR) UNION ALL SELECT CAST(NULL AS INTEGER), 'q'")
    got = con.sql("SUMMARIZE t")
    want = duck.sql("SUMMARIZE t")
    assert got.columns == want.columns
    pick = lambda rows: [(r[0], r[1], r[2], r[3], r[10]) for r in rows]  # noqa: E731
    assert pick(got.fetchall()) == pick(want.fetchall())


def test_update_and_delete_match_duckdb(con):
    duck = duckdb.connect()
    steps = ["CREATE TABLE t (a INTEGER, b VARCHAR, c DOUBLE)",
             "INSERT INTO t VALUES (1, 'x', 1.5), (NULL, 'y', 2.5), (3, NULL, NULL), (4, 'z', -1)",
             "UPDATE t SET b = upper(b), c = c * 2 WHERE a >= 3",
             "UPDATE t SET a = 0 WHERE a IS NULL",
             "DELETE FROM t WHERE c > 4 OR b = 'x'",
             "UPDATE t SET c = 7"]
    for st in steps:
        got, want = con.execute(st).fetchall(), duck.execute(st).fetchall()
        assert got == want, st
    q = "SELECT * FROM t"
    assert _norm(con.sql(q).fetchall()) == _norm(duck.sql(q).fetchall())
    assert con.execute("DELETE FROM t").fetchall() == duck.execute("DELETE FROM t").fetchall() == [(3,)]
    assert con.sql("SELECT count(*) AS n FROM t").fetchall() == [(0,)]


@pytest.mark.parametrize("step", ["before_manifest", pytest.param("before_rename", marks=pytest.mark.slow),
                                  "before_current", pytest.param("before_current_rename", marks=pytest.mark.slow)])
def test_insert_killed_at_each_step_leaves_old_or_new(tmp_path, step):
    db = str(tmp_path / "db")
    with hetdb.connect(db, device="cpu") as c:
        c.execute("CREATE TABLE t AS SELECT 1 AS a")
    code = textwrap.dedent(f"""
        import hetdb
        with hetdb.connect({db!r}, device="cpu") as c:
            c.execute("INSERT INTO t VALUES (2), (3)")
    """)
    env = dict(os.environ, HETDB_TEST_KILL_AT=step)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120)
    assert proc.returncode == 137, proc.stderr.decode()
    with hetdb.connect(db, device="cpu") as c:
        rows = sorted(c.sql("SELECT a FROM t").fetchall())
        assert rows in ([(1,)], [(1,), (2,), (3,)])
        c.execute("INSERT INTO t VALUES (4)")  # the next writer cleans up and commits
        assert (4,) in c.sql("SELECT a FROM t").fetchall()
