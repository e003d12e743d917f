"""Query results: an Arrow table with DuckDB-style fetch methods and conversions."""

from __future__ import annotations

import datetime as dt
import html
from typing import Any

import numpy as np
import pyarrow as pa

from hetdb.errors import HetdbError, OutOfRangeError


class MissingExtraError(HetdbError, ImportError):
    """An optional dependency (pandas, Polars) is not installed."""


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"this needs {module}, which is not installed: "
                                f"pip install 'hetdb[{extra}]' (or pip install {module})") from None


_TYPE_CODES = {"int32": "INTEGER", "int64": "BIGINT", "double": "DOUBLE", "date32[day]": "DATE",
               "bool": "BOOLEAN", "string": "VARCHAR", "large_string": "VARCHAR", "timestamp[us]": "TIMESTAMP",
               "uint64": "UBIGINT", "month_day_nano_interval": "INTERVAL", "time64[us]": "TIME"}


_SQL_TYPE_KEY = b"hetdb.type"  # exec/hostutil.SQL_TYPE_KEY (kept apart: results import no engine)


def _is_hugeint(f: pa.Field) -> bool:
    return bool(f.metadata) and f.metadata.get(_SQL_TYPE_KEY) == b"HUGEINT"


_INTERVAL = pa.month_day_nano_interval()
_US_DAY = 86_400_000_000
_TIMEDELTA_MAX_DAYS = 999_999_999


def _interval_fields(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(days, microseconds, valid) of INTERVAL values as DuckDB hands them to Python: a month counts
    30 days (DuckDB's own conversion to timedelta)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], _INTERVAL)
    cells = np.frombuffer(arr.buffers()[1], dtype=[("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")],
                          count=len(arr), offset=arr.offset * 16)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    days = cells["months"].astype(np.int64) * 30 + cells["days"]
    return days, cells["nanos"] // 1000, valid


def _interval_timedeltas(arr: pa.ChunkedArray) -> list:
    days, micros, valid = _interval_fields(arr)
    if bool((np.abs(days[valid]) + np.abs(micros[valid]) // _US_DAY > _TIMEDELTA_MAX_DAYS - 1).any()):
        raise OutOfRangeError("an INTERVAL result is too large for a Python timedelta (at most 999999999 "
                              "days, a month counting 30 days): fetch it with .arrow()")
    return [dt.timedelta(days=int(d), microseconds=int(u)) if ok else None
            for d, u, ok in zip(days.tolist(), micros.tolist(), valid.tolist())]


def _interval_durations(arr: pa.ChunkedArray) -> pa.Array:
    """INTERVAL values as Arrow duration[us] (pandas timedelta64[us], as DuckDB's .df())."""
    days, micros, valid = _interval_fields(arr)
    if bool((np.abs(days[valid]) > (2**63 - 1) // _US_DAY - 1).any()):
        raise OutOfRangeError("an INTERVAL result is too large for a pandas timedelta (microseconds in "
                              "64 bits, a month counting 30 days): fetch it with .arrow()")
    return pa.array(days * _US_DAY + micros, pa.duration("us"), mask=~valid)


def sql_type_name(t: pa.DataType | pa.Field) -> str:
    """DuckDB's name of a result column's type (a field: its HUGEINT mark is read too)."""
    if isinstance(t, pa.Field):
        if _is_hugeint(t):
            return "HUGEINT"
        t = t.type
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_timestamp(t) and t.tz:
        return "TIMESTAMP WITH TIME ZONE"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return sql_type_name(t.value_type) + "[]"
    return _TYPE_CODES.get(str(t), str(t).upper())


class Result:
    """The answer of one statement: an Arrow table, execution statistics and a fetch cursor.

    A result of ``Connection.execute`` may still be running (``exec/stream.py``): its rows are
    read from the running query by ``fetch_record_batch``, or collected in full by the first call
    of anything else."""

    def __init__(self, table: pa.Table | None, stats: dict[str, Any] | None = None, stream: Any = None):
        self._data = table
        self._stats = stats or {}
        self._stream = stream     # the running query's stream, not read yet
        self._reader_stream = None  # a stream handed to fetch_record_batch's reader
        self._pos = 0

    @property
    def _table(self) -> pa.Table:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.release()
            batches = []
            while (b := stream.get()) is not None:
                batches.append(b)
            self._data = pa.Table.from_batches(batches, stream.schema)
            self._stats = stream.stats
        return self._data

    @property
    def stats(self) -> dict[str, Any]:
        """Execution statistics (rows, bytes and pages read, time, peak memory, per operator)."""
        self._table  # noqa: B018 - a running result finishes first
        s = self._reader_stream
        return s.stats if s is not None and s.finished else self._stats

    def close(self) -> None:
        """Stop a query still streaming its result (nothing for a finished one)."""
        for s in (self._stream, self._reader_stream):
            if s is not None and not s.finished:
                s.cancel()
        if self._stream is not None:
            self._stream = None
            self._data = pa.Table.from_batches([], self._data.schema if self._data is not None else pa.schema([]))

    def _settle(self) -> None:
        """Before another statement runs on the connection: a result not read yet is collected in
        memory; a reader's query goes on to its end (its rest kept in memory for the reader)."""
        if self._stream is not None:
            self._table  # noqa: B018
        s = self._reader_stream
        if s is not None and not s.finished:
            s.release()

    # ---- whole results ----------------------------------------------------------------------------
    def arrow(self) -> pa.Table:
        """The whole result as a pyarrow Table (column names may repeat, as in SQL)."""
        return self._table

    fetch_arrow_table = arrow
    to_arrow_table = arrow

    def fetch_record_batch(self, rows_per_batch: int = 1_000_000) -> pa.RecordBatchReader:
        """A RecordBatchReader over the rows not fetched yet, ``rows_per_batch`` rows at a time. For
        a result of ``execute`` still running, the reader yields batches as the query produces them
        (memory stays bounded: the query waits while the reader does not read); dropping the reader
        before its end cancels the query; a failure is raised by the reader as a HetdbError."""
        stream = self._stream
        if stream is not None:
            self._stream = None
            self._reader_stream = stream
            self._data = pa.Table.from_batches([], stream.schema)  # the rows belong to the reader
            return pa.RecordBatchReader.from_batches(stream.schema, stream.batches(rows_per_batch))
        rest = self._table.slice(self._pos)
        self._pos = self._table.num_rows
        batches = rest.to_batches(max_chunksize=max(1, int(rows_per_batch)))
        return pa.RecordBatchReader.from_batches(self._table.schema, batches)

    def df(self):
        """The result as a pandas DataFrame (needs ``hetdb[pandas]``)."""
        _require("pandas", "pandas")
        t = self._table
        for i, f in enumerate(t.schema):
            if f.type == _INTERVAL:  # DuckDB gives timedelta64[us] columns
                t = t.set_column(i, f.name, _interval_durations(t.column(i)))
        return t.to_pandas()

    fetchdf = df
    to_df = df

    def pl(self):
        """The result as a Polars DataFrame (needs ``hetdb[polars]``)."""
        polars = _require("polars", "polars")
        t = self._table
        if len(set(t.column_names)) != t.num_columns:
            raise HetdbError("Polars DataFrames need distinct column names: alias the repeated columns "
                             f"({', '.join(t.column_names)})")
        return polars.from_arrow(t)

    # ---- row cursor -------------------------------------------------------------------------------
    def _rows(self, start: int, stop: int) -> list[tuple]:
        part = self._table.slice(start, max(0, stop - start))
        cols = [c.to_pylist() for c in part.columns]
        for i, f in enumerate(part.schema):
            if _is_hugeint(f):  # DuckDB gives HUGEINT values as Python ints
                cols[i] = [None if v is None else int(v) for v in cols[i]]
            elif f.type == _INTERVAL:  # and INTERVAL values as datetime.timedelta
                cols[i] = _interval_timedeltas(part.column(i))
        return list(zip(*cols)) if cols else [()] * part.num_rows

    def fetchone(self) -> tuple | None:
        """The next row, or None after the last."""
        if self._pos >= self._table.num_rows:
            return None
        row = self._rows(self._pos, self._pos + 1)[0]
        self._pos += 1
        return row

    def fetchmany(self, size: int = 1) -> list[tuple]:
        """Up to ``size`` next rows."""
        rows = self._rows(self._pos, min(self._pos + max(0, size), self._table.num_rows))
        self._pos += len(rows)
        return rows

    def fetchall(self) -> list[tuple]:
        """Every row not fetched yet, as tuples."""
        rows = self._rows(self._pos, self._table.num_rows)
        self._pos = self._table.num_rows
        return rows

    # ---- description -----------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        return list(self._table.column_names)

    @property
    def types(self) -> list[str]:
        return [sql_type_name(f) for f in self._table.schema]

    @property
    def description(self) -> list[tuple]:
        """PEP 249: (name, type_code, None, None, None, None, None) per column."""
        return [(f.name, sql_type_name(f), None, None, None, None, None) for f in self._table.schema]

    @property
    def num_rows(self) -> int:
        return self._table.num_rows

    rowcount = -1  # PEP 249: not known for queries

    def __len__(self) -> int:
        return self._table.num_rows

    def show(self, max_rows: int = 40) -> None:
        """Print the result as a table (as the CLI does)."""
        from hetdb.cli.render import render_text

        print(render_text(self._table, max_rows=max_rows))

    def __repr__(self) -> str:
        from hetdb.cli.render import render_text

        return render_text(self._table, max_rows=20)

    def _repr_html_(self, max_rows: int = 50) -> str:
        t = self._table
        head = "".join(f"<th>{html.escape(n)}</th>" for n in t.column_names)
        body = []
        for row in self._rows(0, min(max_rows, t.num_rows)):
            body.append("<tr>" + "".join(f"<td>{'NULL' if v is None else html.escape(str(v))}</td>"
                                         for v in row) + "</tr>")
        more = f"<p>{t.num_rows:,} rows, {max_rows} shown</p>" if t.num_rows > max_rows else ""
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"
