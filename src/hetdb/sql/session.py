"""Session settings the binder reads while it binds one statement (set by ``hetdb.sql.bind``): the
connection's time zone, which TIMESTAMPTZ casts, parts and literals use (DuckDB's ``TimeZone``), and
facts the binder reports back (a plan that folded now() is not to be cached)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ZONE: ContextVar[str] = ContextVar("hetdb_session_time_zone", default="UTC")
_FACTS: ContextVar[dict | None] = ContextVar("hetdb_bind_facts", default=None)


def time_zone() -> str:
    """The time zone of the statement being bound."""
    return _ZONE.get()


def statement_time(now: Callable[[], int]) -> int:
    """The statement's current time (``now()`` the first time it is asked, the same value after: now(),
    current_timestamp and current_date of one statement agree, as in DuckDB). The plan folding it is
    marked volatile: it must not be reused by a later execution."""
    facts = _FACTS.get()
    if facts is None:
        return now()
    facts["volatile"] = True
    if "now" not in facts:
        facts["now"] = now()
    return facts["now"]


@contextmanager
def session(time_zone_name: str, facts: dict | None = None) -> Iterator[None]:
    """Bind in ``time_zone_name``; ``facts`` receives what the caller must know about the plan
    ({"volatile": True} when it may not be cached)."""
    token, facts_token = _ZONE.set(time_zone_name), _FACTS.set(facts if facts is not None else {})
    try:
        yield
    finally:
        _ZONE.reset(token)
        _FACTS.reset(facts_token)
