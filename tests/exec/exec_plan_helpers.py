"""Helpers for executor tests: hand-built logical plans, running them, checking against DuckDB."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from hetdb import types as T
from hetdb.bench.compare import compare_tables
from hetdb.config import Options
from hetdb.exec.engine import QueryEngine
from hetdb.plan import logical as L
from hetdb.plan.expr import ColumnRef, Field
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec


def scan(db, table: str, columns: list[str], filters=(), alias: str | None = None) -> L.Scan:
    reader = db.table(table)
    types = {c.name: c.dtype for c in reader.schema}
    tag = alias or table
    fields = tuple(Field(f"{c}#{tag}", c, types[c]) for c in columns)
    return L.Scan(table, fields, tuple(columns), tuple(filters))


def col(node: L.Node, name: str) -> ColumnRef:
    for f in node.schema:
        if f.name == name or f.cid == name:
            return ColumnRef(f.dtype, f.cid)
    raise KeyError(name)


def output(node: L.Node, names: list[str] | None = None) -> L.Output:
    fields = node.schema
    if names is not None:
        fields = tuple(f for n in names for f in node.schema if f.cid == n or f.name == n)
    return L.Output(node, tuple(fields))


def run(plan: L.Output, db, backend, **opts) -> pa.Table:
    engine = QueryEngine(db, backend, Options(**opts))
    try:
        table, stats, _ = engine.run_plan(plan)
    finally:
        engine.close()
    assert engine.memory.used == 0, f"reservations left after the query: {engine.memory.used}"
    return table


def check(actual: pa.Table, duck, sql: str, ordered: bool = False, min_rows: int = 1) -> None:
    expected = duck.sql(sql).arrow()
    if hasattr(expected, "read_all"):
        expected = expected.read_all()
    diff = compare_tables(actual, expected, ordered=ordered, float_rel_tol=1e-9)
    assert diff is None, f"{diff}\nSQL: {sql}"
    assert expected.num_rows >= min_rows, "the comparison compared too few rows"


def stored_tables(path: str, tables: dict[str, pa.Table], rows_per_page: int = 256) -> Database:
    """A new database at ``path`` holding ``tables`` (every column nullable)."""
    database = Database.open(str(path), create=True)
    for name, table in tables.items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with database.create_table(name, schema, rows_per_page=rows_per_page) as w:
            w.append_arrow(table)
    return database


def duck_tables(tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with ``tables`` registered under their names (the reference)."""
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return con


def compiled_answers(db_path: str, duck, queries: list[str], threads=(1, 3)):
    """Each query on CPU connections with ``threads`` workers: its answer (nonempty) equal to DuckDB's
    and to the operators' (``cpu_compile=False``); yields (threads, sql, EXPLAIN ANALYZE text) for the
    caller's checks of how it ran."""
    import sys
    from pathlib import Path

    import hetdb

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "differential"))
    from diff_check import mismatch

    for n in threads:
        with hetdb.connect(db_path, device="cpu", threads=n) as con, \
                hetdb.connect(db_path, device="cpu", threads=n, cpu_compile=False) as ops:
            for sql in queries:
                got = con.sql(sql).arrow()
                assert got.num_rows > 0, sql
                assert mismatch(got, duck.sql(sql).to_arrow_table(), ()) is None, \
                    f"{sql}\n{con.explain(sql, analyze=True)}"
                assert mismatch(got, ops.sql(sql).arrow(), ()) is None, sql
                yield n, sql, con.explain(sql, analyze=True)
