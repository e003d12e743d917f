"""Window operator behaviour outside the corpus: spilling (or a typed error) when its input exceeds the
memory limit, and its place in EXPLAIN ANALYZE (a CPU fallback on the GPU)."""

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


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")
def test_gpu_runs_windows_on_the_device_and_holistic_ones_on_the_host(corpus_path) -> None:
    with hetdb.connect(corpus_path, device="gpu") as con:
        text = con.explain(QUERY, analyze=True)
        line = next(x for x in text.splitlines() if "Window partition=" in x)
        assert "row_number()" in line and "CPU fallback" not in line, text
        text = con.explain("SELECT id, stddev_samp(id) OVER (PARTITION BY g) FROM w", analyze=True)
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
