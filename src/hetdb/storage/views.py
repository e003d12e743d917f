"""Views of a database: name -> SELECT text, kept in ``views.json`` in the database directory and
replaced atomically (written to a temporary file, fsynced, renamed)."""

from __future__ import annotations

import json
import os

from hetdb.errors import CatalogError, CorruptDataError
from hetdb.storage.format import fsync_dir, write_file_durably

VIEWS_FILE = "views.json"


def _path(db) -> str:
    return os.path.join(db.path, VIEWS_FILE)


def load_views(db) -> dict[str, str]:
    """name (as created) -> SQL text of every view."""
    try:
        with open(_path(db), "rb") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return {}
    except ValueError:
        raise CorruptDataError(f"database {db.path}: {VIEWS_FILE} is damaged") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise CorruptDataError(f"database {db.path}: {VIEWS_FILE} does not hold view definitions")
    return data


def find_view(db, name: str) -> tuple[str, str] | None:
    """(stored name, SQL) of the view called ``name`` (case-insensitive), or None."""
    for k, v in load_views(db).items():
        if k.lower() == name.lower():
            return k, v
    return None


def _save(db, views: dict[str, str]) -> None:
    tmp = _path(db) + f".tmp-{os.getpid()}"
    write_file_durably(tmp, json.dumps(views, sort_keys=True, indent=1).encode())
    os.replace(tmp, _path(db))
    fsync_dir(db.path)


def create_view(db, name: str, sql: str, replace: bool = False) -> None:
    views = load_views(db)
    old = find_view(db, name)
    if old is not None:
        if not replace:
            raise CatalogError(f"view '{name}' already exists (use CREATE OR REPLACE VIEW)")
        del views[old[0]]
    if db.has_table(name) or any(t.lower() == name.lower() for t in db.tables()):
        raise CatalogError(f"'{name}' is a table; a view needs another name (DROP TABLE {name} first)")
    views[name] = sql
    _save(db, views)


def drop_view(db, name: str) -> bool:
    """Remove a view; False when there is none."""
    views = load_views(db)
    old = find_view(db, name)
    if old is None:
        return False
    del views[old[0]]
    _save(db, views)
    return True
