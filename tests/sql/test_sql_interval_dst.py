"""TIMESTAMPTZ ± INTERVAL, TIMESTAMPTZ - TIMESTAMPTZ and age() across the DST changes of the
session time zone, compared with DuckDB under the same ``SET TimeZone``: instants every 20 minutes
over the two days around each 2024 change of America/New_York and Europe/Berlin, moved by constant
intervals of every sign mix, per-row intervals, and ``n * INTERVAL`` with a per-row count.

INTERVAL '24 hours' never shares a query with INTERVAL '1 day': DuckDB 2.0 then answers both
columns with the first one's values (the two constants compare equal), which is not its rule."""

from __future__ import annotations

import duckdb
import pytest

import hetdb
from hetdb.bench.compare import compare_tables

INTERVALS = ["INTERVAL '1 day'", "INTERVAL '1 month'", "INTERVAL '1 day 1 hour'", "INTERVAL '2 hours'",
             "INTERVAL '1 month 1 day'", "INTERVAL '-1 day'", "INTERVAL '1 year'",
             "INTERVAL '1 day -3 hours'", "INTERVAL '-1 month -1 day -30 minutes'", "INTERVAL '7 days 90 minutes'",
             "INTERVAL '1 day 0.0015 seconds'"]

QUERIES = [
    "SELECT i, " + ", ".join(f"t + {iv}, t - {iv}" for iv in INTERVALS) + " FROM {src} ORDER BY i",
    "SELECT i, t + to_months((i % 5) - 2) + to_days((i % 7) - 3) + to_minutes((i % 11) * 37 - 150) "
    "+ to_microseconds((i % 3) * 1500 - 1500), t - (to_days((i % 3) - 1) + to_hours((i % 4) - 2)), "
    "t + INTERVAL '24 hours', t - INTERVAL '24 hours' FROM {src} ORDER BY i",
    "SELECT i, t + (i % 4 - 1) * INTERVAL '1 day 2 hours', t - (i % 3) * INTERVAL '1 month', t + INTERVAL (i % 5) DAY, "
    "date_add(t, INTERVAL '1 day') FROM {src} ORDER BY i",
    "SELECT i, t2 - t, t - t2, age(t2, t), age(t, t2), t + (t2 - t), t - (t2 - t) FROM {src} ORDER BY i",
]

# (zone, the day before a change): spring forward and fall back of 2024
DAYS = [("America/New_York", "2024-03-09"), ("America/New_York", "2024-11-02"),
        ("Europe/Berlin", "2024-03-30"), ("Europe/Berlin", "2024-10-26")]


def _source(day: str) -> str:
    return (f"(SELECT CAST('{day} 00:00:00' AS TIMESTAMPTZ) + i * INTERVAL '20 minutes' AS t, "
            f"CAST('{day} 12:00:00' AS TIMESTAMPTZ) + i * INTERVAL '7 minutes' AS t2, i FROM range(0, 150) r(i))")


@pytest.mark.parametrize("zone,day", DAYS)
def test_timestamptz_interval_arithmetic_across_dst_matches_duckdb(zone, day):
    duck = duckdb.connect()
    duck.execute(f"SET TimeZone = '{zone}'")
    compared = 0
    with hetdb.connect(device="cpu", timezone=zone) as con:
        for q in QUERIES:
            sql = q.format(src=_source(day))
            got, want = con.sql(sql).arrow(), duck.sql(sql).to_arrow_table()
            assert got.num_rows == want.num_rows == 150
            assert compare_tables(got, want, ordered=True) is None, sql
            compared += 1
    assert compared == len(QUERIES)


def test_set_timezone_changes_the_calendar_of_the_arithmetic():
    """The same instant + 1 day is 23 or 24 elapsed hours later depending on the session's zone."""
    sql = ("SELECT epoch(TIMESTAMPTZ '{at}' + INTERVAL 1 DAY) - epoch(TIMESTAMPTZ '{at}'), "
           "TIMESTAMPTZ '{at}' + INTERVAL 1 DAY - TIMESTAMPTZ '{at}'")
    duck = duckdb.connect()
    seen = set()
    with hetdb.connect(device="cpu") as con:
        for zone in ("UTC", "Europe/Berlin", "America/New_York"):
            con.execute(f"SET TimeZone = '{zone}'")
            duck.execute(f"SET TimeZone = '{zone}'")
            for at in ("2024-03-09 12:00:00+00", "2024-03-30 12:00:00+00"):
                got = con.sql(sql.format(at=at)).fetchall()
                assert got == duck.sql(sql.format(at=at)).fetchall()
                seen.add(got[0][0])
    assert seen == {86400.0, 82800.0}
