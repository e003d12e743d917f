"""Front-end regressions found by the differential suites: statements DuckDB rejects that sqlglot
accepted, binder crashes, and the constructs added with them (EXCLUDE/REPLACE, GROUP BY ALL, math
functions, RIGHT/FULL joins, UNION)."""

from __future__ import annotations

import duckdb
import pytest

from hetdb import types as T
from hetdb.errors import CatalogError, HetdbError, SqlError, UnsupportedError
from hetdb.plan.logical import Aggregate, Join, Union
from hetdb.sql import bind

# (statement, line, column) of the offending token; column None where no single token is to blame.
REJECTED = [
    ("select sum(lo_revenue) , , lo_tax from lineorder", 1, 26),
    ("select lo_tax from lineorder, , date", 1, 31),
    ("select , lo_tax from lineorder", 1, 8),
    ("select as * from lineorder", 1, 8),
    ("select lo_tax from lineorder where lo_tax < (select as 0.2 * 5)", 1, 53),
    ("select lo_tax case, lo_revenue from lineorder", 1, 15),
    ("select lo_tax year from lineorder", 1, 15),
    ("select lo_tax from lineorder as limit", 1, 33),
    ("select 1e s from lineorder", 1, 8),
    ("select lo_tax from lineorder group by", None, None),
    ("select lo_tax from lineorder join date", 1, 30),
    ("select lo_tax from lineorder left join date", 1, 30),
    ("with t as (select 1 as a), t as (select 2 as a) select * from t", None, None),
]


@pytest.mark.parametrize("sql,line,col", REJECTED)
def test_statements_duckdb_rejects_are_sql_errors(sql_db, sql, line, col) -> None:
    duck = duckdb.connect()
    duck.execute("create table lineorder(lo_tax int, lo_revenue int); create table date(d_year int)")
    with pytest.raises(duckdb.Error):
        duck.execute(sql)
    with pytest.raises(SqlError) as ei:
        bind(sql, sql_db)
    if line is not None:
        assert (ei.value.line, ei.value.column) == (line, col), str(ei.value)


@pytest.mark.parametrize("sql", [
    "select lo_tax as case from lineorder",       # any keyword is fine after AS
    "select lo_tax, from lineorder",              # DuckDB allows a trailing comma
    "select lo_tax from lineorder cross join date limit 1",
    "select 1.5e3, .5, 1. from lineorder limit 1",
    "select lo_tax from lineorder l where lo_tax in (1, 2,)",
])
def test_statements_duckdb_accepts_still_bind(sql_db, sql) -> None:
    assert bind(sql, sql_db).fields


def test_binder_errors_are_typed_and_name_the_construct(sql_db) -> None:
    with pytest.raises(SqlError, match="SUBSTRING needs a start"):
        bind("select substring(c_name) from customer", sql_db)
    with pytest.raises(HetdbError):
        bind("select 1e from customer", sql_db)


def test_star_exclude_and_replace(sql_db) -> None:
    out = bind("select * exclude (d_date, d_month) from date", sql_db)
    names = [f.name for f in out.fields]
    assert "d_date" not in names and "d_month" not in names and "d_year" in names
    out = bind("select d.* replace (d_year + 1 as d_year) from date d", sql_db)
    year = next(f for f in out.fields if f.name == "d_year")
    assert [f.name for f in out.fields][:2] == ["d_datekey", "d_date"] and year.dtype == T.INT32
    with pytest.raises(CatalogError, match="EXCLUDE"):
        bind("select * exclude (nope) from date", sql_db)


def test_group_by_all_groups_by_the_plain_select_items(sql_db) -> None:
    out = bind("select d_year, d_month, count(*) from date group by all", sql_db)
    aggs = [n for n in _walk(out) if isinstance(n, Aggregate)]
    assert len(aggs) == 1 and len(aggs[0].keys) == 2 and len(aggs[0].aggs) == 1


@pytest.mark.parametrize("expr,dtype", [
    ("sqrt(lo_tax)", T.FLOAT64), ("power(lo_tax, 2)", T.FLOAT64), ("lo_tax ** 2", T.FLOAT64),
    ("ln(lo_tax)", T.FLOAT64), ("exp(lo_tax)", T.FLOAT64), ("abs(lo_tax)", T.INT32),
    ("round(lo_tax)", T.INT32), ("round(2.567, 2)", T.decimal(4, 2)), ("round(2.567, 5)", T.decimal(4, 3)),
    ("round(2.567)", T.decimal(4, 0)), ("floor(lo_tax)", T.FLOAT64), ("ceil(2.57)", T.decimal(3, 0)),
    ("greatest(lo_tax, 2.5)", T.decimal(11, 1)), ("least(lo_tax, lo_revenue)", T.INT32),
])
def test_math_function_types_follow_duckdb(sql_db, expr, dtype) -> None:
    duck = duckdb.connect()
    duck.execute("create table lineorder(lo_tax int, lo_revenue int)")
    duck_type = duck.execute(f"select typeof({expr}) from lineorder").description[0]
    assert duck_type is not None  # DuckDB binds it too
    assert bind(f"select {expr} from lineorder", sql_db).fields[0].dtype == dtype


def test_right_and_full_joins_bind(sql_db) -> None:
    for side in ("right", "full"):
        out = bind(f"select lo_tax, d_year from lineorder {side} join date on lo_orderdate = d_datekey",
                   sql_db)
        joins = [n for n in _walk(out) if isinstance(n, Join)]
        assert [j.kind for j in joins] == [side]
    with pytest.raises(UnsupportedError, match="FULL JOIN ... USING"):
        bind("select * from lineorder l full join lineorder m using (lo_orderkey)", sql_db)
    bind("select * from lineorder l left join lineorder m using (lo_orderkey)", sql_db)


def test_union_binds_with_common_types(sql_db) -> None:
    out = bind("select lo_tax from lineorder union all select 1.5 union select d_year from date", sql_db)
    assert out.fields[0].dtype.kind == "decimal"
    assert sum(isinstance(n, Union) for n in _walk(out)) == 2
    with pytest.raises(SqlError, match="numbers of columns"):
        bind("select lo_tax, lo_revenue from lineorder union all select d_year from date", sql_db)
    with pytest.raises(SqlError, match="numbers of columns"):
        bind("select lo_tax, lo_revenue from lineorder intersect select d_year from date", sql_db)


def _walk(node):
    yield node
    for k in node.inputs():
        yield from _walk(k)
