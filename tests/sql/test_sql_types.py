"""Result types of bound expressions follow DuckDB (asked with typeof() on the same Parquet file):
DATE ± INTERVAL is a TIMESTAMP, SUM of integers is HUGEINT and of decimals DECIMAL(38, s)."""

from __future__ import annotations

import datetime
import decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.plan.logical import Scan
from hetdb.sql import bind

EXPRS = [
    "i + i", "i + b", "i * i", "i / i", "i // i", "b // i", "i % i", "d + 1", "1 - d", "d * d",
    "d * (1 - d) * (1 + d)", "d / d", "d + e", "d * i", "d + f", "0.06", "1.5", "100.00", "d * 0.5",
    "0.5 * sum(d)", "sum(d)", "sum(i)", "sum(f)", "avg(d)", "avg(i)", "count(*)", "count(distinct s)",
    "min(d)", "max(s)", "extract(year from dt)", "year(dt)", "dt + 1", "substring(s, 1, 2)",
    "case when i > 0 then d else i end", "coalesce(i, b)", "nullif(i, 0)", "-i", "abs(d)", "d > 0.05",
    "i + 1", "b + 1", "100000000000", "d - e", "e * e * e", "i between 1 and 3", "s like 'a%'",
    "dt < date '1995-01-01'", "i in (1, 2, 3)", "case i when 1 then 'x' else 'y' end",
    "coalesce(d, 0)", "sum(b)", "sum(d) * 2", "sum(i) + 1", "b - 0.5", "d + d", "upper(s)", "length(s)", "s || 'x'", "cast(d as double)", "cast(i as decimal(10,2))",
]


def duck_to_hetdb(name: str):
    return T.DataType.parse(name)


@pytest.fixture(scope="module")
def typed_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("types") / "t.parquet")
    table = pa.table({
        "i": pa.array([1, None, 3], pa.int32()), "b": pa.array([1, 2, 3], pa.int64()),
        "d": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("2.25")], pa.decimal128(15, 2)),
        "e": pa.array([decimal.Decimal("1.5000")] * 3, pa.decimal128(12, 4)),
        "f": pa.array([1.0, 2.0, None], pa.float64()),
        "dt": pa.array([datetime.date(1995, 1, 1)] * 3, pa.date32()),
        "s": pa.array(["ab", None, "cd"], pa.string()),
    })
    pq.write_table(table, path)
    return path


def test_types_match_duckdb(typed_file, sql_db):
    con = duckdb.connect()
    compared = 0
    for e in EXPRS + ["dt - interval '3' day", "date '1995-01-31' + interval 1 month",
                      "interval 1 year + dt", "dt + interval '36 hours'", "dt + 7", "dt - dt",
                      "cast(dt as timestamp) + interval 1 month", "cast(dt as timestamptz)",
                      "date_trunc('day', cast(dt as timestamptz))", "now()", "to_timestamp(1)",
                      "cast(dt as timestamptz) + interval 1 day"]:
        duck = con.sql(f"select typeof({e}) from '{typed_file}' limit 1").fetchall()[0][0]
        plan = bind(f"select {e} from '{typed_file}'", sql_db)
        assert plan.fields[0].dtype == duck_to_hetdb(duck), (e, duck, plan.fields[0].dtype)
        compared += 1
    assert compared == len(EXPRS) + 12


def test_parquet_scan_source(typed_file, sql_db):
    plan = bind(f"select * from '{typed_file}'", sql_db)
    scan = plan.input.input
    while not isinstance(scan, Scan):
        scan = scan.inputs()[0]
    assert scan.source == "external" and typed_file in scan.table
    assert [f.name for f in plan.fields] == ["i", "b", "d", "e", "f", "dt", "s"]


def test_date_interval_folds(sql_db):
    plan = bind("select date '1998-12-01' - interval '90' day, date '1995-01-31' + interval 1 month",
                sql_db)
    lits = [e for _, e in plan.input.exprs]
    # DuckDB: TIMESTAMPs 1998-09-02 and 1995-02-28 (end-of-month clamp), folded to constants
    day_us = 86_400_000_000
    assert [(x.dtype, x.value) for x in lits] == [
        (T.TIMESTAMP, (datetime.date(1998, 9, 2) - datetime.date(1970, 1, 1)).days * day_us),
        (T.TIMESTAMP, (datetime.date(1995, 2, 28) - datetime.date(1970, 1, 1)).days * day_us)]


def test_date_filter_against_interval_constant_stays_date(sql_db, typed_file):
    """``dt <= DATE - INTERVAL`` compares as DATE (zone-map pruning, GPU filters), not TIMESTAMP."""
    plan = bind(f"select count(*) from '{typed_file}' where dt <= date '1998-12-01' - interval '90' day",
                sql_db)
    found = []
    stack = [plan]
    while stack:
        node = stack.pop()
        found += [f for f in getattr(node, "filters", ()) + ((node.predicate,) if hasattr(node, "predicate") else ())]
        stack.extend(node.inputs())
    assert found, "the filter was not found in the plan"
    assert all(a.dtype == T.DATE for f in found for a in f.args), found


def test_decimal_scale_overflow_is_refused(typed_file, sql_db):
    with pytest.raises(UnsupportedError):
        bind(f"select e * e * e * e * e from '{typed_file}'", sql_db)
