"""The new paths on both backends (the GPU one where visible): files in FROM (hive + pruning), statements and registered
DataFrames on device="cpu" and "gpu", differential against DuckDB."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hetdb
from hetdb.backend.gpu import gpu_available

DEVICES = ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not gpu_available(), reason="no CUDA GPU visible to CuPy")])]


def _norm(rows):
    return sorted(rows, key=lambda r: tuple((x is None, str(x)) for x in r))


@pytest.fixture(params=DEVICES)
def gpu(tmp_path, request):
    c = hetdb.connect(str(tmp_path / "db"), device=request.param)
    yield c
    c.close()


def test_hive_files_statements_and_frames_on_gpu(gpu, tmp_path):
    for y in (2020, 2021):
        d = tmp_path / "h" / f"year={y}"
        d.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(y * 10, y * 10 + 1000)),
                                 "s": [f"s{i % 5}" if i % 7 else None for i in range(1000)]}),
                       d / "p.parquet", row_group_size=100)
    g = f"{tmp_path}/h/**/*.parquet"
    queries = [f"SELECT year, s, count(*) AS n, sum(id) AS t FROM '{g}' GROUP BY year, s",
               f"SELECT count(*) AS n FROM read_parquet('{g}') WHERE year = 2021 AND id < 20300"]
    for q in queries:
        assert _norm(gpu.sql(q).fetchall()) == _norm(duckdb.sql(q).fetchall()), q
    text = gpu.explain(queries[1], analyze=True)
    assert "files read=1 skipped=1" in text
    duck = duckdb.connect()
    frame = pa.table({"k": [1, 2, None, 2], "v": ["a", None, "c", "d"]})  # noqa: F841 - by name
    for c in (gpu, duck):
        c.execute("CREATE TABLE t (k INTEGER, v VARCHAR)")
        c.execute("INSERT INTO t SELECT * FROM frame")
        c.execute("INSERT INTO t VALUES (5, 'e')")
        c.execute("CREATE VIEW w AS SELECT k, count(*) AS n FROM t GROUP BY k")
    for q in ["SELECT * FROM t", "SELECT * FROM w", "SELECT v, k FROM frame WHERE k IS NOT NULL"]:
        assert _norm(gpu.sql(q).fetchall()) == _norm(duck.sql(q).fetchall()), q
