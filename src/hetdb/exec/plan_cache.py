"""Plans shared by every connection of this process.

A connection keeps its own plan cache (SQL text -> plan), but a fresh connection — a new notebook
cell's ``hetdb.connect``, the benchmark's warm runs, a service opening one connection per request —
would plan every query again: parsing, binding, optimisation with cardinality samples and physical
planning take 10-30 ms for an SSB query, more than a warm GPU query runs. Plans are immutable (the
physical plan holds operator descriptions; run-time state lives elsewhere), so connections of one
process can share them.

An entry is keyed by everything that decides the plan besides the data: the database's path, the
SQL text, the connection options, the backend, the names registered on the connection (they shadow
stored tables) and the identity of the database's view definitions. It is used only while every
table it reads is at the committed version it was planned against (``Database.table_identity``).
Plans that read files or registered objects are never shared (``plan_tables`` returns None).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

ENTRIES = 512


@dataclass(frozen=True)
class SharedPlan:
    plan: Any                                   # the optimized logical plan (L.Output)
    physical: Any                               # its PhysicalPlan
    tables: tuple[tuple[str, Any], ...]         # (table name, Database.table_identity) planned against


_lock = threading.Lock()
_plans: OrderedDict[tuple, SharedPlan] = OrderedDict()
# plan_key's memos (a fresh connection per query paid realpath's syscalls and the options' repr,
# tens of microseconds, at the head of every query): database path -> its realpath, and
# id(options) -> (options, repr(options)) (Options is frozen: one object, one repr)
_REALPATHS: dict[str, str] = {}
_REPRS: dict[int, tuple[Any, str]] = {}


def plan_key(db: Any, sql: str, options: Any, backend: str, registered: frozenset[str]) -> tuple | None:
    """The key of ``sql`` planned on this connection, or None when it cannot be shared (a database
    without a path)."""
    path = getattr(db, "path", None)
    if not path:
        return None
    try:
        st = os.stat(os.path.join(path, "views.json"))
        views = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        views = None
    real = _REALPATHS.get(path)
    if real is None:
        real = os.path.realpath(path)
        if os.path.isabs(path):  # (a relative path's depends on the working directory)
            if len(_REALPATHS) >= ENTRIES:
                _REALPATHS.clear()
            _REALPATHS[path] = real
    got = _REPRS.get(id(options))
    if got is None or got[0] is not options:
        if len(_REPRS) >= ENTRIES:
            _REPRS.clear()
        got = _REPRS[id(options)] = (options, repr(options))
    return (real, sql, got[1], backend, registered, views)


def lookup(key: tuple, db: Any, readers: list | None = None) -> SharedPlan | None:
    """The shared plan of ``key`` while every table it reads is still at the version it was planned
    against; a stale entry is dropped. ``readers``: a list that gets the (table name, TableReader)
    pairs of a current entry, where the database hands them out with the identity
    (``Database.table_and_identity``: one freshness check per table, not two)."""
    with _lock:
        entry = _plans.get(key)
        if entry is None:
            return None
        _plans.move_to_end(key)
    both = getattr(db, "table_and_identity", None) if readers is not None else None
    try:
        if both is not None:
            got = [(name, both(name)) for name, _ in entry.tables]
            current = all(g[1] == identity for (_, g), (_, identity) in zip(got, entry.tables))
            if current:
                readers.extend((name, g[0]) for name, g in got)
        else:
            current = all(db.table_identity(name) == identity for name, identity in entry.tables)
    except Exception:  # a table was dropped or cannot be read: plan again, which reports it
        current = False
    if current:
        return entry
    with _lock:
        if _plans.get(key) is entry:
            del _plans[key]
    return None


def store(key: tuple, plan: Any, physical: Any, tables: tuple[tuple[str, Any], ...]) -> None:
    if any(identity is None for _, identity in tables):
        return
    with _lock:
        _plans[key] = SharedPlan(plan, physical, tables)
        while len(_plans) > ENTRIES:
            _plans.popitem(last=False)


def clear() -> None:
    with _lock:
        _plans.clear()
        _REALPATHS.clear()
        _REPRS.clear()
