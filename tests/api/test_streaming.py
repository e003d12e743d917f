"""Streamed results: ``execute(...).fetch_record_batch(n)`` reads batches while the query runs, in
the order ``arrow()`` gives, with bounded memory; dropping the reader cancels the query; errors
reach the reader as HetdbError; the next statement on the connection lets a stream finish."""

from __future__ import annotations

import gc
import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import hetdb
from hetdb import types as T
from hetdb.errors import HetdbError
from hetdb.exec import stream as S
from hetdb.storage.format import ColumnSpec

ROWS = 200_000


@pytest.fixture
def con(tmp_path, monkeypatch):
    # a queue of one batch and no pending room: the query must wait for the reader
    monkeypatch.setattr(S, "QUEUE_BYTES", 1)
    monkeypatch.setattr(S, "PENDING_BYTES", 1)
    c = hetdb.connect(str(tmp_path / "db"), device="cpu", threads=2)
    k = np.arange(ROWS, dtype=np.int64)
    data = pa.table({"k": k, "g": k % 13, "s": pa.array([f"v{i % 97}" for i in range(ROWS)], pa.large_string())})
    schema = [ColumnSpec("k", T.INT64), ColumnSpec("g", T.INT64), ColumnSpec("s", T.STRING)]
    with c.db.create_table("t", schema, rows_per_page=10_000) as w:  # 20 morsels for 2 workers
        w.append_arrow(data)
    c.duck = duckdb.connect()
    c.duck.register("t", data)
    yield c
    c.close()


def _wait(predicate, seconds: float = 30.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_batches_arrive_while_the_query_runs_in_arrow_order(con):
    q = "SELECT k, s FROM t WHERE g <> 3"
    want = con.sql(q).arrow()
    result = con.execute(q)._last
    stream = result._stream
    assert stream is not None and not stream.finished  # waiting for a reader, not done
    assert stream.rows < want.num_rows // 4             # bounded: most rows are not produced yet
    reader = con.fetch_record_batch(7_000)
    assert isinstance(reader, pa.RecordBatchReader)
    sizes, parts = [], []
    for b in reader:
        sizes.append(b.num_rows)
        parts.append(b)
    got = pa.Table.from_batches(parts)
    assert got.equals(want)  # the same rows in the same (morsel) order as arrow()
    assert set(sizes[:-1]) == {7_000} and 0 < sizes[-1] <= 7_000
    assert sorted(got.column("k").to_pylist()) == sorted(r[0] for r in con.duck.sql(q).fetchall())
    assert stream.finished and result.stats["rows"] == want.num_rows


def test_order_by_and_aggregates_stream_after_the_sort(con):
    for q in ["SELECT g, count(*) AS n, min(s) AS m FROM t GROUP BY g ORDER BY g",
              "SELECT k FROM t ORDER BY g DESC, k LIMIT 50000"]:
        got = con.execute(q).fetch_record_batch(1000).read_all()
        assert [tuple(r.values()) for r in got.to_pylist()] == con.duck.sql(q).fetchall(), q
        assert got.num_rows > 0


def test_dropping_the_reader_cancels_the_query_and_frees_memory(con):
    cur = con.cursor()
    reader = cur.execute("SELECT k, s FROM t").fetch_record_batch(1000)
    stream = cur._last._reader_stream
    assert reader.read_next_batch().num_rows == 1000
    assert not stream.finished
    del reader
    gc.collect()
    assert _wait(lambda: stream.finished)
    assert stream.cancelled and stream.error is None and stream.rows < ROWS
    assert con._engine.memory.used == 0
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(ROWS,)]  # the connection goes on


def test_close_of_cursor_or_result_cancels(con):
    cur = con.cursor()
    cur.execute("SELECT k FROM t")
    stream = cur._last._stream
    cur.close()
    assert _wait(lambda: stream.finished) and stream.cancelled
    assert con.sql("SELECT count(*) AS n FROM t").fetchall() == [(ROWS,)]


def test_errors_reach_the_reader_as_hetdb_errors(con):
    q = "SELECT k, CAST(CASE WHEN k > 150000 THEN 'x' ELSE '1' END AS INTEGER) AS v FROM t"
    reader = con.execute(q).fetch_record_batch(1000)
    seen = 0
    with pytest.raises(HetdbError, match="cast"):
        for b in reader:
            seen += b.num_rows
    assert 0 < seen <= 150_001
    with pytest.raises(HetdbError, match="cast"):  # failing before the first batch: execute raises
        con.execute("SELECT CAST('x' || k AS INTEGER) FROM t")
    assert con.execute("SELECT 1 AS one").fetchall() == [(1,)]


def test_next_statement_lets_an_open_reader_finish(con):
    reader = con.execute("SELECT k FROM t").fetch_record_batch(50_000)
    first = reader.read_next_batch()
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(ROWS,)]
    rest = reader.read_all()
    assert first.num_rows + rest.num_rows == ROWS
    assert rest.column("k").to_pylist()[-1] == ROWS - 1


def test_next_statement_drops_an_unread_connection_result_but_keeps_a_cursors(con):
    con.execute("SELECT k FROM t")
    dropped = con._last._stream
    cur = con.cursor()
    cur.execute("SELECT k, g FROM t")
    assert dropped.finished and dropped.cancelled  # nothing could read it any more
    kept = cur._last._stream
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(ROWS,)]
    assert kept.finished and not kept.cancelled
    assert len(cur.fetchall()) == ROWS  # the cursor's result was collected for it


def test_fetch_methods_on_a_streamed_result(con):
    q = "SELECT k, g FROM t WHERE k < 30000"
    want = con.duck.sql(q).fetchall()
    cur = con.cursor()
    assert cur.execute(q).fetchone() == want[0]
    assert cur.fetchmany(3) == want[1:4]
    assert cur.fetchall() == want[4:]
    assert con.execute(q).arrow().num_rows == len(want)
    try:
        import pandas  # noqa: F401  (an optional extra: CI's clean clone has none)
    except ImportError:
        from hetdb.result import MissingExtraError

        with pytest.raises(MissingExtraError, match="pip install"):
            con.execute(q).df()
    else:
        assert con.execute(q).df()["k"].tolist() == [r[0] for r in want]
