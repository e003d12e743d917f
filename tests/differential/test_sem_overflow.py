"""Integer / decimal overflow and 128-bit sums against DuckDB (issue 15, item 2): SUM widens to
HUGEINT / DECIMAL(38, s) exactly, arithmetic and casts past a type's range raise DuckDB's
"Out of Range" / "Conversion" errors (never wrap), integer literals past BIGINT stay exact."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from sem_check import build, check

import hetdb
from hetdb.errors import OutOfRangeError
from hetdb.exec.wide import wide_sum

BIG = 9_000_000_000_000_000_000
T_ROWS = pa.table({
    "g": pa.array([1, 1, 2, 2, 3, None], pa.int32()),
    "b": pa.array([BIG, BIG, 5, -BIG, None, 7], pa.int64()),
    "x": pa.array([1, 0, -3, None, 2**62, -(2**63)], pa.int64()),
    "i": pa.array([2**31 - 1, -(2**31), 0, None, 7, 1], pa.int32()),
    "d": pa.array([1.5, 2.25, None, -3.75, float("inf"), float("nan")], pa.float64()),
})

# results past 64 bits: exact on the CPU; the GPU path holds only 64-bit values and refuses them
WIDE_QUERIES = [
    "SELECT count(*) FROM t WHERE 0.5 - x < 0",
    "SELECT 0.5 - b, b - 0.5 < 0 FROM t",
    "SELECT 9223372036854775808 - 10",
    "SELECT g, sum(b) FROM t GROUP BY g",
    "SELECT sum(b) * 2, sum(b) + sum(i), sum(b) // 2 FROM t",
    "SELECT max(s), min(s), count(DISTINCT s) FROM (SELECT sum(b) AS s FROM t GROUP BY g)",
    "SELECT 170141183460469231731687303715884105727, 9223372036854775808 - 1",
    "SELECT g, sum(b) AS s FROM t GROUP BY g ORDER BY s DESC NULLS LAST",
    "SELECT g FROM t GROUP BY g HAVING sum(b) > 9000000000000000001",
    "SELECT sum(s) FROM (SELECT sum(b) AS s FROM t GROUP BY g)",
    "SELECT sum(b) = 18000000000000000005 FROM t WHERE g = 1",
]

QUERIES = [
    "SELECT sum(b) FROM t",
    "SELECT sum(b) FROM t WHERE g = 2",
    "SELECT sum(x), sum(i), sum(g) FROM t",
    "SELECT sum(b) / 2 FROM t",
    "SELECT sum(CAST(i AS DECIMAL(12, 2))), sum(CAST(g AS DECIMAL(4, 1))) FROM t",
    "SELECT avg(b), avg(x) FROM t",
    "SELECT sum(b) FROM t WHERE g > 100",
    "SELECT CAST(sum(b) AS DOUBLE) FROM t",
    "SELECT CAST(x AS INTEGER) FROM t WHERE x BETWEEN -100 AND 100",
    "SELECT x * 2 FROM t WHERE x BETWEEN -2000 AND 2000",
]

ERRORS = [
    ("SELECT 2147483647 + 1", "Overflow in addition of INT32"),
    ("SELECT i + 1 FROM t", "Overflow in addition of INT32"),
    ("SELECT i - 1 FROM t", "Overflow in subtraction of INT32"),
    ("SELECT 9223372036854775807 * 2", "Overflow in multiplication of INT64"),
    ("SELECT b * 2 FROM t", "Overflow in multiplication of INT64"),
    ("SELECT b + b FROM t", "Overflow in addition of INT64"),
    ("SELECT 170141183460469231731687303715884105727 + 1", "Overflow in addition of INT128"),
    ("SELECT -x FROM t", "Overflow in negation"),
    ("SELECT abs(i) FROM t", "Overflow on abs(-2147483648)"),
    ("SELECT -i FROM t", "Overflow in negation"),
    ("SELECT abs(x) FROM t", "Overflow on abs(-9223372036854775808)"),
    ("SELECT 99999999999999.99::DECIMAL(16,2) * 99999999999999.99::DECIMAL(16,2)",
     "Overflow in multiplication of DECIMAL(18)"),
    ("SELECT CAST(d AS BIGINT) FROM t", "out of range for the destination type INT64"),
    ("SELECT CAST('inf'::DOUBLE AS BIGINT)", "out of range for the destination type INT64"),
    ("SELECT CAST(9e18 AS INTEGER)", "out of range for the destination type INT32"),
    ("SELECT CAST(b AS INTEGER) FROM t", "out of range for the destination type INT32"),
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    path = tmp_path_factory.mktemp("sem-overflow")
    return str(path), build(str(path), {"t": T_ROWS})


def test_wide_sums_and_exact_arithmetic(tables, device) -> None:
    path, duck = tables
    with hetdb.connect(path, device=device) as con:
        compared = [check(con, duck, sql) for sql in QUERIES]
    assert len(compared) == len(QUERIES) and all(a.rows for a in compared)


def test_results_past_64_bits(tables, device) -> None:
    path, duck = tables
    fallbacks = 0
    with hetdb.connect(path, device=device) as con:
        for sql in WIDE_QUERIES:
            assert check(con, duck, sql).rows
            # the GPU kernels hold 64-bit values: a query that needs more runs on the CPU, and says so
            fallbacks += "query on the CPU: a value needs more than 64 bits" in con.explain(sql, analyze=True)
    assert fallbacks == 0 if device == "cpu" else fallbacks >= 1


def test_wide_sum_recovers_wrapped_int64_sums() -> None:
    """The fused GPU kernels' int64 sums wrap; wide_sum restores them from DOUBLE sums."""
    groups = [[BIG, BIG, 5], [-BIG, -BIG, -BIG, 3], [1, 2], [BIG, -BIG, BIG, 7], [2**62] * 40]
    with np.errstate(over="ignore"):
        wrapped = np.array([np.sum(np.array(v, dtype=np.int64)) for v in groups], dtype=np.int64)
    approx = np.array([float(sum(float(x) for x in v)) for v in groups])
    assert any(int(w) != sum(v) for w, v in zip(wrapped, groups))  # something did wrap
    out = wide_sum(np, wrapped, approx)
    assert [int(x) for x in out] == [sum(v) for v in groups]


@pytest.mark.parametrize("sql,message", ERRORS, ids=[f"err{i}" for i in range(len(ERRORS))])
def test_overflow_raises_like_duckdb(tables, device, sql, message) -> None:
    path, duck = tables
    with hetdb.connect(path, device=device) as con:
        with pytest.raises(OutOfRangeError) as info:
            con.sql(sql)
        assert "device='cpu'" not in str(info.value)
        check(con, duck, sql, error_contains=message)  # DuckDB's message, on the GPU as on the CPU


def test_sum_of_two_big_bigints_is_exact(tables) -> None:
    path, _ = tables
    with hetdb.connect(path, device="cpu") as con:
        got = con.sql("SELECT sum(b) FROM t WHERE g = 1")
        assert got.arrow().schema.types[0] == pa.decimal128(38, 0)
        assert [int(v) for (v,) in got.fetchall()] == [2 * BIG]


def test_sum_over_many_batches_widens_exactly(tmp_path) -> None:
    """Per-batch int64 partial sums that would wrap are merged exactly (tiny batches, 3 threads)."""
    n = 5000
    table = pa.table({"g": pa.array([i % 3 for i in range(n)], pa.int32()),
                      "v": pa.array([BIG - i for i in range(n)], pa.int64())})
    duck = build(str(tmp_path), {"t": table})
    with hetdb.connect(str(tmp_path), device="cpu", batch_rows=7, threads=3) as con:
        assert check(con, duck, "SELECT g, sum(v), avg(v) FROM t GROUP BY g").rows
        assert check(con, duck, "SELECT sum(v) FROM t").rows
