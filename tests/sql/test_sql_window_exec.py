"""Window operator behaviour outside the corpus: spilling (or a typed error) when its input exceeds the
memory limit, its place in EXPLAIN ANALYZE (a CPU fallback on the GPU), the columns it passes on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from corpus_data import build  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402
from hetdb.errors import OutOfMemoryError  # noqa: E402

QUERY = "SELECT id, row_number() OVER (PARTITION BY g ORDER BY id) FROM w"


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("window-exec") / "db")
    build(path)
    return path


def test_window_input_over_the_memory_limit_spills_or_is_a_typed_error(corpus_path) -> None:
    with hetdb.connect(corpus_path, device="cpu") as con:
        whole = con.sql(QUERY + " ORDER BY id").arrow()
    assert whole.num_rows == 300
    with hetdb.connect(corpus_path, device="cpu", host_memory_limit="4KB") as con:
        r = con.sql(QUERY + " ORDER BY id")  # PARTITION BY g: spilled by hash, one partition at a time
        assert r.stats["spilled_partitions"] > 0 and r.arrow().equals(whole)
        with pytest.raises(OutOfMemoryError, match="Window.*without PARTITION BY"):
            con.sql("SELECT w1.id, row_number() OVER (ORDER BY w1.id) FROM w w1, w w2")


def test_explain_analyze_shows_the_window_operator(corpus_path) -> None:
    with hetdb.connect(corpus_path, device="cpu") as con:
        text = con.explain(QUERY, analyze=True)
    line = next(x for x in text.splitlines() if "Window partition=" in x)
    assert "row_number()" in line and "rows in=300 out=300" in line, text


def test_window_passes_on_only_the_columns_read_above_it(corpus_path) -> None:
    """Keys only the window reads are not passed on (nor reordered): its pass=[...] names one column;
    the answer is the same as with projection pruning off, where every input column is passed on."""
    sql = "SELECT x, row_number() OVER (PARTITION BY g ORDER BY k DESC, id) AS rn FROM w"
    with hetdb.connect(corpus_path, device="cpu") as con:
        line = next(x for x in con.explain(sql).splitlines() if "Window partition=" in x)
        got = con.sql(sql).arrow()
    passed = line.split("pass=[")[1].split("]")[0]
    assert passed.startswith("x#") and "," not in passed, line
    off = {"projection_pruning", "late_projection_pruning"}
    with hetdb.connect(corpus_path, device="cpu", disabled_passes=off) as con:
        line = next(x for x in con.explain(sql).splitlines() if "Window partition=" in x)
        want = con.sql(sql).arrow()
    assert "pass=" not in line, line
    assert got.num_rows == 300 and got.column_names == want.column_names
    assert sorted(got.to_pylist(), key=str) == sorted(want.to_pylist(), key=str)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_gpu_runs_windows_on_the_device_and_holistic_ones_on_the_host(corpus_path) -> None:
    with hetdb.connect(corpus_path, device="gpu") as con:
        text = con.explain(QUERY, analyze=True)
        line = next(x for x in text.splitlines() if "Window partition=" in x)
        assert "row_number()" in line and "CPU fallback" not in line, text
        text = con.explain("SELECT id, stddev_samp(id) OVER (PARTITION BY g) FROM w", analyze=True)
        line = next(x for x in text.splitlines() if "Window partition=" in x)
        assert "CPU fallback" not in line, text  # variance: per-partition sums on the device
        text = con.explain("SELECT id, median(id) OVER (PARTITION BY g) FROM w", analyze=True)
        line = next(x for x in text.splitlines() if "Window partition=" in x)
        assert "CPU fallback: window functions on the host" in line, text


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_gpu_window_partition_past_the_gpu_budget_runs_on_the_host(corpus_path) -> None:
    sql = "SELECT w1.id AS a, w2.id AS b, row_number() OVER (ORDER BY w1.id, w2.id) AS rn FROM w w1, w w2 ORDER BY rn"
    with hetdb.connect(corpus_path, device="cpu") as con:
        want = con.sql(sql).arrow()
    assert want.num_rows == 90_000
    with hetdb.connect(corpus_path, device="gpu", gpu_memory_limit="2MB") as con:
        assert con.sql(sql).arrow().equals(want)
        text = con.explain(sql, analyze=True)
    line = next(x for x in text.splitlines() if "Window partition=" in x)
    assert "a window partition past the GPU budget, on the host" in line, text


def test_large_window_output_feeds_parallel_workers(tmp_path, monkeypatch) -> None:
    """A window over 400,000 rows hands its output on as several slices on the CPU (the pipeline
    after it runs one worker per slice); the answer equals DuckDB's."""
    import duckdb
    import numpy as np
    import pyarrow as pa

    from hetdb import types as T
    from hetdb.exec.operators import window
    from hetdb.storage import ColumnSpec, Database

    rng = np.random.default_rng(4)
    n = 400_000
    table = pa.table({"g": pa.array(rng.integers(0, 5000, n)), "v": pa.array(rng.integers(0, 10**6, n)),
                      "x": pa.array(rng.integers(-(10**9), 10**9, n))})
    db = Database.open(str(tmp_path), create=True)
    with db.create_table("t", [ColumnSpec(f.name, T.from_arrow(f.type)) for f in table.schema]) as writer:
        writer.append_arrow(table)
    slices = []
    real = window._morsels
    monkeypatch.setattr(window, "_morsels", lambda ctx, b: slices.append(len(out := real(ctx, b))) or out)
    sql = ("SELECT rn, count(*), sum(s), sum(p) FROM (SELECT row_number() OVER (PARTITION BY g ORDER BY v, x) AS rn, "
           "sum(x) OVER (PARTITION BY g ORDER BY v, x ROWS 2 PRECEDING) AS s, lag(x, 1, 7) OVER (PARTITION BY g "
           "ORDER BY v, x) AS p FROM t) WHERE rn <= 3 GROUP BY rn ORDER BY rn")
    with hetdb.connect(str(tmp_path), device="cpu", threads=4) as con:
        got = con.sql(sql).fetchall()
    duck = duckdb.connect()
    duck.register("t", table)
    assert got == duck.sql(sql).fetchall() and len(got) == 3
    assert slices and max(slices) > 1
