"""Names that differ only in case. SQL resolves table and column names case-insensitively (as DuckDB
does), so hetdb refuses a second table or column whose name equals an existing one but for case —
on import and in every create path (Database.create_table) — instead of keeping two names of which
SQL reaches only one."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb import types as T
from hetdb.connection import Connection
from hetdb.errors import CatalogError
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec
from hetdb.storage.ingest import import_files


def test_columns_differing_in_case_are_refused(db: Database, tmp_path):
    path = str(tmp_path / "case.parquet")
    pq.write_table(pa.table({"a": [1], "A": [2]}), path)
    with pytest.raises(CatalogError, match="'a' and 'A' differ only in case"):
        import_files(db, "t", [path])
    with pytest.raises(CatalogError, match="differ only in case"):
        db.create_table("t", [ColumnSpec("Price", T.INT64, True), ColumnSpec("PRICE", T.INT64, True)])
    assert db.tables() == []
    # DuckDB refuses the same table
    with pytest.raises(duckdb.Error, match="already exists"):
        duckdb.connect().execute('CREATE TABLE t ("a" INTEGER, "A" INTEGER)')


def test_tables_differing_in_case_are_refused(db: Database, tmp_path):
    path = str(tmp_path / "one.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), path)
    import_files(db, "Sales", [path])
    for name in ("sales", "SALES", "sAlEs"):
        with pytest.raises(CatalogError, match="table 'Sales' already exists and table names are case-insensitive"):
            import_files(db, name, [path])
        with pytest.raises(CatalogError, match="case-insensitive"):
            db.create_table(name, [ColumnSpec("a", T.INT64, True)], replace=True)
    assert db.tables() == ["Sales"]
    # the table itself may be replaced under its own name, and SQL reaches it in any case
    pq.write_table(pa.table({"a": [5, 6, 7]}), path)
    assert import_files(db, "Sales", [path], replace=True).num_rows == 3
    with Connection(db.path, device="cpu") as con:
        assert con.sql("SELECT sum(a) FROM sales").fetchall() == [(18,)]
        assert con.sql('SELECT sum(A) FROM "SALES"').fetchall() == [(18,)]
    duck = duckdb.connect()
    duck.execute("CREATE TABLE Sales (a INTEGER)")
    with pytest.raises(duckdb.Error, match="already exists"):
        duck.execute("CREATE TABLE sales (a INTEGER)")
