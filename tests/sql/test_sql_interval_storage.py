"""Storing INTERVAL columns: Arrow month_day_nano_interval and duration values written through the
table store read back as DuckDB reads the same Arrow data (nanoseconds truncated to microseconds,
durations as microsecond intervals), and an INTERVAL result stored by CREATE TABLE AS keeps its
months, days and microseconds."""

from __future__ import annotations

import duckdb
import pyarrow as pa

import hetdb
from hetdb import types as T
from hetdb.storage import ColumnSpec, Database

MDN = pa.month_day_nano_interval()
SOURCE = pa.table({
    "id": pa.array(range(6), pa.int64()),
    "iv": pa.array([(1, 2, 3_000), (-1, -2, -1_999), (0, 0, 999), None, (14, -40, 86_400_000_000_001),
                    (0, 30, 0)], MDN),
    "dur": pa.array([1_500, -2_500, None, 86_400_000_000_000, 0, 7], pa.duration("ns")),
})


def test_arrow_intervals_and_durations_store_as_duckdb_reads_them(tmp_path) -> None:
    db = Database.open(str(tmp_path), create=True)
    schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=True) for f in SOURCE.schema]
    assert [s.dtype for s in schema[1:]] == [T.INTERVAL, T.INTERVAL]
    with db.create_table("t", schema, rows_per_page=4) as writer:
        writer.append_arrow(SOURCE)
    duck = duckdb.connect()
    duck.register("src", SOURCE)
    sql = "SELECT id, iv, dur, iv + dur, dur > INTERVAL 0 SECOND FROM {} ORDER BY id"
    with hetdb.connect(str(tmp_path)) as con:
        got = con.sql(sql.format("t")).fetchall()
    want = duck.sql(sql.format("src")).fetchall()
    assert got == want and len(got) == SOURCE.num_rows


def test_create_table_as_keeps_interval_fields(tmp_path) -> None:
    sql = ("SELECT id, INTERVAL (id) MONTH - INTERVAL (id * 3) DAY + INTERVAL 90 MINUTE AS iv FROM "
           "range(5) r(id)")
    with hetdb.connect(str(tmp_path)) as con:
        con.sql(f"CREATE TABLE s AS {sql}")
        got = con.sql("SELECT id, iv, iv * 2 FROM s ORDER BY id").fetchall()
    want = duckdb.sql(f"SELECT id, iv, iv * 2 FROM ({sql}) ORDER BY id").fetchall()
    assert got == want and len(got) == 5


def test_gpu_connections_read_stored_intervals_and_lists_on_the_host(tmp_path) -> None:
    """Which plans a GPU connection hands to the CPU (exec/engine._host_only): a scan of a stored
    INTERVAL column and LIST results; not a scan of the table's other columns."""
    from hetdb.exec.engine import _host_only

    with hetdb.connect(str(tmp_path)) as con:
        con.sql("CREATE TABLE s AS SELECT range AS id, INTERVAL (range) DAY AS iv FROM range(3)")
        plan = con._get_engine().logical_plan
        reasons = [_host_only(plan(q)) for q in ("SELECT id, iv FROM s ORDER BY iv DESC",
                                                  "SELECT array_agg(id) FROM s", "SELECT sum(id) FROM s",
                                                  "SELECT INTERVAL 1 DAY * id FROM s")]
    assert reasons == ["stored INTERVAL columns are read on the host",
                       "LIST values are computed on the host", "", ""]
