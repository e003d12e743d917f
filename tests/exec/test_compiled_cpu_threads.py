"""Workers of a compiled CPU pipeline run their kernels on one thread each: the pool's threads start
with Numba's default (every core), so a worker that did not set its count started a team of that many
OpenMP threads for each of its gathers, merges and fallback kernels (16 x 16 threads on 16 cores)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.cpu import tuning  # noqa: E402
from hetdb.backend.cpu.keys import kernel_threads  # noqa: E402
from hetdb.exec import compiled_cpu  # noqa: E402


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread: nothing to oversubscribe")
def test_compiled_workers_run_kernels_on_one_thread(tmp_path, monkeypatch) -> None:
    rng = np.random.default_rng(3)
    n = 4000
    tables = {"t": pa.table({"g": pa.array(rng.integers(0, 50, n), pa.int64()),
                             "v": pa.array(rng.integers(-9, 99, n), pa.int64())})}
    db = stored_tables(tmp_path / "db", tables)
    seen: dict[int, int] = {}
    run_kernel = compiled_cpu._Worker._run_kernel

    def spy(self, *args, **kwargs):
        seen[threading.get_ident()] = kernel_threads()
        return run_kernel(self, *args, **kwargs)

    monkeypatch.setattr(compiled_cpu._Worker, "_run_kernel", spy)
    sql = "SELECT g, sum(v), count(*) FROM t WHERE v > 3 GROUP BY g"
    with hetdb.connect(db.path, device="cpu", threads=2) as con:
        got = con.sql(sql).arrow()
    assert mismatch(got, duck_tables(tables).sql(sql).to_arrow_table(), ()) is None
    workers = {t: k for t, k in seen.items() if t != threading.main_thread().ident}
    assert workers, seen
    assert set(workers.values()) == {1}, seen


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread: nothing to choose")
def test_small_aggregation_states_finalize_on_one_kernel_thread(tmp_path, monkeypatch) -> None:
    """An aggregation whose workers reduced many rows to few partial states merges them with
    single-threaded kernels (tuning small_sink_rows counts its held states, not its input rows);
    with the threshold lowered the merge runs on the connection's threads."""
    from hetdb.exec.operators.aggregate import HashAggregate

    rng = np.random.default_rng(4)
    n = 300_000
    tables = {"t": pa.table({"g": pa.array(rng.integers(0, 50, n), pa.int64()),
                             "v": pa.array(rng.integers(-9, 99, n), pa.int64())})}
    db = stored_tables(tmp_path / "db", tables, rows_per_page=1 << 14)
    seen: list[int] = []
    finalize = HashAggregate.finalize

    def spy(self, ctx, g):
        seen.append(kernel_threads())
        return finalize(self, ctx, g)

    monkeypatch.setattr(HashAggregate, "finalize", spy)
    sql = "SELECT g, sum(v), count(*) FROM t GROUP BY g"
    want = duck_tables(tables).sql(sql).to_arrow_table()
    with hetdb.connect(db.path, device="cpu", threads=2) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
        assert seen == [1], seen
        monkeypatch.setitem(tuning.values, "small_sink_rows", 1)
        seen.clear()
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
        assert seen == [2], seen


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread: nothing to choose")
def test_lone_worker_over_small_source_runs_kernels_on_one_thread(tmp_path, monkeypatch) -> None:
    """A pipeline whose source has few rows runs on one worker (the calling thread) whose kernels use
    one thread too: waking the connection's kernel threads costs more than such work."""

    rng = np.random.default_rng(9)
    n = 5000
    tables = {"t": pa.table({"g": pa.array(rng.integers(0, 50, n), pa.int64()),
                             "v": pa.array(rng.integers(-9, 99, n), pa.int64())})}
    db = stored_tables(tmp_path / "db", tables, rows_per_page=1 << 14)  # one morsel
    seen: list[int] = []
    run_kernel = compiled_cpu._Worker._run_kernel

    def spy(self, *args, **kwargs):
        seen.append(kernel_threads())
        return run_kernel(self, *args, **kwargs)

    monkeypatch.setattr(compiled_cpu._Worker, "_run_kernel", spy)
    sql = "SELECT g, sum(v) FROM t GROUP BY g"
    want = duck_tables(tables).sql(sql).to_arrow_table()
    with hetdb.connect(db.path, device="cpu", threads=2) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
        assert seen and set(seen) == {1}, seen
        monkeypatch.setitem(tuning.values, "small_source_rows", 1)
        seen.clear()
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
        assert seen and set(seen) == {2}, seen


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread: nothing to choose")
def test_rows_a_right_semi_join_emits_at_the_end_finalize_on_the_connections_threads(tmp_path, monkeypatch) -> None:
    """A pipeline that marks build rows (right semi / anti join) hands its sink nothing until the workers
    are done, then every marked build row: its end (the gathers, the next hash build) runs on the
    connection's threads when the build is large, not on one because the sink had taken no row yet."""
    from hetdb.backend.cpu import join as cpu_join

    rng = np.random.default_rng(21)
    n_outer, n_inner = 3000, 80_000  # (the inner side 50k+ rows and 4x the outer: semi_build_side hashes the outer)
    tables = {"o": pa.table({"k": pa.array(np.arange(n_outer) * 3, pa.int64()),
                             "x": pa.array(rng.integers(0, 5, n_outer), pa.int64())}),
              "i": pa.table({"k": pa.array(rng.integers(0, 3 * n_outer, n_inner), pa.int64()),
                             "x": pa.array(rng.integers(0, 5, n_inner), pa.int64())})}
    db = stored_tables(tmp_path / "db", tables, rows_per_page=1 << 12)
    sql = ("SELECT count(*), sum(c.x) FROM (SELECT o.k, o.x FROM o WHERE EXISTS "
           "(SELECT 1 FROM i WHERE i.k = o.k AND i.x <> o.x)) c JOIN i ON i.k = c.k")
    built: list[tuple[int, int]] = []
    join_build = cpu_join.join_build

    def spy(keys):
        built.append((int(keys[0].shape[0]), kernel_threads()))
        return join_build(keys)

    monkeypatch.setattr(cpu_join, "join_build", spy)
    from hetdb.exec.operators.join import HashProbe

    emitted: list[int] = []
    marked_build = HashProbe._marked_build
    monkeypatch.setattr(HashProbe, "_marked_build",
                        lambda self, *a: emitted.append(kernel_threads()) or marked_build(self, *a))
    monkeypatch.setitem(tuning.values, "small_sink_rows", 1000)
    monkeypatch.setitem(tuning.values, "small_source_rows", 1000)
    want = duck_tables(tables).sql(sql).to_arrow_table()
    with hetdb.connect(db.path, device="cpu", threads=2) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
        plan = con.explain(sql, analyze=True)
    assert "right_semi" in plan, plan
    marked = [t for rows, t in built if 1000 <= rows < n_outer]  # the build of the marked outer rows
    assert marked and set(marked) == {2}, built
    assert emitted == [2, 2]  # (the marked rows' gathers too; the query and its EXPLAIN ANALYZE)
    monkeypatch.setitem(tuning.values, "small_sink_rows", 10_000)  # (now a small build: one thread)
    built.clear()
    emitted.clear()
    with hetdb.connect(db.path, device="cpu", threads=2) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
    assert {t for rows, t in built if 1000 <= rows < n_outer} == {1}, built
    assert emitted == [1]
