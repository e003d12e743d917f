"""SQL front end: text -> bound logical plan (hetdb.plan.logical)."""

from __future__ import annotations

import sys
import types

from hetdb.errors import HetdbError, UnsupportedError
from hetdb.plan.logical import Output


def bind(sql: str, db, time_zone: str = "UTC", facts: dict | None = None) -> Output:
    """Parse ``sql`` (DuckDB dialect), refuse unsupported constructs (all named at once) and bind it
    against ``db``'s tables into a logical plan rooted at an Output node; TIMESTAMPTZ values show
    and cast in ``time_zone``; ``facts`` (a dict) gets "volatile" when the plan folded the current
    time and must not be reused. Raises SqlError (with line and column for syntax errors), CatalogError
    (with a suggestion) or UnsupportedError."""
    from hetdb.sql.binder import Binder
    from hetdb.sql.check import check_supported
    from hetdb.sql.external import rewrite_table_functions
    from hetdb.sql.list_keys import key_rewrite
    from hetdb.sql.lists import refuse_list_operands
    from hetdb.sql.parse import parse
    from hetdb.sql.session import session
    from hetdb.sql.window import resolve_named_windows

    tree = resolve_named_windows(rewrite_table_functions(parse(sql)))
    check_supported(tree, sql)
    try:
        with session(time_zone, facts):
            plan = Binder(db).bind_statement(tree)
        plan = key_rewrite(plan)
        refuse_list_operands(plan)
        return plan
    except HetdbError:
        raise
    except RecursionError:
        raise  # hetdb.deepstack retries on a deeper stack
    except Exception as e:  # noqa: BLE001 - a binder bug must reach the user as a typed error
        raise UnsupportedError(f"hetdb could not bind this query ({type(e).__name__}: {e}); "
                               "please report it with the query text") from e


class _CallableModule(types.ModuleType):
    """``hetdb.sql`` is both this package and DuckDB's module-level ``sql()``: importing the package
    replaces the function attribute of ``hetdb``, so the package itself is callable."""

    def __call__(self, query: str, params=None):
        """Run ``query`` on hetdb's default in-memory connection and return its Result."""
        from hetdb import default_connection
        from hetdb.connection import _caller_scopes

        return default_connection()._run(query, params, _caller_scopes())


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["bind"]
