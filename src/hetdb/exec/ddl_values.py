"""Values of DDL/DML statements: constants of VALUES lists, inserted tables conformed to a table's
column types (DuckDB's assignment casts), and DuckDB's SUMMARIZE table."""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from hetdb import types as T
from hetdb.errors import InputError
from hetdb.storage.format import ColumnSpec

_NOT_CONST = object()


def _constant(e: exp.Expression) -> Any:
    """The Python value of a literal VALUES item, or _NOT_CONST."""
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Boolean):
        return bool(e.this)
    if isinstance(e, exp.Literal):
        if e.is_string:
            return e.this
        try:
            return int(e.this)
        except ValueError:
            try:
                return decimal.Decimal(e.this)
            except decimal.InvalidOperation:
                return _NOT_CONST
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        v = _constant(e.this)
        return -v if v is not _NOT_CONST else _NOT_CONST
    return _NOT_CONST


def _column(values: list) -> pa.Array:
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) > 1 or decimal.Decimal in kinds:
        return pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.array(values) if kinds else pa.nulls(len(values), pa.int32())


def _conform(data: pa.Table, schema: list[ColumnSpec]) -> pa.Table:
    """``data`` cast to the table's column types (DuckDB's assignment casts); InputError naming the
    column when a value does not convert."""
    out = {}
    for spec in schema:
        arr = data.column(spec.name)
        target = spec.dtype.to_arrow()
        if arr.type != target and arr.null_count == len(arr):
            arr = pa.nulls(len(arr), target)  # untyped NULLs (VALUES (NULL)) fit any column type
        elif spec.dtype.kind == "time" and pa.types.is_string(arr.type):
            arr = _time_from_text(arr, spec.name)
        elif arr.type != target:
            try:
                arr = pc.cast(arr, target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InputError(f"column '{spec.name}' ({spec.dtype}): cannot convert the inserted "
                                 f"values of type {arr.type}: {e}") from None
        out[spec.name] = arr
    return pa.table(out)


def _time_from_text(arr: pa.ChunkedArray, column: str) -> pa.Array:
    """TIME text (Arrow casts no strings to time64) as DuckDB reads it."""
    from hetdb.sql.time_type import parse_time

    out = []
    for s in arr.to_pylist():
        us = None if s is None else parse_time(s)
        if s is not None and us is None:
            raise InputError(f"column '{column}' (TIME): cannot convert the inserted value '{s}' "
                             "(expected [YYYY-MM-DD ]HH:MM:SS[.MS])")
        out.append(us)
    return pa.array(out, pa.int64()).cast(pa.time64("us"))


def summarize(data: pa.Table, dtypes: list[T.DataType]) -> pa.Table:
    """DuckDB's SUMMARIZE columns for each column of ``data``."""
    rows: dict[str, list] = {k: [] for k in ("column_name", "column_type", "min", "max", "approx_unique",
                                             "avg", "std", "q25", "q50", "q75", "count", "null_percentage")}
    n = data.num_rows
    for name, col, dt in zip(data.column_names, data.columns, dtypes):
        rows["column_name"].append(name)
        rows["column_type"].append(dt.sql_name())
        mm = pc.min_max(col) if n else None
        rows["min"].append(None if mm is None or mm["min"].as_py() is None else str(mm["min"].as_py()))
        rows["max"].append(None if mm is None or mm["max"].as_py() is None else str(mm["max"].as_py()))
        rows["approx_unique"].append(pc.count_distinct(col, mode="only_valid").as_py())
        numeric = dt.is_numeric
        if numeric and n:
            f = pc.cast(col, pa.float64())
            mean = pc.mean(f).as_py()
            rows["avg"].append(None if mean is None else str(mean))
            sd = pc.stddev(f, ddof=1).as_py() if col.null_count < n - 1 else None
            rows["std"].append(None if sd is None else str(sd))
            qs = pc.quantile(f, q=[0.25, 0.5, 0.75], interpolation="nearest").to_pylist() \
                if col.null_count < n else [None] * 3
        else:
            rows["avg"].append(None)
            rows["std"].append(None)
            qs = [None] * 3
        for k, q in zip(("q25", "q50", "q75"), qs):
            rows[k].append(None if q is None else str(q))
        rows["count"].append(n)
        rows["null_percentage"].append(round(100.0 * col.null_count / n, 2) if n else 0.0)
    return pa.table(rows)
