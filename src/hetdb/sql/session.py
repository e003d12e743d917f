"""Session settings the binder reads while it binds one statement (set by ``hetdb.sql.bind``): the
connection's time zone, which TIMESTAMPTZ casts, parts and literals use (DuckDB's ``TimeZone``), and
facts the binder reports back (a plan that folded now() is not to be cached)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ZONE: ContextVar[str] = ContextVar("hetdb_session_time_zone", default="UTC")
_FACTS: ContextVar[dict | None] = ContextVar("hetdb_bind_facts", default=None)


def time_zone() -> str:
    """The time zone of the statement being bound."""
    return _ZONE.get()


def mark_volatile() -> None:
    """The statement folds the time it was bound at (now(), current_date): its plan must not be
    reused by a later execution."""
    facts = _FACTS.get()
    if facts is not None:
        facts["volatile"] = True


@contextmanager
def session(time_zone_name: str, facts: dict | None = None) -> Iterator[None]:
    """Bind in ``time_zone_name``; ``facts`` receives what the caller must know about the plan
    ({"volatile": True} when it may not be cached)."""
    token, facts_token = _ZONE.set(time_zone_name), _FACTS.set(facts)
    try:
        yield
    finally:
        _ZONE.reset(token)
        _FACTS.reset(facts_token)
