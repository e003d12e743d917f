"""Strict differential checks for SQL semantics cases: small hand-made tables written to hetdb and
DuckDB, each query compared on exact values *and* result types, or on both engines raising.

Unlike the suites' multiset comparison (``diff_check``), values compare exactly (NaN equals NaN,
-0.0 differs from 0.0 only where asked) and each column's Arrow type must be the one DuckDB returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import pyarrow as pa

import hetdb
from hetdb import types as T
from hetdb.errors import HetdbError
from hetdb.storage import ColumnSpec, Database


def build(path: str, tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """Write ``tables`` into a hetdb database at ``path`` and return a DuckDB holding the same rows."""
    db = Database.open(path, create=True)
    duck = duckdb.connect()
    for name, table in tables.items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=True) for f in table.schema]
        with db.create_table(name, schema, replace=True) as writer:
            writer.append_arrow(table)
        duck.register("sem_src", db.table(name).arrow())
        duck.execute(f'CREATE TABLE "{name}" AS SELECT * FROM sem_src')
        duck.unregister("sem_src")
    return duck


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    return str(t)


def _key(v):
    """A value as a sortable, exactly comparable key (NaN and -0.0 distinguished, NULL last)."""
    if v is None:
        return (2, "")
    if isinstance(v, float):
        if math.isnan(v):
            return (1, "nan")
        return (0, repr(v))
    return (0, repr(v))


@dataclass(frozen=True)
class Answer:
    types: tuple[str, ...] | None
    rows: tuple | None
    error: str | None


def answer_of(run) -> Answer:
    try:
        table = run()
    except (HetdbError, duckdb.Error) as e:
        return Answer(None, None, f"{type(e).__name__}: {e}")
    rows = [tuple(_key(v) for v in r.values()) for r in table.to_pylist()]
    return Answer(tuple(_type_name(t) for t in table.schema.types), tuple(sorted(rows)), None)


def check(con: hetdb.Connection, duck: duckdb.DuckDBPyConnection, sql: str,
          error_contains: str | None = None) -> Answer:
    """Assert hetdb answers ``sql`` like DuckDB: same types and rows (as a multiset), or both raise.

    ``error_contains``: DuckDB must raise an error whose text contains it, and hetdb must raise a
    HetdbError containing it too. Returns DuckDB's answer (so a test can assert it compared rows)."""
    expected = answer_of(lambda: duck.sql(sql).to_arrow_table())
    actual = answer_of(lambda: con.sql(sql).arrow())
    if error_contains is not None:
        assert expected.error is not None and error_contains in expected.error, (sql, expected)
        assert actual.error is not None and error_contains in actual.error, (sql, actual)
        return expected
    assert expected.error is None, (sql, expected.error)
    assert actual == expected, f"{sql}\n  hetdb:  {actual}\n  DuckDB: {expected}"
    return expected
