"""hash() equals DuckDB's value for value: integers of every width, DOUBLE with -0.0 and NaN,
strings (empty, short, long, non-ASCII), dates, timestamps, decimals, HUGEINT, NULL, several
arguments combined; UBIGINT results (Arrow uint64, Python ints); what stays refused is refused with
a typed error."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb.bench.compare import compare_tables
from hetdb.errors import OutOfRangeError, UnsupportedError

SETUP = [
    "CREATE TABLE h (i INTEGER, b BIGINT, x DOUBLE, s VARCHAR, d DATE, ts TIMESTAMP, m DECIMAL(12,3), "
    "k DECIMAL(4,1), t TINYINT, sm SMALLINT, ok BOOLEAN)",
    "INSERT INTO h VALUES "
    "(0, 0, 0.0, '', DATE '1970-01-01', TIMESTAMP '1970-01-01 00:00:00', 0, 0, 0, 0, false), "
    "(-1, -1, -0.0, 'a', DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59.999999', -1.5, -1.5, -1, -1, true), "
    "(2147483647, 9223372036854775807, 1.5, 'apple', DATE '2024-02-29', TIMESTAMP '2024-02-29 10:11:12.345678', "
    "123456789.125, 999.9, 127, 32767, true), "
    "(-2147483648, -9223372036854775808, 'nan', 'exactly8', DATE '9999-12-31', TIMESTAMP '2262-01-01 00:00:00', "
    "-999999999.999, -999.9, -128, -32768, false), "
    "(7, 3000000000, 'inf', 'twelve bytes', DATE '0001-01-01', TIMESTAMP '1900-03-01 12:00:00', 0.001, 0.1, 5, 300, "
    "NULL), "
    "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "
    "(42, 42, -1e308, 'héllo wörld, a string longer than sixteen bytes ✓', DATE '2000-01-01', "
    "TIMESTAMP '2000-01-01 00:00:00', 42, 4.2, 42, 42, true), "
    "(8, -7, 'inf'::DOUBLE * -1, 'thirteen byte', DATE '1999-07-04', TIMESTAMP '1999-07-04 12:00:00', 8, 8, 8, 8, "
    "false)",
]

QUERIES = [
    "SELECT i, hash(i), hash(b), hash(t), hash(sm), hash(ok) FROM h",
    "SELECT i, hash(x), hash(x * 0), hash(s), hash(d), hash(ts) FROM h",
    "SELECT i, hash(m), hash(k), hash(m * 2), hash(CAST(m AS DECIMAL(30,4))), hash(CAST(b AS HUGEINT) * 1000) FROM h",
    "SELECT i, hash(i, s), hash(s, i, x, d), hash(NULL, s), hash(s, NULL), hash(i, i) FROM h",
    "SELECT hash(1), hash(-1), hash(NULL), hash(1.5), hash(-0.0::DOUBLE), hash('nan'::DOUBLE), hash(true), "
    "hash(3000000000), hash(-1::BIGINT), hash('x', 2, 3.25::DOUBLE), hash(170141183460469231731687303715884105727)",
    "SELECT i, hash(hash(s)), hash(upper(s)), hash(CAST(ts AS TIMESTAMPTZ)) FROM h",
    "SELECT hash(s) % 7 AS bucket, count(*) FROM h GROUP BY bucket",
    "SELECT i FROM h ORDER BY hash(s), i",
    "SELECT max(hash(s)), min(hash(i)), count(DISTINCT hash(x)) FROM h",
    "SELECT typeof(hash(i)), typeof(hash(s, x)) FROM h LIMIT 1",
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
def test_hash_equals_duckdb(engines, sql):
    con, duck = engines
    got, want = con.sql(sql).arrow(), duck.sql(sql).to_arrow_table()
    assert got.num_rows == want.num_rows > 0
    assert compare_tables(got, want, ordered="ORDER BY" in sql) is None, sql


def test_hash_result_is_ubigint_as_duckdb(engines):
    con, duck = engines
    sql = "SELECT hash(s), hash(i, d) FROM h"
    got, want = con.sql(sql), duck.sql(sql)
    assert got.arrow().schema.types == [pa.uint64(), pa.uint64()] == want.to_arrow_table().schema.types
    assert got.fetchall() == want.fetchall()
    assert got.types == ["UBIGINT", "UBIGINT"]


def test_hash_of_many_strings_equals_duckdb():
    """Lengths 0..40 (every remainder of the 8-byte blocks), dictionary and plain columns."""
    rng = np.random.default_rng(7)
    words = ["".join(chr(c) for c in rng.integers(32, 0x2FF, size=n)) for n in range(41) for _ in range(3)]
    table = pa.table({"s": pa.array(words), "n": pa.array(np.arange(len(words)))})
    duck = duckdb.connect()
    duck.register("w", table)
    with hetdb.connect(device="cpu") as con:
        con.register("w", table)
        sql = "SELECT n, hash(s), hash(s, n), hash(s || 'x') FROM w"
        got, want = con.sql(sql).arrow(), duck.sql(sql).to_arrow_table()
    assert got.num_rows == len(words)
    assert compare_tables(got, want, ordered=False) is None


def test_hash_of_interval_is_refused_by_name(engines):
    con, _ = engines
    with pytest.raises(UnsupportedError, match="hash\\(\\) of an INTERVAL"):
        con.sql("SELECT hash(ts - TIMESTAMP '2000-01-01') FROM h")


def test_grouping_by_a_raw_hash_equals_duckdb(engines):
    """UBIGINT keys past int64 (held as HUGEINT) group by their high and low halves (8193c0d; they
    were refused with a typed error before)."""
    con, duck = engines
    sql = "SELECT hash(s) AS hk, count(*) FROM h GROUP BY hk"
    got, want = con.sql(sql).arrow(), duck.sql(sql).to_arrow_table()
    assert got.num_rows == want.num_rows > 0
    assert compare_tables(got, want, ordered=False) is None


UBIGINT_EXPRESSIONS = ["hash(s) % 10", "hash(i) + 1", "hash(s) // 3", "hash(i) - hash(i)", "-(hash(s) * 0)",
                       "abs(hash(s))", "greatest(hash(s), 5)", "coalesce(hash(s), 5)", "hash(i) % 10 + (-5)",
                       "hash(s) / 2", "CASE WHEN i > 0 THEN hash(s) ELSE 0 END"]


def test_arithmetic_on_hashes_keeps_duckdbs_types(engines):
    con, duck = engines
    sql = "SELECT " + ", ".join(f"{e}, typeof({e})" for e in UBIGINT_EXPRESSIONS) + " FROM h"
    got, want = con.sql(sql), duck.sql(sql)
    assert got.types == want.types and "UBIGINT" in got.types
    assert compare_tables(got.arrow(), want.to_arrow_table(), ordered=False) is None


@pytest.mark.parametrize("expr,message", [("-hash(s)", "negation"), ("hash('x') % 10 - 20", "subtraction of UINT64"),
                                          ("hash('apple') * 4", "multiplication of UINT64")])
def test_leaving_ubigints_range_is_duckdbs_error(engines, expr, message):
    con, duck = engines
    with pytest.raises(OutOfRangeError, match=message):
        con.sql(f"SELECT {expr} FROM h WHERE s <> ''").fetchall()
    with pytest.raises(duckdb.OutOfRangeException, match=message):
        duck.sql(f"SELECT {expr} FROM h WHERE s <> ''").fetchall()
