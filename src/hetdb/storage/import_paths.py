"""Import named by paths as a user writes them: globs (``data/**/*.parquet``) and hive-partitioned
directories, whose partition keys become columns (never dropped). Plain files go through the
streaming ingest; hive-partitioned data is read through storage.external, row group by row group."""

from __future__ import annotations

import os

from hetdb.errors import CatalogError, HetdbError
from hetdb.storage.external import FileSource, expand_paths, hive_values
from hetdb.storage.format import DEFAULT_ROWS_PER_PAGE, ColumnSpec
from hetdb.storage.ingest import import_files
from hetdb.storage.writer import DEFAULT_COMPRESSION


def import_paths(db, table: str, patterns: list[str], format: str | None = None, replace: bool = False,
                 progress: bool = False, rows_per_page: int = DEFAULT_ROWS_PER_PAGE,
                 csv_options: dict | None = None, hive_partitioning: bool | None = None,
                 compression: str = DEFAULT_COMPRESSION):
    """Import the files ``patterns`` name into ``table`` (one commit) and return its reader.
    Hive partition keys (``key=value`` directories) become columns unless ``hive_partitioning`` is
    False; a column a file has is never dropped."""
    patterns = [os.fspath(p) for p in ([patterns] if isinstance(patterns, (str, os.PathLike)) else patterns)]
    files = expand_paths(patterns)
    keys = [set(hive_values(f)) for f in files]
    hive = hive_partitioning if hive_partitioning is not None else bool(keys[0]) and all(k == keys[0] for k in keys)
    if not hive:
        return import_files(db, table, files, format=format, replace=replace, progress=progress,
                            rows_per_page=rows_per_page, csv_options=csv_options, compression=compression)
    if db.has_table(table) and not replace:
        raise CatalogError(f"table '{table}' already exists (use replace=True to overwrite it)")
    fmt = {"ipc": "ipc", "csv": "csv", "parquet": "parquet"}.get(format or "", None)
    src = FileSource(files, fmt, True, False, csv_options)
    schema = [ColumnSpec(c.name, c.dtype, True) for c in src.columns]
    names = [c.name for c in src.columns]
    plan = src.plan(names, (), {}, None)
    with db.create_table(table, schema, rows_per_page=rows_per_page, replace=replace,
                         compression=compression) as writer:
        import pyarrow as pa

        for morsel in plan.morsels:
            arrays = src.read(morsel, names)
            try:
                writer.append_arrow(pa.table({n: arrays[n] for n in names}))
            except HetdbError as e:
                raise type(e)(f"{src.files[morsel[0]]}: {e}") from None
    return db.table(table)


__all__ = ["import_paths"]
