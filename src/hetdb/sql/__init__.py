"""SQL front end: text -> bound logical plan (hetdb.plan.logical)."""

from __future__ import annotations

from hetdb.errors import HetdbError, UnsupportedError
from hetdb.plan.logical import Output


def bind(sql: str, db) -> Output:
    """Parse ``sql`` (DuckDB dialect), refuse unsupported constructs (all named at once) and bind it
    against ``db``'s tables into a logical plan rooted at an Output node. Raises SqlError (with line
    and column for syntax errors), CatalogError (with a suggestion) or UnsupportedError."""
    from hetdb.sql.binder import Binder
    from hetdb.sql.check import check_supported
    from hetdb.sql.external import rewrite_table_functions
    from hetdb.sql.parse import parse

    tree = rewrite_table_functions(parse(sql))
    check_supported(tree)
    try:
        return Binder(db).bind_statement(tree)
    except HetdbError:
        raise
    except RecursionError:
        raise UnsupportedError("the query is nested too deeply for hetdb to bind") from None
    except Exception as e:  # noqa: BLE001 - a binder bug must reach the user as a typed error
        raise UnsupportedError(f"hetdb could not bind this query ({type(e).__name__}: {e}); "
                               "please report it with the query text") from e


__all__ = ["bind"]
