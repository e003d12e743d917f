"""Logical data types of hetdb and their physical (NumPy) and Arrow representations.

Physical layout per type (in memory and on disk):
  int32, date (days since 1970-01-01)      -> int32
  int64, timestamp (microseconds, UTC-naive) -> int64
  timestamp with tz=True (TIMESTAMPTZ)       -> int64 microseconds since the epoch in UTC; shown in the
                                                connection's time zone (option ``timezone``)
  decimal(p, s)                              -> int64 holding value * 10**s (p <= 18)
  int128 (HUGEINT), decimal(19..38, s)       -> results only (SUM, wide arithmetic), never stored: int64
                                                while every value fits, else an object array of
                                                Python ints (exact; see docs/query-engine.md)
  float64                                    -> float64
  bool                                       -> bool (1 byte per value in memory)
  string                                     -> dictionary codes (int32) + dictionary, or offsets (int64) + bytes
  UBIGINT (kind int128, precision 64)       -> hash() results only, never stored: the HUGEINT layout
                                                (values 0..2**64-1); Arrow uint64 in results
  interval (INTERVAL)                        -> 16 bytes per value held in a complex128 array used as a
                                                plain container (int64 microseconds, then int32 days and
                                                int32 months packed in one int64;
                                                exec/functions_interval.py packs and unpacks); stored
                                                as those 16 bytes (plain pages, no zone map)
  time (TIME)                                -> int64 microseconds since midnight (sql/time_type.py)
  list (LIST, ``elem`` the element type)     -> query values only (exec/lists.py), never stored, host
                                                only: an object array holding a Python list of the
                                                elements' Python values (or None) per row
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from hetdb.errors import UnsupportedError

KINDS = ("int32", "int64", "float64", "decimal", "date", "bool", "string", "timestamp", "int128", "interval",
         "list", "time")


@dataclass(frozen=True)
class DataType:
    kind: str
    precision: int = 0
    scale: int = 0
    tz: bool = False  # TIMESTAMP WITH TIME ZONE (kind "timestamp": same physical layout, UTC)
    elem: DataType | None = None  # kind "list": the element type

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown type kind {self.kind!r}")
        if (self.kind == "list") != (self.elem is not None):
            raise ValueError("a LIST type needs an element type (and only a LIST has one)")

    @property
    def numpy_dtype(self) -> np.dtype:
        """dtype of the data array (codes for dictionary strings are int32; plain strings have none)."""
        return np.dtype(_NUMPY[self.kind])

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("int32", "int64", "float64", "decimal", "int128")

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int32", "int64", "int128")

    @property
    def is_wide(self) -> bool:
        """HUGEINT or DECIMAL(19..38): data may be an object array of Python ints (see module doc)."""
        return self.kind == "int128" or (self.kind == "decimal" and self.precision > MAX_DECIMAL_PRECISION)

    def to_arrow(self) -> pa.DataType:
        if self.elem is not None:
            return pa.list_(pa.field("l", self.elem.to_arrow()))  # DuckDB's field name
        if self == UBIGINT:
            return pa.uint64()
        if self == NULL:
            return pa.null()
        if self.kind == "decimal":
            return pa.decimal128(self.precision, self.scale)
        if self.tz:
            return pa.timestamp("us", tz="UTC")
        return _ARROW[self.kind]

    def sql_name(self) -> str:
        if self.elem is not None:
            return f"{self.elem.sql_name()}[]"
        if self == UBIGINT:
            return "UBIGINT"
        if self.kind == "decimal":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.tz:
            return "TIMESTAMP WITH TIME ZONE"
        return _SQL[self.kind]

    def __str__(self) -> str:
        return self.sql_name()

    @staticmethod
    def parse(text: str) -> DataType:
        """Inverse of str(): 'INTEGER', 'DECIMAL(15,2)', ... (used by manifests)."""
        t = text.strip().upper()
        if t.startswith("DECIMAL"):
            p, s = t[t.index("(") + 1 : t.index(")")].split(",")
            return decimal(int(p), int(s)) if int(p) <= MAX_DECIMAL_PRECISION else wide_decimal(int(p), int(s))
        if t == "TIMESTAMP WITH TIME ZONE":
            return TIMESTAMPTZ
        for kind, name in _SQL.items():
            if name == t:
                return DataType(kind)
        raise ValueError(f"unknown type {text!r}")


INT32 = DataType("int32")
INT64 = DataType("int64")
FLOAT64 = DataType("float64")
DATE = DataType("date")
BOOL = DataType("bool")
STRING = DataType("string")
TIMESTAMP = DataType("timestamp")
TIMESTAMPTZ = DataType("timestamp", tz=True)
INT128 = DataType("int128")
UBIGINT = DataType("int128", precision=64)  # hash(): exact 64-bit unsigned values in HUGEINT's layout
INTERVAL = DataType("interval")
TIME = DataType("time")
# A bare NULL's type (DuckDB's "NULL"): INTEGER data, every value NULL; an Arrow null column in results,
# INTEGER where stored (its name is INTEGER). Computing with it gives the concrete types; passing it
# through (CASE, coalesce, min/max, subqueries, GROUP BY keys) keeps it, as in DuckDB.
NULL = DataType("int32", precision=-1)

MAX_DECIMAL_PRECISION = 18
MAX_WIDE_PRECISION = 38
INT128_MAX = 2**127 - 1
INT128_MIN = -(2**127)


def list_of(elem: DataType) -> DataType:
    """LIST of ``elem`` (a query value; never stored); a list of bare NULLs holds INTEGERs."""
    return DataType("list", elem=INT32 if elem == NULL else elem)


def wide_decimal(precision: int, scale: int) -> DataType:
    """A DECIMAL of up to 38 digits: the type of SUM(DECIMAL) and of wide decimal arithmetic."""
    if not 0 < precision <= MAX_WIDE_PRECISION or not 0 <= scale <= precision:
        raise UnsupportedError(f"DECIMAL({precision},{scale}) is not supported (precision 1..38)")
    return DataType("decimal", precision, scale)


def decimal(precision: int, scale: int) -> DataType:
    if not 0 < precision <= MAX_DECIMAL_PRECISION or not 0 <= scale <= precision:
        raise UnsupportedError(
            f"DECIMAL({precision},{scale}) is not supported: hetdb stores decimals as scaled 64-bit "
            f"integers, precision 1..{MAX_DECIMAL_PRECISION}, 0 <= scale <= precision")
    return DataType("decimal", precision, scale)


_NUMPY = {"int32": "int32", "int64": "int64", "int128": "int64", "float64": "float64", "decimal": "int64", "date": "int32",
          "bool": "bool", "string": "int32", "timestamp": "int64", "interval": "complex128", "time": "int64",
          "list": "object"}
_ARROW = {"int32": pa.int32(), "int64": pa.int64(), "int128": pa.decimal128(38, 0), "float64": pa.float64(), "date": pa.date32(),
          "bool": pa.bool_(), "string": pa.string(), "timestamp": pa.timestamp("us"),
          "interval": pa.month_day_nano_interval(), "time": pa.time64("us")}
_SQL = {"int32": "INTEGER", "int64": "BIGINT", "int128": "HUGEINT", "float64": "DOUBLE", "date": "DATE", "bool": "BOOLEAN",
        "string": "VARCHAR", "timestamp": "TIMESTAMP", "interval": "INTERVAL", "time": "TIME"}


def value_type_from_arrow(t: pa.DataType, where: str = "") -> DataType:
    """``from_arrow`` that also reads Arrow lists as LIST (values a query reads in place: Parquet
    list columns; never stored)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return list_of(value_type_from_arrow(t.value_type, where))
    return from_arrow(t, where)


def from_arrow(t: pa.DataType, where: str = "") -> DataType:
    """Map an Arrow type (as found in real Parquet/CSV/IPC files) to a hetdb type."""
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type, where)
    if pa.types.is_null(t):  # a column of bare NULLs (CREATE TABLE AS SELECT NULL): INTEGER, as DuckDB
        return INT32
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) \
            or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return INT32
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return INT64
    if pa.types.is_floating(t):
        return FLOAT64
    if pa.types.is_decimal(t):
        # Wider decimals (decimal(38, s) is common in real files) are stored in 18 digits; ingest
        # checks every value fits and names the column if one does not.
        return decimal(min(t.precision, MAX_DECIMAL_PRECISION), min(t.scale, MAX_DECIMAL_PRECISION))
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_timestamp(t):
        return TIMESTAMPTZ if t.tz else TIMESTAMP
    if pa.types.is_time(t):
        return TIME
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING
    if t == pa.month_day_nano_interval() or pa.types.is_duration(t):
        return INTERVAL
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        raise UnsupportedError(f"column {where or '?'} is a LIST ({value_type_from_arrow(t, where)}), which "
                               "hetdb cannot store (store its elements with unnest(...), or its text with "
                               "CAST(... AS VARCHAR))")
    raise UnsupportedError(f"column {where or '?'} has Arrow type {t}, which hetdb cannot store "
                           "(supported: integers, floats, decimal(<=18), date, timestamp, bool, string, "
                           "interval)")

