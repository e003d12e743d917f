"""TIMESTAMPTZ data from outside keeps its meaning: tz-aware Parquet read in place, imported into a
table and written back, and registered Arrow tables, answered as DuckDB answers over the same file
in the same session time zone; results are Arrow timestamps in the session's zone. The SQL behaviour
itself (DST changes, casts, parts) is in corpus/timezone.test."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hetdb
from hetdb.bench.compare import compare_tables
from hetdb.errors import SqlError

QUERIES = [
    "SELECT id, ts, CAST(ts AS VARCHAR) AS s, CAST(ts AS TIMESTAMP) AS wall, CAST(ts AS DATE) AS d FROM {t} ORDER BY id",
    "SELECT date_trunc('day', ts) AS day, count(*) AS n, min(ts) AS lo FROM {t} GROUP BY 1 ORDER BY 1",
    "SELECT extract(hour FROM ts) AS h, count(*) AS n FROM {t} GROUP BY 1 ORDER BY 1",
    "SELECT id, ts + INTERVAL 1 DAY AS next_day, date_diff('hour', ts, ts + INTERVAL 1 DAY) AS hours FROM {t} ORDER BY id",
    "SELECT count(*) AS n FROM {t} WHERE ts >= TIMESTAMPTZ '2024-11-03 01:00:00-04' AND ts < '2024-11-03 03:00:00'",
]


@pytest.fixture(scope="module")
def tz_parquet(tmp_path_factory):
    """Instants every 11 minutes across New York's fall-back night, stored with tz America/New_York."""
    start = dt.datetime(2024, 11, 2, 22, tzinfo=dt.UTC)
    us = np.array([(start - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
                   + i * 660_000_000 for i in range(150)], np.int64)
    table = pa.table({"id": pa.array(np.arange(150, dtype=np.int64)),
                      "ts": pa.array(us, pa.int64(), mask=np.arange(150) % 17 == 3)
                      .cast(pa.timestamp("us", tz="America/New_York"))})
    path = str(tmp_path_factory.mktemp("tz") / "events.parquet")
    pq.write_table(table, path)
    return path, table


def _duck(zone: str):
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    return con


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York"])
def test_parquet_in_place_import_and_export_match_duckdb(tz_parquet, tmp_path, zone):
    path, _ = tz_parquet
    duck = _duck(zone)
    compared = 0
    with hetdb.connect(str(tmp_path / "db"), device="cpu", timezone=zone) as con:
        con.execute(f"CREATE TABLE events AS SELECT * FROM '{path}'")
        assert con.sql("DESCRIBE events").fetchall()[1][1] == "TIMESTAMP WITH TIME ZONE"
        out = str(tmp_path / "back.parquet")
        con.execute(f"COPY events TO '{out}'")
        for source in (f"'{path}'", "events", f"'{out}'"):
            for q in QUERIES:
                got = con.sql(q.format(t=source)).arrow()
                want = duck.sql(q.format(t=f"'{path}'")).arrow().read_all()
                assert [str(t) for t in got.schema.types] == [str(t) for t in want.schema.types], q
                assert compare_tables(got, want, True) is None, (source, q)
                compared += 1
    assert compared == 3 * len(QUERIES)
    assert pq.read_schema(out).field("ts").type.tz is not None


def test_registered_arrow_table_keeps_its_instants(tz_parquet):
    _, table = tz_parquet
    with hetdb.connect(device="cpu", timezone="UTC") as con:
        con.register("ev", table)
        got = con.sql("SELECT id, ts FROM ev ORDER BY id").arrow()
    assert got.column("ts").type == pa.timestamp("us", tz="UTC")
    assert got.column("ts").cast(pa.int64()).equals(table.column("ts").cast(pa.int64()))


def test_time_zone_option_and_set():
    with hetdb.connect(device="cpu", timezone="Asia/Kolkata") as con:
        assert con.sql("SELECT CAST(TIMESTAMPTZ '2024-01-01 00:00:00+00' AS VARCHAR)").fetchall() == \
            [("2024-01-01 05:30:00+05:30",)]
        con.execute("SET TimeZone = 'America/New_York'")
        assert con.sql("SELECT CAST(TIMESTAMPTZ '2024-01-01 00:00:00+00' AS VARCHAR)").fetchall() == \
            [("2023-12-31 19:00:00-05",)]
        assert con.sql("SELECT now()").arrow().schema.field(0).type == pa.timestamp("us", tz="America/New_York")
        with pytest.raises(SqlError, match="unknown time zone 'Nowhere/Land'"):
            con.execute("SET TimeZone = 'Nowhere/Land'")
    with pytest.raises(SqlError, match="unknown time zone"):
        hetdb.connect(device="cpu", timezone="Mars/Base")


def test_create_insert_timestamptz_columns(tmp_path):
    """CREATE TABLE with TIMESTAMPTZ columns; inserted text and TIMESTAMPs are read in the session's
    zone (a skipped wall time moves forward, a repeated one takes the later instant, as DuckDB)."""
    with hetdb.connect(str(tmp_path / "db"), device="cpu", timezone="Europe/Berlin") as con:
        con.execute("CREATE TABLE t (id INTEGER, x TIMESTAMPTZ, y TIMESTAMP WITH TIME ZONE)")
        con.execute("INSERT INTO t VALUES (1, '2024-03-31 02:30:00', TIMESTAMP '2024-10-27 02:30:00'), "
                    "(2, TIMESTAMPTZ '2024-01-01 00:00:00+00', NULL)")
        assert con.sql("SELECT id, x::VARCHAR, y::VARCHAR FROM t ORDER BY id").fetchall() == [
            (1, "2024-03-31 03:30:00+02", "2024-10-27 02:30:00+01"), (2, "2024-01-01 01:00:00+01", None)]
        assert [r[1] for r in con.sql("DESCRIBE t").fetchall()] == ["INTEGER", "TIMESTAMP WITH TIME ZONE",
                                                                   "TIMESTAMP WITH TIME ZONE"]


def test_aware_datetime_parameter_is_a_timestamptz():
    zone = "America/New_York"
    value = dt.datetime(2024, 7, 1, 12, 0, tzinfo=zoneinfo.ZoneInfo(zone))
    with hetdb.connect(device="cpu", timezone="Europe/Berlin") as con:
        got = con.sql("SELECT CAST(? AS VARCHAR), typeof(?), TIMESTAMP '2024-01-01 10:00+02'", [value, value]).fetchall()
    duck = _duck("Europe/Berlin")
    want = duck.execute("SELECT CAST(CAST(? AS TIMESTAMPTZ) AS VARCHAR), TIMESTAMP '2024-01-01 10:00+02'",
                        [value.isoformat(sep=" ")]).fetchall()
    assert got[0][1] == "TIMESTAMP WITH TIME ZONE"
    assert (got[0][0], got[0][2]) == want[0] == ("2024-07-01 18:00:00+02", dt.datetime(2024, 1, 1, 10, 0))


def test_now_is_taken_per_execution_not_from_the_plan_cache():
    import time

    with hetdb.connect(device="cpu") as con:
        first = con.sql("SELECT now(), current_timestamp").fetchall()[0]
        time.sleep(0.02)
        second = con.sql("SELECT now(), current_timestamp").fetchall()[0]
    assert first[0] == first[1] and second[0] > first[0]
