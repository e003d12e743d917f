"""Binding a stored view: its SELECT is parsed, checked and bound like a derived table."""

from __future__ import annotations

from hetdb.errors import HetdbError, SqlError
from hetdb.storage.views import find_view


def get_view(db, name: str) -> tuple[str, str] | None:
    if not hasattr(db, "path"):
        return None
    return find_view(db, name)


def bind_view(binder, view: tuple[str, str], alias: str):
    from hetdb.sql.check import check_supported
    from hetdb.sql.external import rewrite_table_functions
    from hetdb.sql.parse import parse

    name, sql = view
    depth = getattr(binder, "_view_depth", 0)
    if depth > 32:
        raise SqlError(f"view '{name}' refers to itself (through other views)")
    try:
        from hetdb.sql.window import resolve_named_windows

        tree = resolve_named_windows(rewrite_table_functions(parse(sql)))
        check_supported(tree, sql)
    except HetdbError as e:
        raise type(e)(f"view '{name}': {e}") from None
    binder._view_depth = depth + 1
    saved = binder.ctes
    binder.ctes = {}
    try:
        bq = binder.bind_query(tree, None)
    finally:
        binder.ctes = saved
        binder._view_depth = depth
    return binder._derived(bq, alias, [])
