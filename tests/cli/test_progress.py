"""The progress line: stage (planning, compiling a Numba/CUDA kernel, scanning a table), rows and
pages read; shown by the CLI, the shell and, with ``progress=True``, by ``con.sql`` in a notebook."""

from __future__ import annotations

import io
import time

import numba
import numpy as np
import pyarrow as pa
from numba.core import event

import hetdb
from hetdb import compiling
from hetdb.cli import progress as P


def test_numba_compiles_are_reported_as_the_compiling_stage():
    compiling.watch_numba()
    seen: list[str | None] = []

    class Probe(event.Listener):  # registered after hetdb's listener: sees its mark
        def on_start(self, ev):
            seen.append(compiling.current())

        def on_end(self, ev):
            pass

    probe = Probe()
    event.register("numba:compile", probe)
    try:
        @numba.njit
        def add_one_for_progress_test(x):
            return x + 1

        assert add_one_for_progress_test(41) == 42
    finally:
        event.unregister("numba:compile", probe)
    assert "Numba test_numba_compiles_are_reported_as_the_compiling_stage.<locals>.add_one_for_progress_test" in seen
    assert compiling.current() is None


def test_status_names_stage_kernel_and_scanned_table(tmp_path):
    con = hetdb.connect(str(tmp_path / "db"), device="cpu")
    status = P.engine_status(con)
    assert status() == "running"
    with compiling.compiling("CUDA fused.cu"):
        assert status() == "compiling CUDA fused.cu"
    con.register("src", pa.table({"a": np.arange(10)}))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    engine = con._get_engine()
    engine.live = {"stage": "running", "pipeline": 1, "pipelines": 2, "ctx": None,
                   "source": engine.planned("SELECT a FROM t")[0].physical.pipelines[0].source}
    assert status() == "scanning t, pipeline 1/2"
    engine.live = {"stage": "planning"}
    with compiling.compiling("Numba f"):
        assert status() == "planning, compiling Numba f"
    engine.live = {}
    con.close()


def test_connection_progress_option_writes_a_plain_line_off_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(P, "DELAY_S", 0.0)
    out = io.StringIO()  # a notebook's stderr is not a terminal
    monkeypatch.setattr("sys.stderr", out)
    con = hetdb.connect(str(tmp_path / "db"), device="cpu", progress=True)
    con.register("src", pa.table({"a": np.arange(300_000) % 1000}))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    with compiling.compiling("Numba slow_kernel"):
        # a statement that takes a while: the line is written, then erased with spaces
        con.sql("SELECT a, count(*) FROM t GROUP BY a ORDER BY a").fetchall()
        with con._progress():
            time.sleep(0.5)
    text = out.getvalue()
    assert "compiling Numba slow_kernel" in text and "\x1b" not in text
    assert text.endswith("\r")
    con.execute("SET progress = false")
    assert con.progress is False
    con.execute("RESET progress")
    assert con.progress is True
    con.close()
