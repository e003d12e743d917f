"""Compiled CPU pipelines (exec/compiled_cpu.py) on NULL-rich data: the same queries with the
compiled loop and operator at a time (cpu_compile=False) against DuckDB, with EXPLAIN ANALYZE
showing which pipelines were compiled; overflow raises the operators' error; the generated source
is cached on disk."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402

import hetdb  # noqa: E402
from hetdb.errors import OutOfRangeError  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402

QUERIES = {
    "inner_non_unique": "SELECT f.a, count(*), sum(f.c), min(f.d), max(f.e), avg(f.a) FROM fact f "
                        "JOIN dim d ON f.a = d.a GROUP BY f.a",
    "null_filter_string_key": "SELECT b, count(*), sum(d) FROM fact WHERE a IS NULL OR d > 0 GROUP BY b",
    "semi": "SELECT count(*), sum(c) FROM fact f WHERE EXISTS (SELECT 1 FROM dim d WHERE d.a = f.a)",
    "anti": "SELECT b, count(*) FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.a = f.a) GROUP BY b",
    "payload_string_key": "SELECT d.s, count(*), sum(f.c), min(f.c), max(f.a) FROM fact f JOIN dim d ON f.a = d.a "
                          "GROUP BY d.s",
    "many_groups": "SELECT k, a, sum(d), count(d) FROM fact WHERE a IS NOT NULL OR d < 0 GROUP BY k, a",
    "like_lookup": "SELECT e, count(*) FROM fact WHERE b LIKE '%an%' GROUP BY e",
    "string_in_and_not": "SELECT a, count(*) FROM fact WHERE b IN ('fig', 'grape') OR NOT (b <> 'apple') GROUP BY a",
    "case_coalesce": "SELECT coalesce(a, -1) AS g, sum(CASE WHEN d > 0 THEN c END), count(*) FROM fact GROUP BY 1",
    "extract_year": "SELECT extract(year FROM e) AS y, count(*), sum(a) FROM fact WHERE a IS NULL OR a > 20 "
                    "GROUP BY 1",
    "arithmetic": "SELECT a % 3 IS NULL AS n, sum(c * 2 - a), sum(d / 4), min(d * -1), count(*) FROM fact "
                  "WHERE c BETWEEN -500 AND 700 GROUP BY 1",
    "in_list_nulls": "SELECT count(*), count(a) FROM fact WHERE a IN (1, 2, 3, NULL) OR a NOT IN (4, NULL)",
    "float_nan_keys": "SELECT d > 0 AS pos, max(d), min(d), count(*) FROM fact GROUP BY 1",
    "no_rows": "SELECT a, sum(c) FROM fact WHERE a > 1000 GROUP BY a",
    "global_no_rows": "SELECT sum(c), count(*), min(d) FROM fact WHERE a > 1000",
    # never-NULL arguments share one row counter (min/max must see a group's first row)
    "shared_row_counter": "SELECT k > 1500 AS g, count(k), min(k), max(k), sum(k), count(*) FROM fact GROUP BY 1",
    "null_and_zero_keys": "SELECT a, count(*), sum(c), min(e) FROM fact WHERE a IS NULL OR a < 3 GROUP BY a",
    # leading filters through the selection loop: NULLs, a dictionary lookup, a projection
    "selection_global": "SELECT count(*), sum(c), min(d), max(a) FROM fact "
                        "WHERE a BETWEEN 5 AND 30 AND d > -10 AND b IN ('fig', 'apple', 'date')",
    "selection_then_probe": "SELECT d.s, count(*), sum(f.c) FROM fact f JOIN dim d ON f.a = d.a "
                            "WHERE f.k < 2500 AND f.d < 20 AND d.b IS NOT NULL GROUP BY d.s",
    # probes ordered by the share of rows they let through (the anti join's build keeps most rows)
    # residual conditions: inner (unique and non-unique builds), semi and anti joins
    "inner_residual": "SELECT f.a, count(*), sum(f.c) FROM fact f JOIN dim d ON f.a = d.a AND f.k - 3 * f.a > d.a * 40 "
                      "GROUP BY f.a",
    "semi_residual": "SELECT count(*), sum(c) FROM fact f WHERE EXISTS (SELECT 1 FROM dim d WHERE d.a = f.a "
                     "AND d.a * 50 + length(d.s) > f.k - f.a)",
    "anti_residual": "SELECT b, count(*) FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.a = f.a "
                     "AND d.a + f.d > 20) GROUP BY b",
    # left joins (non-unique build with NULL keys): rows without a match go on with NULL payload
    "left_aggregate": "SELECT d.s, count(*), count(d.b), sum(f.c), min(d.a) FROM fact f LEFT JOIN dim d ON f.a = d.a "
                      "WHERE f.k < 2000 GROUP BY d.s",
    "left_unique": "SELECT u.a IS NULL AS missing, count(*), sum(f.c) FROM fact f LEFT JOIN "
                   "(SELECT DISTINCT a FROM dim WHERE a < 20) u ON f.a = u.a GROUP BY 1",
    "semi_anti_order": "SELECT e, count(*) FROM fact f WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE d.a = f.a "
                       "AND d.s <> 's3') AND EXISTS (SELECT 1 FROM dim d WHERE d.a = f.a AND d.b = 'fig') "
                       "AND f.k > 10 GROUP BY e",
}


def _agg_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "HashAggregate" in line]


@pytest.mark.parametrize("options", [{}, pytest.param({"threads": 3, "batch_rows": 7}, marks=pytest.mark.slow)],
                         ids=["default", "threads3"])
def test_compiled_cpu_matches_operators_and_duckdb(db, duck, options) -> None:
    compiled, compared = 0, 0
    with hetdb.connect(db.path, device="cpu", **options) as con, \
            hetdb.connect(db.path, device="cpu", cpu_compile=False, **options) as ops:
        for name, sql in QUERIES.items():
            got = con.sql(sql).arrow()
            expected = duck.sql(sql).arrow()
            expected = expected.read_all() if hasattr(expected, "read_all") else expected
            diff = mismatch(got, expected, ())
            assert diff is None, f"{name}: {diff}\n{con.explain(sql, analyze=True)}"
            assert mismatch(got, ops.sql(sql).arrow(), ()) is None, name
            compared += 1
            compiled += any(CPU_COMPILED in line for line in _agg_lines(con.explain(sql, analyze=True)))
            assert not any(CPU_COMPILED in line for line in _agg_lines(ops.explain(sql, analyze=True))), name
    assert compared == len(QUERIES)
    assert compiled >= len(QUERIES) - 3, compiled


def test_explain_analyze_names_the_compiled_loop_and_the_refusal(db) -> None:
    with hetdb.connect(db.path, device="cpu") as con:
        text = con.explain("SELECT b, sum(c) FROM fact WHERE a > 3 GROUP BY b", analyze=True)
        assert any(CPU_COMPILED in line for line in _agg_lines(text)), text
        # DISTINCT aggregates keep the rows: the compiler refuses and says why
        text = con.explain("SELECT b, count(DISTINCT a) FROM fact GROUP BY b", analyze=True)
        lines = _agg_lines(text)
        assert lines and all(CPU_COMPILED not in line for line in lines), text
        assert any("operator at a time: DISTINCT aggregates are not compiled" in line for line in lines), text


def test_overflow_raises_the_operators_error(tmp_path) -> None:
    sql = "SELECT g, sum(x * y) FROM t GROUP BY g"
    messages = []
    for compile_ in (True, False):
        with hetdb.connect(str(tmp_path / f"db{compile_}"), device="cpu", cpu_compile=compile_) as con:
            con.execute("CREATE TABLE t (g INTEGER, x INTEGER, y INTEGER)")
            con.execute("INSERT INTO t VALUES (1, 2, 3), (2, 2000000000, 2), (NULL, 5, NULL)")
            with pytest.raises(OutOfRangeError) as e:
                con.sql(sql).arrow()
            messages.append(str(e.value))
            text = con.explain("SELECT g, sum(x * y) FROM t WHERE x < 100 GROUP BY g", analyze=True)
            assert (CPU_COMPILED in text) == compile_, text
    assert messages[0] == messages[1]
    assert "Overflow in multiplication of INT32" in messages[0]


def test_generated_source_is_cached_on_disk(tmp_path, monkeypatch, db) -> None:
    monkeypatch.setenv("HETDB_KERNEL_CACHE", str(tmp_path))
    with hetdb.connect(db.path, device="cpu") as con:
        con.sql("SELECT a, max(d) - min(d), count(*) FROM fact WHERE k > 1234 GROUP BY a").arrow()
    files = list((tmp_path / "cpu").glob("hetdb_cpu_pipeline_*.py"))
    assert files, list(tmp_path.rglob("*"))
    assert all("@njit(nogil=True, cache=True" in f.read_text() for f in files)


def test_right_semi_and_anti_joins_mark_build_rows_in_the_loop(tmp_path) -> None:
    """EXISTS / NOT EXISTS over a large inner table hashes the small outer one (right semi / anti
    join): the loop over the big table marks the build rows; NULL keys on both sides."""
    import duckdb
    import pyarrow as pa

    from hetdb import types as T
    from hetdb.storage import Database
    from hetdb.storage.format import ColumnSpec

    rng = np.random.default_rng(5)
    n = 200_000
    big_k = rng.integers(0, 30000, n)
    big = pa.table({"k": pa.array(big_k, pa.int32(), mask=rng.random(n) < 0.05),
                    "v": pa.array(rng.integers(-100, 100, n), pa.int64())})
    small = pa.table({"id": pa.array(np.arange(0, 4000, 2), pa.int32(), mask=np.arange(2000) % 97 == 0),
                      "g": pa.array(np.arange(2000) % 7, pa.int32())})
    database = Database.open(str(tmp_path / "db"), create=True)
    duck = duckdb.connect()
    for name, table in {"big": big, "small": small}.items():
        with database.create_table(name, [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema],
                                   rows_per_page=4096) as w:
            w.append_arrow(table)
        duck.register(name, table)
    queries = ["SELECT g, count(*) FROM small s WHERE EXISTS (SELECT 1 FROM big b WHERE b.k = s.id AND b.v > -40) "
               "GROUP BY g",
               "SELECT g, count(*), sum(id) FROM small s WHERE NOT EXISTS "
               "(SELECT 1 FROM big b WHERE b.k + 1 = s.id + 1 AND b.v < 50) GROUP BY g",
               # residual conditions over both sides (TPC-H q21's shape)
               "SELECT g, count(*) FROM small s WHERE EXISTS (SELECT 1 FROM big b WHERE b.k = s.id AND b.v - 3 * s.g > 10)"
               " GROUP BY g",
               "SELECT g, count(*) FROM small s WHERE NOT EXISTS (SELECT 1 FROM big b WHERE b.k = s.id "
               "AND b.v + s.g > 90) GROUP BY g"]
    marked, texts = 0, []
    with hetdb.connect(str(tmp_path / "db"), device="cpu") as con, \
            hetdb.connect(str(tmp_path / "db"), device="cpu", cpu_compile=False) as ops:
        for sql in queries:
            got = con.sql(sql).arrow()
            expected = duck.sql(sql).to_arrow_table()
            assert got.num_rows > 0
            assert mismatch(got, expected, ()) is None, f"{sql}\n{con.explain(sql, analyze=True)}"
            assert mismatch(got, ops.sql(sql).arrow(), ()) is None, sql
            texts.append(text := con.explain(sql, analyze=True))
            marked += any("HashProbe right_" in line and "marking the build rows" in line and CPU_COMPILED in line
                          for line in text.splitlines())
    assert marked == len(queries), "\n".join(texts)


def test_sorted_group_key_is_grouped_by_key_runs(tmp_path) -> None:
    """A table sorted by its group key (lineitem by l_orderkey) is grouped by key runs, with no hash
    table: a key cut by a page boundary, pages with a NULL key or out of order (hashed instead),
    filters, a non-unique join and several threads, against DuckDB and the operators."""
    import duckdb
    import pyarrow as pa

    from hetdb import types as T
    from hetdb.storage import Database
    from hetdb.storage.format import ColumnSpec

    rng = np.random.default_rng(9)
    n = 60_000
    key = np.sort(rng.integers(0, 9000, n))
    key[30_000:31_000] = rng.integers(0, 9000, 1000)  # a stretch out of order
    mask = np.zeros(n, bool)
    mask[50_000:50_003] = True  # NULL keys in one page
    fact = pa.table({"k": pa.array(key, pa.int64(), mask=mask),
                     "q": pa.array(rng.integers(-50, 50, n), pa.int32()),
                     "x": pa.array(rng.uniform(-1, 1, n), pa.float64())})
    sorted_fact = fact.slice(0, 30_000)  # every page in order, no NULL: its groups are never merged
    dim = pa.table({"k": pa.array(rng.integers(0, 9000, 4000), pa.int64()),
                    "w": pa.array(rng.integers(0, 10, 4000), pa.int32())})
    database = Database.open(str(tmp_path / "db"), create=True)
    duck = duckdb.connect()
    for name, table in {"fact": fact, "fs": sorted_fact, "dim": dim}.items():
        with database.create_table(name, [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema],
                                   rows_per_page=4096) as w:
            w.append_arrow(table)
        duck.register(name, table)
    queries = ["SELECT k, sum(q), count(*), min(x), max(q) FROM fact GROUP BY k",
               "SELECT k, sum(q) FROM fact WHERE x > 0.2 GROUP BY k HAVING sum(q) > 20",
               "SELECT f.k, sum(f.q * d.w), count(*) FROM fact f JOIN dim d ON f.k = d.k WHERE d.w > 2 GROUP BY f.k"]
    queries += [q.replace("FROM fact", "FROM fs") for q in queries]
    # the in-order table's groups stay one batch per page run (never concatenated): final values
    # per batch (avg) and the batches read by the next pipeline
    queries += ["SELECT k, avg(q), count(*) FROM fs GROUP BY k",
                "SELECT count(*), sum(s), min(k) FROM (SELECT k, sum(q) AS s FROM fs GROUP BY k) t WHERE s > 0"]
    for options in ({}, {"threads": 3}):
        with hetdb.connect(str(tmp_path / "db"), device="cpu", **options) as con, \
                hetdb.connect(str(tmp_path / "db"), device="cpu", cpu_compile=False, **options) as ops:
            for sql in queries:
                got = con.sql(sql).arrow()
                assert got.num_rows > 0
                assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, \
                    f"{sql}\n{con.explain(sql, analyze=True)}"
                assert mismatch(got, ops.sql(sql).arrow(), ()) is None, sql
                text = con.explain(sql, analyze=True)
                assert "grouped by key runs" in text, text


def test_key_run_tables_sized_by_the_groups_earlier_morsels_kept(tmp_path) -> None:
    """Key-run tables after the first morsel are made for the groups per run earlier morsels kept
    (a filter drops most runs in the first pages here, none in the last): the tables that come up
    short grow, and the answers stay DuckDB's, on one worker and several."""
    import pyarrow as pa
    from exec_plan_helpers import duck_tables, stored_tables

    rng = np.random.default_rng(21)
    n = 80_000
    key = np.sort(rng.integers(0, 40_000, n))
    v = np.where(np.arange(n) < n // 2, rng.integers(0, 1000, n), rng.integers(990, 2000, n))
    tables = {"t": pa.table({"k": pa.array(key, pa.int64()), "v": pa.array(v, pa.int64())})}
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    sql = "SELECT k, sum(v), count(*) FROM t WHERE v >= 995 GROUP BY k"
    want = duck.sql(sql).to_arrow_table()
    for threads in (1, 3):
        with hetdb.connect(db.path, device="cpu", threads=threads) as con:
            got = con.sql(sql).arrow()
            assert got.num_rows == want.num_rows > 10_000
            assert mismatch(got, want, ()) is None
            assert "grouped by key runs" in con.explain(sql, analyze=True)
