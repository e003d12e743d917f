"""Import Parquet, CSV and Arrow IPC files into a table, streaming in bounded memory.

Several files make one table; their schemas must agree. The import is one commit: if any file fails to
read or convert, nothing is published and no files are left behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from hetdb import types as T
from hetdb.errors import CatalogError, HetdbError, InputError, UnsupportedError
from hetdb.storage.database import Database
from hetdb.storage.format import DEFAULT_ROWS_PER_PAGE, ColumnSpec
from hetdb.storage.reader import TableReader
from hetdb.storage.sources import Source, detect_format
from hetdb.storage.writer import DEFAULT_COMPRESSION, check_compression


def import_files(db: Database, table: str, files: list[str], format: str | None = None,
                 replace: bool = False, progress: bool = False, rows_per_page: int = DEFAULT_ROWS_PER_PAGE,
                 csv_options: dict | None = None, compression: str = DEFAULT_COMPRESSION) -> TableReader:
    """Load ``files`` into table ``table`` as one new version and return a reader of it.
    ``compression``: "auto" (compressed pages, the default) or "none" (plain pages).

    InputError (naming the file, and the line for CSV) if a file cannot be read, converted, or its
    schema differs from the first file's; CatalogError if the table exists and not ``replace``."""
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    files = [os.fspath(f) for f in files]
    if not files:
        raise InputError(f"import into '{table}': no input files given")
    check_compression(compression)
    if db.has_table(table) and not replace:
        raise CatalogError(f"table '{table}' already exists (use replace=True to overwrite it)")
    with _quiet_csv_row_handler():
        return _import(db, table, files, format, replace, progress, rows_per_page, csv_options, compression)


def _import(db: Database, table: str, files: list[str], format: str | None, replace: bool, progress: bool,
            rows_per_page: int, csv_options: dict | None, compression: str) -> TableReader:
    sources = [_open(path, format, csv_options) for path in files]
    schema = _resolve_schema(sources)
    arrow_types = {f.name: f.type for f in sources[0].schema}
    for src in sources:
        if src.format == "csv":
            # Later CSV files are parsed with the first file's types, so they cannot infer differently.
            src.column_types = {name: (t if not pa.types.is_null(t) else pa.string())
                                for name, t in arrow_types.items()}
    targets = {c.name: c.dtype for c in schema}
    with _progress_bar(progress, sum(s.size for s in sources), table) as advance:
        with db.create_table(table, schema, rows_per_page=rows_per_page, replace=replace,
                             compression=compression) as writer:
            done = 0
            for src in sources:
                row = 0
                for batch in _batches(src):
                    try:
                        writer.append_arrow(_conform(batch, targets))
                    except HetdbError as e:
                        bad = getattr(e, "row", None)
                        where = "" if bad is None else f" (row {row + bad:,} of the file)"
                        raise type(e)(f"{src.path}: {e}{where}") from None
                    row += batch.num_rows
                    advance(done + src.position())
                done += src.size
                advance(done)
    # this writer's own version (another writer may have committed a newer one since)
    return writer.reader


def _open(path: str, format: str | None, csv_options: dict | None) -> Source:
    fmt = detect_format(path, format)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None  # Source reports the missing file
    if mode is not None and not stat.S_ISREG(mode):
        # a FIFO or device would block or never end: import reads regular files only
        what = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) \
            else "not a regular file"
        raise InputError(f"{path}: is {what}; import reads regular files only (copy the data to a file)")
    try:
        return Source(path, fmt, csv_options)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
        # raised while locating a bad CSV row for the message (e.g. a truncated .csv.gz)
        raise InputError(f"{path}: cannot read as {fmt}: {e}") from None


@contextlib.contextmanager
def _quiet_csv_row_handler() -> Iterator[None]:
    """Silence the "Exception ignored in handler" report pyarrow prints when a binary file's bad row
    is not UTF-8 (the row is reported as the InputError anyway)."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, UnicodeDecodeError) \
                and "locate_csv_error" in getattr(unraisable.object, "__qualname__", ""):
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def _batches(src: Source) -> Iterator[pa.RecordBatch]:
    it = src.batches()
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            raise InputError(_describe(src, e)) from None
        yield batch


def _describe(src: Source, error: Exception) -> str:
    try:
        return src.describe_error(error)
    except (pa.ArrowException, OSError, UnicodeDecodeError):  # the file fails again while re-read
        return f"{src.path}: cannot read as {src.format}: {error}"


def _field_type(src: Source, field: pa.Field) -> T.DataType | None:
    if pa.types.is_null(field.type):
        return None  # an all-NULL column says nothing about its type
    try:
        return T.from_arrow(field.type, f"'{field.name}'")
    except UnsupportedError as e:
        raise UnsupportedError(f"{src.path}: {e}") from None


def _resolve_schema(sources: list[Source]) -> list[ColumnSpec]:
    first = sources[0]
    names = first.schema.names
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"{first.path}: duplicate column names {dup}")
    types: dict[str, T.DataType | None] = {}
    nullable: dict[str, bool] = {}
    for f in first.schema:
        types[f.name] = _field_type(first, f)
        nullable[f.name] = f.nullable
    for src in sources[1:]:
        if src.schema.names != names:
            raise InputError(f"{src.path}: columns {src.schema.names} differ from {first.path}'s {names}")
        for f in src.schema:
            t = _field_type(src, f)
            if src.format == "csv" and first.format == "csv":
                continue  # parsed with the first file's types (checked per value while reading)
            if t is not None and types[f.name] is not None and t != types[f.name]:
                raise InputError(f"{src.path}: column '{f.name}' has type {t}, but {first.path} has "
                                 f"{types[f.name]}; all files of one table must agree")
            types[f.name] = types[f.name] or t
            nullable[f.name] = nullable[f.name] or f.nullable
    # A column NULL everywhere is stored as VARCHAR.
    return [ColumnSpec(n, types[n] or T.STRING, nullable[n]) for n in names]


def _conform(batch: pa.RecordBatch, targets: dict[str, T.DataType]) -> pa.RecordBatch:
    """Replace all-NULL (null-typed) columns by NULL columns of the table's type."""
    if not any(pa.types.is_null(f.type) for f in batch.schema):
        return batch
    arrays = [pa.nulls(batch.num_rows, targets[f.name].to_arrow()) if pa.types.is_null(f.type)
              else batch.column(i) for i, f in enumerate(batch.schema)]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


@contextlib.contextmanager
def _progress_bar(enabled: bool, total: int, table: str) -> Iterator[Any]:
    if not enabled:
        yield lambda done: None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), TimeRemainingColumn(), transient=False) as bar:
        task = bar.add_task(f"import {table}", total=total)
        yield lambda done: bar.update(task, completed=min(done, total))
