"""SQL front end: text -> bound logical plan (hetdb.plan.logical)."""

from __future__ import annotations

from hetdb.plan.logical import Output


def bind(sql: str, db) -> Output:
    """Parse ``sql`` (DuckDB dialect), refuse unsupported constructs (all named at once) and bind it
    against ``db``'s tables into a logical plan rooted at an Output node. Raises SqlError (with line
    and column for syntax errors), CatalogError (with a suggestion) or UnsupportedError."""
    from hetdb.sql.binder import Binder
    from hetdb.sql.check import check_supported
    from hetdb.sql.parse import parse

    tree = parse(sql)
    check_supported(tree)
    return Binder(db).bind_statement(tree)


__all__ = ["bind"]
