"""Session settings the binder reads while it binds one statement (set by ``hetdb.sql.bind``): the
connection's time zone, which TIMESTAMPTZ casts, parts and literals use (DuckDB's ``TimeZone``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ZONE: ContextVar[str] = ContextVar("hetdb_session_time_zone", default="UTC")


def time_zone() -> str:
    """The time zone of the statement being bound."""
    return _ZONE.get()


@contextmanager
def session(time_zone_name: str) -> Iterator[None]:
    token = _ZONE.set(time_zone_name)
    try:
        yield
    finally:
        _ZONE.reset(token)
