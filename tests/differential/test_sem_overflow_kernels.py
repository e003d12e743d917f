"""Overflow of INTEGER / BIGINT / DECIMAL ``+ - *`` (and INTEGER / BIGINT ``-x``, ``abs``) inside
aggregations (issue 15, item 2, on the GPU): there the arithmetic runs in a generated kernel (compiled pipeline or dense fused kernel), which
checks it and raises DuckDB's "Out of Range" error with the operands, as the CPU does; without an
overflow the same queries agree with DuckDB and run as a generated kernel. Table ``t`` has no NULLs
(the GPU runs it in dense fused kernels), ``tn`` has some (pages with validity: compiled pipelines)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from sem_check import build, check

import hetdb

ROWS = pa.table({
    "g": pa.array([1, 1, 2, 2, 3, 3], pa.int32()),
    "x": pa.array([1, 0, -3, 2**62, 2, 5], pa.int64()),
    "i": pa.array([2**31 - 1, 4, 0, 9, 7, -(2**31)], pa.int32()),
    "m": pa.array([10**13, 2, 3, 4, 5, 6], pa.int64()),
})
ROWS_NULL = pa.concat_tables([ROWS, pa.table({"g": pa.array([1], pa.int32()), "x": pa.array([None], pa.int64()),
                                              "i": pa.array([None], pa.int32()), "m": pa.array([None], pa.int64())})])

# (query, DuckDB's message) — the rows that overflow are in every query's input. (Not sum(i + 1):
# DuckDB rewrites it to sum(i) + count(i), which does not overflow.)
ERRORS = [
    ("SELECT g, sum(x * 4) FROM {t} GROUP BY g", "Overflow in multiplication of INT64 (4611686018427387904 * 4)"),
    ("SELECT sum(i + i) FROM {t}", "Overflow in addition of INT32"),  # two rows overflow: operands vary
    ("SELECT g, max(i - 1) FROM {t} GROUP BY g", "Overflow in subtraction of INT32 (-2147483648 - 1)"),
    ("SELECT count(*) FROM {t} WHERE x + x > 0", "Overflow in addition of INT64"),
    ("SELECT g, sum(CAST(m AS DECIMAL(18, 2)) * CAST(m AS DECIMAL(18, 2))) FROM {t} GROUP BY g",
     "Overflow in multiplication of DECIMAL(18)"),
    ("SELECT g, max(abs(i)) FROM {t} GROUP BY g", "Overflow on abs(-2147483648)"),
    ("SELECT g, min(-i) FROM {t} GROUP BY g", "Overflow in negation"),
]
# the same shapes over the rows that do not overflow
FINE = [
    "SELECT g, sum(x * 4) FROM {t} WHERE x < 1000 GROUP BY g",
    "SELECT sum(i + i) FROM {t} WHERE i BETWEEN 0 AND 100",
    "SELECT g, max(i - 1) FROM {t} WHERE i > 0 GROUP BY g",
    "SELECT count(*) FROM {t} WHERE x < 1000 AND x + x > 0",
    "SELECT g, max(abs(i)), min(-i) FROM {t} WHERE i > -5 GROUP BY g",
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    path = tmp_path_factory.mktemp("sem-overflow-kernels")
    return str(path), build(str(path), {"t": ROWS, "tn": ROWS_NULL})


@pytest.mark.parametrize("table", ["t", "tn"])
@pytest.mark.parametrize("sql,message", ERRORS, ids=[f"err{i}" for i in range(len(ERRORS))])
def test_overflow_in_aggregations_raises_like_duckdb(tables, device, sql, message, table) -> None:
    path, duck = tables
    with hetdb.connect(path, device=device) as con:
        check(con, duck, sql.format(t=table), error_contains=message)


@pytest.mark.parametrize("table", ["t", "tn"])
def test_aggregations_without_overflow_agree_and_run_in_kernels(tables, device, table) -> None:
    path, duck = tables
    queries = [sql.format(t=table) for sql in FINE]
    with hetdb.connect(path, device=device) as con:
        compared = [check(con, duck, sql) for sql in queries]
        if device == "gpu":
            for sql in queries:
                plan = con.explain(sql, analyze=True)
                assert "into one generated kernel" in plan or "as compiled hash-aggregation kernels" in plan, plan
    assert len(compared) == len(FINE) and all(a.rows for a in compared)
