"""TIMESTAMPTZ ± INTERVAL on the session time zone's calendar, as DuckDB computes it (its ICU
extension; facts read from its source and checked against DuckDB across DST changes in
tests/sql/test_sql_interval_dst.py):

- the sub-millisecond part of the interval's microseconds moves the instant first;
- when no field of the interval is negative: months, then days, then the remaining time; when one is
  negative: the time first, then months, then days (each field skipped when 0);
- time (hours .. milliseconds) moves the instant by elapsed time;
- months move the wall date (day of month clamped to the month's end) and keep the wall time; the
  wall time is then read in the zone: one a spring-forward gap skips takes the offset before the
  change, one a fall-back change repeats the later (standard-time) instant;
- days move the instant by whole 24-hour days and then keep the wall time of day where the zone's
  offset changed in between (corrected by the offset difference); where that wall time does not
  exist, the instant stays 24-hour days away when the correction would be negative, else corrected.
"""

from __future__ import annotations

from typing import Any

from hetdb.exec import timezones as Z

US_DAY = Z.US_DAY


def _c_rem(xp, x, k: int):
    """C's remainder (sign of the dividend), as DuckDB's ``%``."""
    return xp.sign(x) * (xp.abs(x) % k)


def _add_months(xp, us, months, zone: str):
    from hetdb.exec.functions_datetime import _add_months as add_calendar_months
    from hetdb.exec.functions_datetime import _split

    days, tod = _split(xp, Z.to_local(xp, us, zone))
    moved = Z.to_utc(xp, (add_calendar_months(xp, days, months) * US_DAY + tod).astype(xp.int64), zone)
    return xp.where(months != 0, moved, us)


def _add_days(xp, us, days, zone: str):
    before = Z.utc_offsets(xp, us, zone)
    wall = (us + before) % US_DAY
    moved = us + days * US_DAY
    after = Z.utc_offsets(xp, moved, zone)
    adjust = before - after
    corrected = moved + adjust
    kept = ((corrected + Z.utc_offsets(xp, corrected, zone)) % US_DAY) == wall
    same = ((moved + after) % US_DAY == wall) | (adjust == 0)
    out = xp.where(same, moved, xp.where(kept | (adjust > 0), corrected, moved))
    return xp.where(days != 0, out, us)


def add_interval_tz(xp, us, months: Any, days: Any, micros: Any, zone: str):
    """UTC microseconds ``us`` plus (months, days, micros), each an int or an int64 array per row."""
    n = us.shape[0]
    months, days, micros = (xp.broadcast_to(xp.asarray(v, dtype=xp.int64), (n,)) for v in (months, days, micros))
    sub_ms = _c_rem(xp, micros, 1000)
    time = micros - sub_ms
    start = us + sub_ms
    forward = _add_days(xp, _add_months(xp, start, months, zone), days, zone) + time
    negative = (months < 0) | (days < 0) | (micros < 0)
    if not bool(negative.any()):
        return forward.astype(xp.int64)
    backward = _add_days(xp, _add_months(xp, start + time, months, zone), days, zone)
    return xp.where(negative, backward, forward).astype(xp.int64)


def whole_days_tz(xp, lo, hi, zone: str):
    """The most days ``n`` with ``lo`` + n days (the day step above) not past ``hi`` (lo <= hi), and
    that instant: DuckDB's TIMESTAMPTZ - TIMESTAMPTZ counts these days and then the elapsed rest."""
    guess = (Z.to_local(xp, hi, zone) - Z.to_local(xp, lo, zone)) // US_DAY
    best_n, best_at = xp.zeros_like(lo), lo
    for k in (-2, -1, 0, 1):  # a step is 24 hours give or take an offset change: one of these is it
        n = xp.maximum(guess + k, 0)
        at = _add_days(xp, lo, n, zone)
        take = (at <= hi) & (n >= best_n)
        best_n, best_at = xp.where(take, n, best_n), xp.where(take, at, best_at)
    return best_n, best_at
