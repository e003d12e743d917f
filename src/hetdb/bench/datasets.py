"""Benchmark data sets: generated once into a hetdb database (reused when present and complete) and
loaded into DuckDB in-memory tables from the same stored data, so both engines answer over the same
rows."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import time
from typing import Any

import pyarrow as pa

from hetdb.bench.suites import Suite
from hetdb.errors import CatalogError, HetdbError, InputError, UnsupportedError

COMPLETE_MARKER = ".hetdb-bench.json"


def default_db_path(suite: str, sf: float) -> str:
    """~/.cache/hetdb/bench/<suite>-sf<N> (N without a trailing .0)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "hetdb", "bench", f"{suite}-sf{format_sf(sf)}")


def format_sf(sf: float) -> str:
    return f"{sf:g}"


def ensure_dataset(suite: Suite, sf: float, path: str, *, owned: bool, progress: bool = False,
                   workers: int | None = None) -> dict[str, Any]:
    """Make sure ``path`` holds the suite's tables at ``sf``; generate them when missing.

    A complete data set carries a marker (written after the generator returns) naming suite and scale
    factor. ``owned`` (the default cache location) lets an incomplete or mismatched directory be
    regenerated from scratch; a user-given path is never deleted: it is used when it already holds every
    table of the suite, else it is generated into only when empty. Returns facts about the data set.
    """
    from hetdb.storage import Database

    marker = _read_marker(path)
    if marker is not None:
        if marker.get("suite") != suite.data_name or float(marker.get("sf", -1)) != float(sf):
            if not owned:
                raise InputError(f"{path} holds {marker.get('suite')} at sf {marker.get('sf')}, not "
                                 f"{suite.data_name} at sf {format_sf(sf)}: pass another --db")
            shutil.rmtree(path)
        else:
            db = Database.open(path, create=False)
            if set(suite.tables) <= set(db.tables()):
                return {**_describe(db, suite), "path": path, "generated": False,
                        "generate_seconds": marker.get("generate_seconds")}
            if not owned:
                raise InputError(f"{path} is marked complete but lacks tables "
                                 f"{sorted(set(suite.tables) - set(db.tables()))}: pass another --db")
            shutil.rmtree(path)
    elif os.path.isdir(path) and os.listdir(path):
        if not owned:
            try:
                db = Database.open(path, create=False)
            except CatalogError:
                raise InputError(f"{path} is not empty and is not a hetdb database: pass an empty or new "
                                 "directory as --db") from None
            missing = set(suite.tables) - set(db.tables())
            if missing:
                raise InputError(f"{path} is not empty and lacks the {suite.name} tables "
                                 f"{sorted(missing)}: pass an empty or new directory as --db")
            # A database the user made (e.g. `hetdb generate`): its scale factor is theirs to know.
            return {**_describe(db, suite), "path": path, "generated": False, "generate_seconds": None}
        shutil.rmtree(path)  # an interrupted generation in our own cache

    os.makedirs(path, exist_ok=True)
    try:
        generator = importlib.import_module(suite.generator)
    except ImportError as e:
        raise HetdbError(f"the {suite.name} generator ({suite.generator}) is not available: {e}") from None
    db = Database.open(path, create=True)
    start = time.perf_counter()
    generator.generate(db, sf, workers=workers, progress=progress)
    seconds = time.perf_counter() - start
    tmp = os.path.join(path, COMPLETE_MARKER + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"suite": suite.data_name, "sf": sf, "generate_seconds": seconds}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(path, COMPLETE_MARKER))
    return {**_describe(db, suite), "path": path, "generated": True, "generate_seconds": seconds}


def _read_marker(path: str) -> dict | None:
    try:
        with open(os.path.join(path, COMPLETE_MARKER)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _describe(db: Any, suite: Suite) -> dict[str, Any]:
    tables = {}
    for name in suite.tables:
        reader = db.table(name)
        tables[name] = {"rows": int(reader.num_rows), "bytes_on_disk": int(reader.bytes_on_disk())}
    return {"tables": tables}


def column_bytes(db: Any, referenced: dict[str, list[str]]) -> int:
    """Uncompressed bytes of the referenced columns ({table: [columns]}): pages as they decode, plus
    string dictionaries, so throughputs compare across compression settings (effective throughput)."""
    total = 0
    for table, columns in referenced.items():
        reader = db.table(table)
        for c in columns:
            pages = sum(reader.decoded_bytes(c, rg) for rg in range(reader.num_row_groups))
            stored = sum(reader.page_location(c, rg).padded_length for rg in range(reader.num_row_groups))
            total += pages + int(reader.bytes_on_disk(c)) - stored  # + the dictionary, if any
    return total


def table_columns(db: Any, tables: tuple[str, ...]) -> dict[str, list[str]]:
    """{table: [column names]} from the stored schemas."""
    try:
        return {t: [spec.name for spec in db.table(t).schema] for t in tables}
    except CatalogError as e:
        raise InputError(f"benchmark database is missing a table: {e}") from None


def arrow_schema(reader: Any) -> pa.Schema:
    return pa.schema([pa.field(s.name, s.dtype.to_arrow(), s.nullable) for s in reader.schema])


def require_duckdb() -> Any:
    """The duckdb module; UnsupportedError saying how to install it when it cannot be imported."""
    try:
        import duckdb
    except ImportError as e:
        raise UnsupportedError(f"hetdb bench checks every answer against DuckDB, which is not installed "
                               f"({e}): install it with `pip install 'duckdb>=1.1'` (or the dev extra: "
                               "`pip install 'hetdb[dev]'`)") from None
    return duckdb


def load_into_duckdb(db: Any, tables: tuple[str, ...], threads: int | None = None) -> tuple[Any, float]:
    """A DuckDB in-memory connection holding ``tables`` read from the hetdb database, streamed batch
    by batch, that runs queries on ``threads`` threads (default all cores). Returns (connection,
    seconds spent loading). The load itself runs on every core: at one thread SSB SF 20 took minutes
    of a GPU machine's time before the first query, and only the queries are compared."""
    duckdb = require_duckdb()

    con = duckdb.connect(config={"threads": os.cpu_count() or 1})
    start = time.perf_counter()
    for name in tables:
        reader = db.table(name)
        schema = arrow_schema(reader)
        batches = (rb for batch in reader.scan() for rb in batch.to_arrow().cast(schema).to_batches())
        source = pa.RecordBatchReader.from_batches(schema, batches)
        con.register("hetdb_bench_source", source)
        try:
            con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM hetdb_bench_source')
        finally:
            con.unregister("hetdb_bench_source")
    seconds = time.perf_counter() - start
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con, seconds
