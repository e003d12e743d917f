"""Python values and type names of results against DuckDB's fetchall: HUGEINT as int (not
Decimal), DATE, TIMESTAMP, DECIMAL, BOOLEAN, VARCHAR, DOUBLE, NULL; eager and streamed results."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import hetdb
from hetdb.errors import UnsupportedError

QUERIES = [
    "SELECT sum(a) AS s, sum(a) * 2 AS s2, DATE '2024-01-02' AS d, TIMESTAMP '2024-01-02 03:04:05.123456' AS ts, "
    "CAST(1.25 AS DECIMAL(10,2)) AS dec, true AS b, 'x' AS v, 2.5::DOUBLE AS f, 7 AS i, 7::BIGINT AS bi, "
    "NULL::INTEGER AS n FROM (SELECT 1::BIGINT AS a UNION ALL SELECT 2)",
    "SELECT sum(x) AS big FROM (SELECT 9223372036854775807::BIGINT AS x UNION ALL SELECT 9223372036854775807)",
    "SELECT g, sum(x) AS s FROM (SELECT 1 AS g, NULL::BIGINT AS x UNION ALL SELECT 2, 5) GROUP BY g ORDER BY g",
    "SELECT sum(CAST(1.5 AS DECIMAL(10,2))) AS d, avg(3::BIGINT) AS a",
]


@pytest.mark.parametrize("streamed", [False, True])
def test_values_and_types_match_duckdb(streamed):
    con = hetdb.connect(device="cpu")
    compared = 0
    for q in QUERIES:
        want = duckdb.sql(q)
        got = con.execute(q)._last if streamed else con.sql(q)
        assert got.types == [str(t) for t in want.types], q
        rows, expected = got.fetchall(), want.fetchall()
        assert rows == expected, q
        assert [type(v) for r in rows for v in r] == [type(v) for r in expected for v in r], q
        compared += 1
    assert compared == len(QUERIES)
    assert isinstance(con.sql(QUERIES[1]).fetchone()[0], int)
    assert con.sql(QUERIES[1]).description[0][1] == "HUGEINT"
    con.close()


def test_unsupported_result_types_are_refused_by_name():
    con = hetdb.connect(device="cpu")
    assert con.sql("SELECT INTERVAL 1 DAY AS iv").arrow().column("iv").type == pa.month_day_nano_interval()
    with pytest.raises(UnsupportedError, match="column h .*cannot store"):  # UBIGINT is a result only
        con.sql("CREATE TABLE th AS SELECT hash(1) AS h")
    with pytest.raises(UnsupportedError, match="column l is a LIST .*cannot store"):  # a value type only
        con.sql("CREATE TABLE tl AS SELECT [1, 2] AS l")
    con.close()
