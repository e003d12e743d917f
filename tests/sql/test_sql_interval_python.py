"""INTERVAL results reach Python as DuckDB hands them over: fetchall/fetchone give datetime.timedelta
(a month counting 30 days), .df() gives timedelta64[us] columns, and Arrow output stays
month_day_nano_interval. Compared with DuckDB on the same queries."""

from __future__ import annotations

import datetime as dt

import duckdb
import pyarrow as pa
import pytest

import hetdb
from hetdb.errors import OutOfRangeError

SETUP = [
    "CREATE TABLE iv (id INTEGER, a TIMESTAMP, b TIMESTAMP, n INTEGER)",
    "INSERT INTO iv VALUES (1, TIMESTAMP '2024-02-29 10:11:12.345678', TIMESTAMP '2024-03-31 01:00:00', 3), "
    "(2, TIMESTAMP '2023-01-31 23:59:59', TIMESTAMP '2023-03-01 00:00:00', -2), "
    "(3, TIMESTAMP '2020-12-31 00:00:00', TIMESTAMP '2021-01-01 12:30:00', 0), "
    "(4, NULL, TIMESTAMP '2024-01-01 00:00:00', NULL), "
    "(5, TIMESTAMP '2024-06-01 00:00:00', TIMESTAMP '2023-06-01 00:00:00.000001', 7)",
]

QUERIES = [
    "SELECT id, b - a FROM iv ORDER BY id",
    "SELECT id, age(b, a), age(a, b) FROM iv ORDER BY id",
    "SELECT id, to_months(n), to_days(n) + to_hours(n), INTERVAL 1 MONTH * n - INTERVAL '1 day 1 second' "
    "FROM iv ORDER BY id",
    "SELECT INTERVAL '1 year 2 months', INTERVAL 3 DAY, INTERVAL '90 minutes', "
    "-INTERVAL '1 month 1 day 1 microsecond', INTERVAL '1 month -1 day', INTERVAL '-1 second', "
    "CAST(NULL AS INTERVAL)",
    "SELECT min(b - a), max(b - a) FROM iv",
]


@pytest.fixture(scope="module")
def engines():
    duck = duckdb.connect()
    with hetdb.connect(":memory:", device="cpu") as con:
        for stmt in SETUP:
            duck.execute(stmt)
            con.execute(stmt)
        yield con, duck


@pytest.mark.parametrize("sql", QUERIES)
def test_fetchall_gives_duckdbs_timedeltas(engines, sql):
    con, duck = engines
    got, want = con.sql(sql).fetchall(), duck.sql(sql).fetchall()
    assert len(want) > 0 and got == want
    assert any(isinstance(v, dt.timedelta) for row in got for v in row)


def test_fetchone_and_fetchmany(engines):
    con, duck = engines
    sql = "SELECT id, b - a FROM iv ORDER BY id"
    got, want = con.execute(sql), duck.cursor().execute(sql)
    assert got.fetchone() == want.fetchone()
    assert got.fetchmany(2) == want.fetchmany(2)


@pytest.mark.parametrize("sql", QUERIES)
def test_df_gives_duckdbs_timedelta64_columns(engines, sql):
    pytest.importorskip("pandas")
    con, duck = engines
    got, want = con.sql(sql).df(), duck.sql(sql).df()
    assert [str(t) for t in got.dtypes] == [str(t) for t in want.dtypes]
    assert "timedelta64[us]" in {str(t) for t in got.dtypes}
    assert got.shape == want.shape and got.shape[0] > 0
    assert got.astype(str).values.tolist() == want.astype(str).values.tolist()


def test_arrow_output_stays_month_day_nano(engines):
    con, duck = engines
    sql = "SELECT INTERVAL '1 year 2 months 3 days 4 hours' AS x"
    got, want = con.sql(sql).arrow(), duck.sql(sql).to_arrow_table()
    assert got.schema.field("x").type == pa.month_day_nano_interval() == want.schema.field("x").type
    assert got.column("x").to_pylist() == want.column("x").to_pylist()
    assert con.sql(sql).types == ["INTERVAL"]


def test_an_interval_past_timedelta_range_is_a_typed_error(engines):
    con, _ = engines
    with pytest.raises(OutOfRangeError, match="timedelta"):
        con.sql("SELECT to_months(2000000000)").fetchall()
