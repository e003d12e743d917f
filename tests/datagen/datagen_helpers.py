"""Helpers shared by the datagen tests: generated SSB data as Arrow tables inside DuckDB."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from hetdb.datagen import ssb


def ssb_arrow(sf: float, workers: int = 1) -> dict[str, pa.Table]:
    """Every SSB table at ``sf`` as one Arrow table each, straight from the generator's batches."""
    return {name: pa.concat_tables([b.to_arrow() for b in ssb.batches(sf, name, workers=workers)])
            for name in ssb.TABLES}


def duck(tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with ``tables`` registered under their names."""
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return con
