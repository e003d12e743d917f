"""NaN and -0.0 against DuckDB (issue 15, item 4): NaN equals NaN and orders above every number
(+inf included), -0.0 equals 0.0 — in comparisons, BETWEEN, IN, subquery comparisons, join keys,
group keys, DISTINCT, ORDER BY and min/max."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from sem_check import build, check

import hetdb

NAN, INF = math.nan, math.inf
F = pa.table({"id": pa.array(range(8), pa.int32()),
              "f": pa.array([NAN, 1.5, -0.0, INF, None, 0.0, -INF, NAN], pa.float64())})
G = pa.table({"g": pa.array([NAN, 0.0, 1.5, None, -INF], pa.float64()),
              "w": pa.array([1, 2, 3, 4, 5], pa.int32())})

QUERIES = [
    "SELECT count(*) FROM f WHERE f > 0",
    "SELECT id FROM f WHERE f = 'nan'::DOUBLE",
    "SELECT id, f = f, f <> f, f < 'inf'::DOUBLE, f >= 'nan'::DOUBLE, f <= 1.5, f = 0.0 FROM f",
    "SELECT id FROM f WHERE f BETWEEN 0 AND 'nan'::DOUBLE",
    "SELECT id FROM f WHERE f NOT BETWEEN -1 AND 1",
    "SELECT id, f IN (1.5, 'nan'::DOUBLE), f IN (0.0) FROM f",
    "SELECT id FROM f WHERE f IN (SELECT g FROM g)",
    "SELECT id, f IN (SELECT g FROM g) FROM f",
    "SELECT id FROM f WHERE f NOT IN (SELECT g FROM g WHERE g IS NOT NULL)",
    "SELECT id FROM f WHERE f >= (SELECT max(g) FROM g)",
    "SELECT id FROM f WHERE f > (SELECT min(g) FROM g WHERE g > -1)",
    "SELECT id, w FROM f JOIN g ON f = g",
    "SELECT id, w FROM f LEFT JOIN g ON f = g",
    "SELECT count(*), min(f), max(f) FROM f",
    "SELECT count(DISTINCT f) FROM f",
    "SELECT max(f), min(f) FROM f WHERE f < 'inf'::DOUBLE OR f > 1",
    "SELECT id, CASE WHEN f > 1 THEN 'big' ELSE 'small' END FROM f",
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    path = tmp_path_factory.mktemp("sem-nan")
    return str(path), build(str(path), {"f": F, "g": G})


def test_nan_semantics(tables, device) -> None:
    path, duck = tables
    with hetdb.connect(path, device=device) as con:
        compared = [check(con, duck, sql) for sql in QUERIES]
    assert len(compared) == len(QUERIES) and all(a.rows for a in compared)


@pytest.mark.parametrize("cpu_compile", [True, False], ids=["compiled", "interpreted"])
def test_nan_and_signed_zero_group_keys(tables, device, cpu_compile) -> None:
    # -0.0 and 0.0 are one group, shown with the sign of its first row (-0.0 here) as DuckDB shows
    # it; NaNs are one group (on the GPU: the compiled pipelines' zero-sign accumulator)
    path, duck = tables
    with hetdb.connect(path, device=device, cpu_compile=cpu_compile) as con:
        assert check(con, duck, "SELECT f, count(*) FROM f GROUP BY f").rows
        assert check(con, duck, "SELECT DISTINCT f FROM f WHERE f = 0").rows


@pytest.mark.parametrize("direction", ["ASC", "DESC"])
def test_nan_orders_last_like_duckdb(tables, device, direction) -> None:
    path, duck = tables
    sql = f"SELECT f FROM f ORDER BY f {direction} NULLS LAST, id"
    with hetdb.connect(path, device=device) as con:
        got = [v for (v,) in con.sql(sql).fetchall()]
    want = [v for (v,) in duck.sql(sql).fetchall()]
    key = [("nan" if isinstance(v, float) and math.isnan(v) else v) for v in got]
    assert key == [("nan" if isinstance(v, float) and math.isnan(v) else v) for v in want]
    assert len(got) == F.num_rows


RPP = 4096


@pytest.fixture(scope="module")
def zeros(tmp_path_factory):
    """5 row groups of a DOUBLE key: the first zero (0.0) is row 4 of row group 1, a -0.0 is row 1
    of row group 2 (earlier within its own row group) — the group's sign must come from the scan
    order across row groups, not from the row's place in its launch."""
    from hetdb import types as T
    from hetdb.storage import ColumnSpec, Database

    n = 4 * RPP + 1000
    f = [1.0 + (i % 7) for i in range(n)]
    f[RPP + 4] = 0.0
    for i in range(2 * RPP + 1, n, 97):
        f[i] = -0.0 if i % 2 else 0.0
    f[3 * RPP] = NAN
    table = pa.table({"id": pa.array(range(n), pa.int32()), "f": pa.array(f, pa.float64())})
    path = str(tmp_path_factory.mktemp("sem-zeros") / "db")
    db = Database.open(path, create=True)
    with db.create_table("z", [ColumnSpec("id", T.INT32), ColumnSpec("f", T.FLOAT64)], rows_per_page=RPP) as w:
        w.append_arrow(table)
    import duckdb

    duck = duckdb.connect()
    duck.register("z_src", table)
    duck.execute("CREATE TABLE z AS SELECT * FROM z_src")
    return path, duck


@pytest.mark.parametrize("options", [{}, {"gpu_batch_bytes": 0}, {"gpu_compressed_cache": True}],
                         ids=["default", "row-group-steps", "compressed"])
def test_signed_zero_group_key_over_row_groups(zeros, device, options) -> None:
    path, duck = zeros
    if device == "cpu":
        options = {"threads": 1}  # (several CPU threads merge morsels' groups in any order)
    with hetdb.connect(path, device=device, **options) as con:
        for _ in range(3):  # first scan (streamed), then filled / hot
            assert check(con, duck, "SELECT f, count(*) FROM z GROUP BY f").rows
            assert check(con, duck, "SELECT DISTINCT f FROM z WHERE f <= 0 OR f <> f").rows
