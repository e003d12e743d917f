"""PRAGMA statements: hetdb's page-cache pins and what each cache tier holds.

    PRAGMA hetdb_pin('lineorder', columns='lo_revenue,lo_discount', tier='gpu')
    PRAGMA hetdb_unpin('lineorder'[, columns=...][, tier='host'])
    PRAGMA hetdb_cache            -- tier, table, column, pages, bytes, pinned_pages, pinned_bytes
    PRAGMA hetdb_pins             -- tier, table, column, pages, bytes of every pin
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError

_PRAGMAS = ("hetdb_pin", "hetdb_unpin", "hetdb_cache", "hetdb_pins")


def _arguments(call: exp.Expression, name: str, keywords: tuple[str, ...]) -> tuple[list, dict]:
    """Positional string literals and ``key='value'`` arguments of a pragma call."""
    args: list = []
    kwargs: dict = {}
    for e in call.expressions if isinstance(call, exp.Anonymous) else []:
        if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column) and isinstance(e.expression, exp.Literal):
            key = e.this.name.lower()
            if key not in keywords:
                raise SqlError(f"PRAGMA {name}: unknown argument {key!r} (accepted: {', '.join(keywords)})")
            kwargs[key] = e.expression.this
        elif isinstance(e, exp.Literal) and e.is_string and not kwargs:
            args.append(e.this)
        else:
            raise SqlError(f"PRAGMA {name}: arguments are a table name in quotes, then "
                           f"{', '.join(k + '=...' for k in keywords)} (got {e.sql(dialect='duckdb')})")
    return args, kwargs


def run_pragma(con: Any, tree: exp.Pragma) -> pa.Table:
    from hetdb.cache import pins

    call = tree.this
    name = (call.name if isinstance(call, (exp.Anonymous, exp.Column)) else str(call)).lower()
    if name not in _PRAGMAS:
        raise UnsupportedError(f"PRAGMA {name} (hetdb has {', '.join(_PRAGMAS)}; use SET for connection "
                               "options, SHOW TABLES, DESCRIBE)")
    if name == "hetdb_cache":
        return pins.cache_contents(con)
    if name == "hetdb_pins":
        rows = pins.pinned(con)
        return pa.table({"tier": [r[0] for r in rows], "table": [r[1] for r in rows],
                         "column": [r[2] for r in rows], "pages": pa.array([r[3] for r in rows], pa.int64()),
                         "bytes": pa.array([r[4] for r in rows], pa.int64())})
    args, kwargs = _arguments(call, name, ("table", "columns", "tier"))
    if len(args) > 1:
        raise SqlError(f"PRAGMA {name}: one table name, then columns=... and tier=...")
    table = args[0] if args else kwargs.pop("table", None)
    kwargs.pop("table", None)
    if not table:
        raise SqlError(f"PRAGMA {name}: name the table, e.g. PRAGMA {name}('lineorder')")
    if name == "hetdb_pin":
        got = con.pin(table, kwargs.get("columns"), kwargs.get("tier", "gpu"))
        return pa.table({"table": [got["table"]], "tier": [got["tier"]], "columns": [",".join(got["columns"])],
                         "pages": pa.array([got["pages"]], pa.int64()), "bytes": pa.array([got["bytes"]], pa.int64())})
    n = con.unpin(table, kwargs.get("columns"), kwargs.get("tier"))
    return pa.table({"pages_released": pa.array([n], pa.int64())})
