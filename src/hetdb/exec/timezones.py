"""Time zone arithmetic for TIMESTAMPTZ (UTC microseconds) with the rules of Python's ``zoneinfo``.

A zone's UTC offset is a step function of the UTC instant. Its changes within the data's span are
found with ``zoneinfo`` (one look-up per day of the span, a binary search to the second where the
offset changed) and every row finds its offset with one binary search among those few changes. Local wall time -> UTC follows DuckDB (ICU): a wall time that a spring-forward gap skips
is read with the offset before the change (02:30 becomes 03:30 in Europe/Berlin), a wall time that
a fall-back change repeats takes the later, standard-time instant.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import numpy as np

from hetdb.errors import SqlError

US_SECOND = 1_000_000
US_DAY = 86_400 * US_SECOND
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MIN_US = (dt.datetime(1, 1, 2, tzinfo=dt.UTC) - _EPOCH) // dt.timedelta(microseconds=1)
_MAX_US = (dt.datetime(9999, 12, 30, tzinfo=dt.UTC) - _EPOCH) // dt.timedelta(microseconds=1)


@lru_cache(maxsize=64)
def zone(name: str) -> dt.tzinfo:
    """The tzinfo of a zone name ('Europe/Berlin', 'UTC', 'EST', '+02:00'); SqlError naming it if unknown."""
    n = name.strip()
    if n.upper() in ("UTC", "Z", "GMT", "ETC/UTC"):
        return dt.UTC
    fixed = _fixed_offset(n)
    if fixed is not None:
        return fixed
    try:
        return ZoneInfo(n)
    except (ZoneInfoNotFoundError, ValueError):
        low = {z.lower(): z for z in available_timezones()}
        if n.lower() in low:
            return ZoneInfo(low[n.lower()])
        raise SqlError(f"unknown time zone '{name}' (write an IANA name such as 'Europe/Berlin', "
                       "'America/New_York' or 'UTC')") from None


def _fixed_offset(text: str) -> dt.tzinfo | None:
    import re

    m = re.fullmatch(r"([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", text)
    if not m:
        return None
    sign = -1 if m.group(1) == "-" else 1
    secs = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0)
    return dt.timezone(sign * dt.timedelta(seconds=secs))


def _offset_at(tz: dt.tzinfo, us: int) -> int:
    """UTC offset in microseconds at the UTC instant ``us``."""
    us = min(max(us, _MIN_US), _MAX_US)
    t = _EPOCH + dt.timedelta(microseconds=us)
    return t.astimezone(tz).utcoffset() // dt.timedelta(microseconds=1)


def _host(xp, a) -> np.ndarray:
    return a if xp is np else xp.asnumpy(a)


DENSE_DAYS = 400_000  # data spanning up to ~1100 years samples every day; wider spans their distinct days


def utc_offsets(xp, us, name: str):
    """UTC offset (microseconds) of each UTC instant in ``us`` (int64 array) in zone ``name``: the
    zone's offset changes within the data's span are found (one zoneinfo look-up per day, a binary
    search to the second on a day with a change) and each row looks its instant up among them."""
    tz = zone(name)
    if tz is dt.UTC or len(us) == 0:
        return xp.zeros(len(us), dtype=xp.int64)
    if isinstance(tz, dt.timezone):
        return xp.full(len(us), tz.utcoffset(None) // dt.timedelta(microseconds=1), dtype=xp.int64)
    days = xp.floor_divide(us, US_DAY)
    lo, hi = int(days.min()), int(days.max())
    if hi - lo < DENSE_DAYS:
        changes, offsets = _span_changes(name, lo // BLOCK_DAYS, hi // BLOCK_DAYS)
    else:
        # each distinct day and the next: a change inside a day with data is always seen
        uniq = _host(xp, xp.unique(days))
        changes, offsets = _changes(name, tuple(np.union1d(uniq, uniq + 1).tolist()))
    pos = xp.searchsorted(xp.asarray(changes), us, side="right")
    return xp.asarray(offsets)[pos]


# the dense path reads a zone's changes in blocks of whole days, each found once per process: batches
# of a few rows span different days, and per-span look-ups repeated the same zoneinfo calls per batch
# (a 500-row corpus query in 7-row batches took 11 s)
BLOCK_DAYS = 512


@lru_cache(maxsize=256)
def _span_changes(name: str, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """``_changes`` over the days of blocks ``first`` .. ``last`` (each block's end is the next
    block's first day, so a change on a block's last day is found)."""
    parts = [_changes(name, tuple(range(b * BLOCK_DAYS, (b + 1) * BLOCK_DAYS + 1))) for b in range(first, last + 1)]
    changes = np.concatenate([c for c, _ in parts])
    offsets = np.concatenate([parts[0][1][:1]] + [o[1:] for _, o in parts])
    return changes, offsets


@lru_cache(maxsize=1024)
def _changes(name: str, days: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(instants where the offset changes, offset before the first and after each change), from the
    offsets at the start of each of ``days`` (ascending; a change between two listed days is found
    by binary search between them)."""
    tz = zone(name)
    starts = [_offset_at(tz, d * US_DAY) for d in days]
    changes, offsets = [], [starts[0]]
    for i in range(len(days) - 1):
        a, b = starts[i], starts[i + 1]
        if a == b:
            continue
        lo_s, hi_s = days[i] * US_DAY // US_SECOND, days[i + 1] * US_DAY // US_SECOND  # first second at b
        while lo_s < hi_s:
            mid = (lo_s + hi_s) // 2
            if _offset_at(tz, mid * US_SECOND) == b:
                hi_s = mid
            else:
                lo_s = mid + 1
        changes.append(lo_s * US_SECOND)
        offsets.append(b)
    return np.array(changes, np.int64), np.array(offsets, np.int64)


def to_local(xp, us, name: str):
    """Wall-clock microseconds in zone ``name`` of UTC instants ``us``."""
    return us + utc_offsets(xp, us, name)


def to_utc(xp, local, name: str):
    """UTC instants of wall-clock times ``local`` in zone ``name`` (gap: offset before the change;
    repeated hour: the later instant)."""
    tz = zone(name)
    if tz is dt.UTC or len(local) == 0:
        return local
    early = utc_offsets(xp, local - US_DAY, name)
    late = utc_offsets(xp, local + US_DAY, name)
    u_early, u_late = local - early, local - late
    late_ok = utc_offsets(xp, u_late, name) == late
    return xp.where(late_ok, u_late, u_early)


def offset_text(offset_us: int) -> str:
    """DuckDB's offset suffix: +01, -05, +05:30, +00:53:28."""
    sign = "-" if offset_us < 0 else "+"
    s = abs(offset_us) // US_SECOND
    h, m, sec = s // 3600, s // 60 % 60, s % 60
    return f"{sign}{h:02d}" + (f":{m:02d}" if m or sec else "") + (f":{sec:02d}" if sec else "")


def format_tz(us: int, name: str) -> str:
    """DuckDB's text of a TIMESTAMPTZ: local time in zone ``name`` plus its offset."""
    off = _offset_at(zone(name), us)
    t = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us + off)
    text = t.strftime("%Y-%m-%d %H:%M:%S")
    if t.year < 1000:
        text = f"{t.year:04d}" + text[text.index("-"):]
    if t.microsecond:
        text += f".{t.microsecond:06d}".rstrip("0")
    return text + offset_text(off)


def parse_tz(text: str, name: str) -> int:
    """UTC microseconds of a TIMESTAMPTZ literal: an explicit offset or zone name in ``text`` wins,
    else the wall time is read in zone ``name``."""
    import re

    s = text.strip()
    m = re.fullmatch(r"(.*?\d)\s*([A-Za-z][A-Za-z_/+\-0-9]*)", s)
    zone_name = name
    if m and not re.fullmatch(r"[Tt]", m.group(2)):
        s, zone_name = m.group(1), m.group(2)
    try:
        t = dt.datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
    except ValueError:
        raise SqlError(f"cannot read '{text}' as a TIMESTAMP WITH TIME ZONE (write e.g. "
                       "'2024-03-31 02:30:00+02' or '2024-03-31 02:30 Europe/Berlin')") from None
    if t.tzinfo is not None:
        return (t - _EPOCH) // dt.timedelta(microseconds=1)
    local = (t - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    return int(to_utc(np, np.array([local], np.int64), zone_name)[0])
