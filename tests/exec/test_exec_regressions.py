"""Regressions of the executor and optimizer found by the differential suites, plus the SQL features
added with them (RIGHT/FULL joins, UNION, math functions), each checked against DuckDB."""

from __future__ import annotations

import pyarrow as pa
import pytest
from exec_plan_helpers import check

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.config import Options
from hetdb.exec.engine import QueryEngine
from hetdb.plan import cardinality
from hetdb.plan.expr import Field
from hetdb.plan.logical import Scan
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

CONFIGS = [{}, {"batch_rows": 7, "threads": 2}]


def _sql(db, sql: str, **opts) -> pa.Table:
    engine = QueryEngine(db, CpuBackend(), Options(**opts))
    try:
        table, _ = engine.execute(sql)
    finally:
        engine.close()
    assert engine.memory.used == 0
    return table


@pytest.mark.parametrize("opts", CONFIGS, ids=["default", "batch7"])
@pytest.mark.parametrize("sql", [
    "select f.k, f.a, d.s from fact f right join dim d on f.a = d.a",
    "select f.k, f.a, d.s from fact f full join dim d on f.a = d.a",
    "select f.k, d.a, d.b from fact f full outer join dim d on f.a = d.a and f.d > 0 and d.b <> 'fig'",
    "select f.k, d.a from fact f right join dim d on f.a = d.a and f.c > 100 and d.s < 's5'",
    # a filter above a RIGHT/FULL join must not move into the NULL-extended side
    "select f.k, d.a from fact f right join dim d on f.a = d.a where f.d > 10 or f.d is null",
    "select f.k, d.a from fact f full join dim d on f.a = d.a where d.s is null",
    "select count(*), count(f.a), count(d.a) from fact f full join dim d on f.a < d.a - 39",
    "select k, a, s from fact left join dim using (a)",
])
def test_outer_joins_match_duckdb(db, duck, sql, opts) -> None:
    check(_sql(db, sql, **opts), duck, sql)


@pytest.mark.parametrize("opts", CONFIGS, ids=["default", "batch7"])
@pytest.mark.parametrize("sql,ordered", [
    ("select a, b from fact union all select a, b from dim", False),
    ("select a from fact union select a from dim", False),
    ("select b from fact union select s from dim union all select 'zz'", False),
    ("select c from fact union all select a from dim", False),
    ("select a as x, k from fact where k < 20 union all select a, 0 from dim order by 1 desc, 2 limit 12",
     True),
    ("select count(*), sum(a) from (select a from fact union all select a from dim) u", False),
    ("select k from fact where a in (select a from dim union select 40)", False),
])
def test_union_matches_duckdb(db, duck, sql, ordered, opts) -> None:
    check(_sql(db, sql, **opts), duck, sql, ordered=ordered)


@pytest.mark.parametrize("sql", [
    "select sqrt(abs(d)), ln(k + 1), exp(a / 10), power(a, 2), pow(d, 2), a ** 0.5 from fact",
    "select round(c), round(c, 1), round(c, -2), round(d), round(d, 2), round(d, -1), round(a, -1) from fact",
    "select floor(c), ceil(c), floor(d), ceil(d), floor(a), ceil(a) from fact",
    "select greatest(a, k), least(a, d), greatest(c, 1), least(a, null), abs(c), abs(a) from fact",
    "select count(*) from fact where sqrt((a - 20) * (a - 20) + (d - 3) * (d - 3)) < 10",
])
def test_math_functions_match_duckdb(db, duck, sql) -> None:
    check(_sql(db, sql), duck, sql)


def test_sort_treats_all_nulls_as_equal(db, duck) -> None:
    # Values under NULL used to leak into the sort key, splitting the NULL group of the first key
    # and breaking the order of the second.
    sql = "select b, a, count(*) as n from fact group by b, a order by b desc nulls last, n, a nulls first"
    check(_sql(db, sql), duck, sql, ordered=True)
    sql = "select b, k from fact order by b nulls first, k limit 50"
    check(_sql(db, sql, batch_rows=7), duck, sql, ordered=True)


def test_cardinality_sample_of_plain_strings_over_row_groups(tmp_path) -> None:
    # Strings whose pages do not share one dictionary used to keep only the first page in the
    # estimator's sample while other columns kept every page: a batch of columns of different
    # lengths (ValueError in every query whose join order was estimated).
    db = Database.open(str(tmp_path / "db"), create=True)
    n = 1000
    table = pa.table({"i": pa.array(range(n), pa.int64()),
                      "s": pa.array([f"row {i} " + "x" * (i % 37) for i in range(n)], pa.string())})
    with db.create_table("t", [ColumnSpec("i", T.INT64, False), ColumnSpec("s", T.STRING, False)],
                         rows_per_page=300) as w:
        w.append_arrow(table)
    fields = (Field("i#1", "i", T.INT64, False), Field("s#2", "s", T.STRING, False))
    got = cardinality._sample(db, Scan("t", fields, ("i", "s")))
    assert got is not None
    batch, rows, total = got
    assert total == n and rows == batch.num_rows >= 300  # at least the first row group
    assert all(len(c) == rows for c in batch.columns.values())
