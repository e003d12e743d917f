"""FROM items that are not stored tables: files (``read_parquet``/``read_csv``/``read_json``, quoted
paths, globs, lists), views stored in the database, objects registered on the connection and
replacement scans of pandas/Polars/Arrow objects found by their Python variable name.

Table functions are taken out of the tree before the whitelist check (their arguments are options,
not expressions): each becomes a quoted identifier naming a source in ``storage.external``.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Field
from hetdb.plan.logical import Scan
from hetdb.sql.scope import Rel
from hetdb.sql.series import FUNCTIONS as SERIES
from hetdb.sql.series import series_args, series_table
from hetdb.storage import external as X

_FUNCTIONS = {"read_parquet": "parquet", "parquet_scan": "parquet", "read_csv": "csv", "read_csv_auto": "csv",
              "read_json": "json", "read_json_auto": "json", "read_ndjson": "json"}
_FILE_OPTIONS = {"hive_partitioning", "union_by_name", "filename", "binary_as_string", "auto_detect"}
_TOKEN_PREFIX = "\x00hetdb-source:"


@dataclass
class Session:
    """What a connection adds to name resolution for the statement being bound."""

    registered: dict[str, Any] = field(default_factory=dict)   # lower name -> storage.external key
    frames: list[dict] = field(default_factory=list)           # caller's locals, globals
    replaced: list[str] = field(default_factory=list)          # keys made for replacement scans


SESSION: contextvars.ContextVar[Session | None] = contextvars.ContextVar("hetdb_session", default=None)


def _literal(node: exp.Expression, what: str) -> Any:
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        return int(node.this) if node.this.lstrip("-").isdigit() else float(node.this)
    if isinstance(node, exp.Array):
        return [_literal(e, what) for e in node.expressions]
    if isinstance(node, exp.Neg):
        return -_literal(node.this, what)
    if isinstance(node, (exp.Column, exp.Var)) and what != "path":
        return node.name
    raise SqlError(f"{what}: expected a constant, got {node.sql(dialect='duckdb')!r}")


def _function_name(fn: exp.Expression) -> str | None:
    if isinstance(fn, exp.Anonymous):
        return str(fn.this).lower()
    if isinstance(fn, exp.Func):
        return fn.sql_name().lower()
    return None


def _file_source(fname: str, args: list[exp.Expression]) -> X.FileSource:
    if not args:
        raise SqlError(f"{fname}() needs a file path, a glob or a list of paths")
    paths = _literal(args[0], "path")
    paths = paths if isinstance(paths, list) else [paths]
    if not paths or not all(isinstance(p, str) for p in paths):
        raise SqlError(f"{fname}(): the first argument is a path string or a list of them")
    options: dict[str, Any] = {}
    for a in args[1:]:
        if not isinstance(a, exp.EQ) or not isinstance(a.this, exp.Column):
            raise SqlError(f"{fname}(): options are written name=value, got {a.sql(dialect='duckdb')!r}")
        options[a.this.name.lower()] = _literal(a.expression, a.this.name)
    fmt = _FUNCTIONS[fname]
    hive = options.pop("hive_partitioning", None)
    union = bool(options.pop("union_by_name", False))
    options.pop("auto_detect", None)
    for k in ("filename", "binary_as_string"):
        if options.pop(k, False):
            raise UnsupportedError(f"{fname}() option {k}")
    if fmt != "csv" and options:
        raise UnsupportedError(f"{fname}() options {sorted(options)} (supported: "
                               f"{', '.join(sorted(_FILE_OPTIONS - {'filename', 'binary_as_string'}))})")
    return X.FileSource(paths, fmt, None if hive is None else bool(hive), union, options if fmt == "csv" else None)


def _token(key: str) -> str:
    return _TOKEN_PREFIX + key


def rewrite_table_functions(tree: exp.Expression) -> exp.Expression:
    """Replace every table function in FROM by a quoted identifier naming its registered source
    (DuckDB's default alias kept: the function name)."""
    for table in list(tree.find_all(exp.Table)):
        fn = table.this
        name = _function_name(fn) if fn is not None and not isinstance(fn, exp.Identifier) else None
        if name is None:
            continue
        first = fn.args.get("this")
        args = ([first] if isinstance(first, exp.Expression) else []) + list(fn.expressions)
        if name in SERIES:
            from hetdb.storage.registered import ArrowSource

            name, args = series_args(fn)
            key = X.register_source(ArrowSource(name, series_table(name, args)))
            table.set("this", exp.Identifier(this=_token(key), quoted=True))
            if not table.alias:
                table.set("alias", exp.TableAlias(this=exp.Identifier(this=name, quoted=False)))
            continue
        if name not in _FUNCTIONS:
            raise UnsupportedError(f"table function {name}() (supported: "
                                   f"{', '.join(sorted(set(_FUNCTIONS) | set(SERIES)))})")
        key = X.register_source(_file_source(name, args))
        table.set("this", exp.Identifier(this=_token(key), quoted=True))
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.Identifier(this=name, quoted=False)))
    return tree


def _looks_like_file(name: str) -> bool:
    low = name.lower()
    return "/" in name or os.sep in name or any(low.endswith(e) for e in X._FORMAT_OF_EXT) \
        or bool(X._GLOB_CHARS.search(name))


def external_scan(source: X.ExternalSource, key: str, alias: str, new_cid) -> tuple[Scan, Rel]:
    fields, cols = [], []
    for c in source.columns:
        fields.append(Field(new_cid(c.name.lower()), c.name.lower(), c.dtype, True))
        cols.append(c.name)
    scan = Scan(source.describe(), tuple(fields), tuple(cols), source="external", path=key)
    return scan, Rel(alias, [(f.name, f) for f in fields])


def _python_object(name: str, session: Session) -> Any:
    for scope in session.frames:
        if name in scope:
            return scope[name]
        for k, v in scope.items():
            if k.lower() == name.lower():
                return v
    return None


def _scannable(obj: Any) -> bool:
    import pyarrow as pa

    mod = type(obj).__module__.split(".")[0]
    if isinstance(obj, (pa.Table, pa.RecordBatch, pa.RecordBatchReader)):
        return True
    if mod == "pyarrow" and type(obj).__name__.endswith("Dataset"):
        return True
    return type(obj).__name__ in ("DataFrame",) and mod in ("pandas", "polars")


def resolve_from(binder, node: exp.Table, name: str, alias: str):
    """(plan, Rel) for a FROM name that is not a stored table — a file, a registered object, a view
    or a replacement scan — or None when it is (or should be reported as) a stored table."""
    quoted = node.this is not None and getattr(node.this, "quoted", False)
    if name.startswith(_TOKEN_PREFIX):
        key = name[len(_TOKEN_PREFIX):]
        return external_scan(X.lookup_source(key), key, alias, binder.new_cid)
    session = SESSION.get()
    low = name.lower()
    if session is not None and low in session.registered:
        key = session.registered[low]
        return external_scan(X.lookup_source(key), key, alias, binder.new_cid)
    db = binder.db
    if db.has_table(low) or any(t.lower() == low for t in db.tables()):
        return None
    if quoted and _looks_like_file(name):
        src = X.FileSource([name])
        key = X.register_source(src)
        stem = os.path.basename(name).split(".")[0] if not node.alias else alias
        return external_scan(src, key, (node.alias or stem).lower(), binder.new_cid)
    from hetdb.sql import views

    view = views.get_view(db, name)
    if view is not None:
        return views.bind_view(binder, view, alias)
    if session is not None:
        obj = _python_object(name, session)
        if obj is not None and _scannable(obj):
            from hetdb.storage.registered import ArrowSource

            key = X.register_source(ArrowSource(name, obj))
            session.replaced.append(key)
            return external_scan(X.lookup_source(key), key, alias, binder.new_cid)
    return None
