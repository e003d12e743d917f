"""Shared fixtures for executor tests: a small database with NULL-rich tables, hand-built logical
plans, both backends (hetdb's CpuBackend and a pure NumPy reference), and DuckDB as the truth."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.bench.compare import compare_tables
from hetdb.config import Options
from hetdb.exec.engine import QueryEngine
from hetdb.plan import logical as L
from hetdb.plan.expr import ColumnRef, Field
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

sys.path.insert(0, str(Path(__file__).parent))
from reference_backend import ReferenceBackend  # noqa: E402

N_FACT = 3000


def _fact_table() -> pa.Table:
    rng = random.Random(7)
    n = N_FACT
    names = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "é-acute"]
    a = [None if rng.random() < 0.1 else rng.randint(0, 40) for _ in range(n)]
    b = [None if rng.random() < 0.1 else rng.choice(names) for _ in range(n)]
    c = [None if rng.random() < 0.05 else decimal.Decimal(rng.randint(-100000, 100000)) / 100 for _ in range(n)]
    d = [None if rng.random() < 0.05 else rng.uniform(-50, 50) for _ in range(n)]
    e = [dt.date(1992, 1, 1) + dt.timedelta(days=rng.randint(0, 2500)) for _ in range(n)]
    k = list(range(n))
    return pa.table({"k": pa.array(k, pa.int64()), "a": pa.array(a, pa.int32()),
                     "b": pa.array(b, pa.string()), "c": pa.array(c, pa.decimal128(12, 2)),
                     "d": pa.array(d, pa.float64()), "e": pa.array(e, pa.date32())})


def _dim_table() -> pa.Table:
    rng = random.Random(11)
    rows = 60
    a = [None if i % 13 == 0 else rng.randint(0, 45) for i in range(rows)]  # duplicates and NULLs
    s = [None if i % 17 == 0 else f"s{rng.randint(0, 9)}" for i in range(rows)]
    b = [rng.choice(["apple", "fig", "kiwi", None]) for _ in range(rows)]
    return pa.table({"a": pa.array(a, pa.int32()), "s": pa.array(s, pa.string()),
                     "b": pa.array(b, pa.string())})


TABLES = {"fact": _fact_table(), "dim": _dim_table()}


@pytest.fixture(scope="session")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("execdb")
    database = Database.open(str(path), create=True)
    for name, table in TABLES.items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema]
        with database.create_table(name, schema, rows_per_page=256) as w:
            w.append_arrow(table)
    return database


@pytest.fixture(scope="session")
def duck():
    con = duckdb.connect()
    for name, table in TABLES.items():
        con.register(name, table)
    return con


@pytest.fixture(params=["cpu", "reference"])
def backend(request):
    if request.param == "cpu":
        from hetdb.backend.cpu import CpuBackend

        return CpuBackend()
    return ReferenceBackend()


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
