"""The database as one query run sees it: each table's committed version is looked up once.

``Database.table`` reads the table's CURRENT file and stats its version directory and manifest on
every call (so a connection sees other writers' commits); a query calls it for every scan, fused
pipeline and device-cache decision, ~20 times per TPC-H query (about 20 us each: a sizeable share of
a hot GPU query's few milliseconds). A run of one query needs one version per table anyway: the
snapshot asks the database once per table and answers the same reader from then on. Plans from the
plan cache hand in the readers their validity check just read, so a hot query stats nothing more.
"""

from __future__ import annotations

from typing import Any


class QuerySnapshot:
    """A read-only view of ``db`` for one query run (``readers``: (table name, TableReader) pairs
    known to be current). Anything but ``table``/``tables`` goes to the database itself."""

    def __init__(self, db: Any, readers: tuple[tuple[str, Any], ...] = ()) -> None:
        self._db = db
        self._readers: dict[str, Any] = dict(readers)
        self._names: list[str] | None = None

    @property
    def database(self) -> Any:
        """The Database this snapshot reads."""
        return self._db

    def table(self, name: str) -> Any:
        reader = self._readers.get(name)
        if reader is None:
            reader = self._readers[name] = self._db.table(name)
        return reader

    def tables(self) -> list[str]:
        if self._names is None:
            self._names = self._db.tables()
        return list(self._names)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)
