"""DuckDB's strftime/strptime format specifiers on Python's datetime: ``%g`` (milliseconds), ``%n``
(nanoseconds), ``%z`` of a TIMESTAMP (``+00``), ``%c``/``%x``/``%X`` (ISO date and time, not the
C locale's), ``%Y`` and ``%G`` with at least four digits; a specifier DuckDB does not know is an error, as there
(``%e``, ``%F``, ``%s`` ... would otherwise print what the C library makes of them)."""

from __future__ import annotations

import datetime as dt
import re

from hetdb.errors import HetdbError

_KNOWN = frozenset("aAwudbBhmyYHIpMSfgnzZjUWVGcxXT%")
_DASHED = frozenset("dmyHIMSj")  # %-d ...: without leading zeros
_SPEC = re.compile(r"%(-?)(.?)")


def _bad(what: str, spec: str) -> HetdbError:
    return HetdbError(f"{what}: format specifier %{spec} is not supported (DuckDB's: %a %A %w %u %d %b %B %h %m "
                      "%y %Y %H %I %p %M %S %f %g %n %z %Z %j %U %W %V %G %c %x %X %T %%, and %-d %-m %-y %-H "
                      "%-I %-M %-S %-j; strptime does not take %n)")


def strftime(value: dt.datetime, fmt: str) -> str:
    """``value`` formatted by DuckDB's rules (a TIMESTAMPTZ's %z/%Z are replaced by the caller)."""
    def one(m: re.Match) -> str:
        dash, c = m.group(1), m.group(2)
        if c not in _KNOWN or (dash and c not in _DASHED):
            raise _bad("strftime", dash + c)
        if c == "%":
            return "%%"
        if c == "Y":
            return f"{value.year:04d}"
        if c == "G":  # the ISO year, at least four digits as %Y
            return f"{value.isocalendar()[0]:04d}"
        if c == "g":
            return f"{value.microsecond // 1000:03d}"
        if c == "n":
            return f"{value.microsecond * 1000:09d}"
        if c == "z":
            return "+00"
        if c == "c":
            return f"{value.year:04d}-%m-%d %H:%M:%S"
        if c == "x":
            return f"{value.year:04d}-%m-%d"
        if c in "XT":
            return "%H:%M:%S"
        return m.group(0)
    return value.strftime(_SPEC.sub(one, fmt))


def strptime_format(fmt: str) -> str:
    """A DuckDB strptime format as Python's: %-m ... (Python reads numbers without leading zeros
    anyway), %g as %f (its digits are the fraction's leading ones), %c/%x/%X as ISO."""
    def one(m: re.Match) -> str:
        dash, c = m.group(1), m.group(2)
        if c not in _KNOWN or c == "n" or (dash and c not in _DASHED):
            raise _bad("strptime", dash + c)
        return {"g": "%f", "c": "%Y-%m-%d %H:%M:%S", "x": "%Y-%m-%d", "X": "%H:%M:%S", "T": "%H:%M:%S"}.get(c, "%" + c)
    return _SPEC.sub(one, fmt)


def week_day(text: str, fmt: str) -> tuple[str, str]:
    """A week number (%U: weeks from Sunday, %W: from Monday) without a weekday means the week's first
    day, as DuckDB reads it (Python ignores the week then): that day appended to text and format."""
    if re.search(r"%[aAwu]", fmt) or not re.search(r"%[UW]", fmt):
        return text, fmt
    return text + (" 0" if "%U" in fmt else " 1"), fmt + " %w"
