"""exec/timezones.py against Python's zoneinfo: offsets of random instants (a span of a few years,
sampled per day, and one of 9,000 years, looked up by distinct day), and DuckDB's rules for wall
times a DST change skips or repeats."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from hetdb.errors import SqlError
from hetdb.exec import timezones as Z

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _reference(us: np.ndarray, name: str) -> list[int]:
    z = ZoneInfo(name)
    return [(EPOCH + dt.timedelta(microseconds=int(v))).astimezone(z).utcoffset() // dt.timedelta(microseconds=1)
            for v in us]


@pytest.mark.parametrize("name", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"])
@pytest.mark.parametrize("span", [(1.2e15, 1.8e15), (-6.0e16, 2.5e17)])
def test_offsets_match_zoneinfo(name, span):
    rng = np.random.default_rng(7)
    us = rng.integers(int(span[0]), int(span[1]), 3000).astype(np.int64)
    # and instants right at / around this zone's changes in 2024
    z = ZoneInfo(name)
    edges = [int((dt.datetime(2024, m, d, h, tzinfo=dt.UTC) - EPOCH) // dt.timedelta(microseconds=1)) + k
             for m, d in ((3, 10), (3, 31), (4, 7), (10, 6), (10, 27), (11, 3)) for h in range(24)
             for k in (-1, 0, 1)]
    us = np.concatenate([us, np.array(edges, np.int64)])
    got = Z.utc_offsets(np, us, name)
    assert got.tolist() == _reference(us, name), z


def test_wall_times_skipped_or_repeated_resolve_as_duckdb():
    def utc(text: str, name: str) -> str:
        local = (dt.datetime.fromisoformat(text) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        out = int(Z.to_utc(np, np.array([local], np.int64), name)[0])
        return Z.format_tz(out, name)

    assert utc("2024-03-31 02:30:00", "Europe/Berlin") == "2024-03-31 03:30:00+02"   # skipped: moves on
    assert utc("2024-10-27 02:30:00", "Europe/Berlin") == "2024-10-27 02:30:00+01"   # repeated: later
    assert utc("2024-03-10 02:30:00", "America/New_York") == "2024-03-10 03:30:00-04"
    assert utc("2024-11-03 01:30:00", "America/New_York") == "2024-11-03 01:30:00-05"
    assert Z.format_tz(Z.parse_tz("2024-01-01 10:00+05:30", "UTC"), "Asia/Kolkata") == "2024-01-01 10:00:00+05:30"


def test_fixed_offsets_and_unknown_zones():
    us = np.array([0, 10**15], np.int64)
    assert Z.utc_offsets(np, us, "+02:00").tolist() == [7_200_000_000] * 2
    assert Z.utc_offsets(np, us, "UTC").tolist() == [0, 0]
    with pytest.raises(SqlError, match="unknown time zone 'Atlantis/Capital'"):
        Z.zone("Atlantis/Capital")
