"""Typed errors. Every user-facing failure is a HetdbError subclass with a message a person can act on."""

from __future__ import annotations


class HetdbError(Exception):
    """Base class of every error hetdb raises on purpose."""


class SqlError(HetdbError):
    """The SQL text does not parse or does not make sense (carries line/column where known)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 text: str | None = None):
        where = ""
        if line is not None:
            where = f" (line {line}, column {column})" if column is not None else f" (line {line})"
        super().__init__(message + where + (f": {text}" if text else ""))
        self.line = line
        self.column = column
        self.text = text


class CatalogError(HetdbError):
    """An unknown (or duplicate) database, table or column."""


class CorruptDataError(HetdbError):
    """Stored data failed a check: checksum mismatch, truncated file, garbled manifest."""


class OutOfMemoryError(HetdbError):
    """A memory reservation was refused and nothing could spill."""


class OutOfRangeError(HetdbError):
    """A value does not fit its type (integer/decimal overflow, a cast out of range), as DuckDB's
    "Out of Range" / "Conversion" errors."""


class GpuWideValueError(OutOfRangeError):
    """A value past 64 bits (HUGEINT / DECIMAL(38)) reached the GPU path, whose kernels hold 64-bit
    values; the engine runs such a query on the CPU, so a user only meets this with the CPU fallback
    impossible."""


class GpuOutOfMemoryError(OutOfMemoryError):
    """The GPU memory budget (gpu_memory_limit) refused a reservation; the engine retries the query
    with the device page cache emptied, then on the CPU, before it reports this."""


class UnsupportedError(HetdbError):
    """hetdb does not support a construct (named in the message); refused before execution."""


class InputError(HetdbError):
    """An input file (CSV, Parquet, Arrow IPC) could not be read or converted."""


__all__ = [
    "HetdbError",
    "SqlError",
    "CatalogError",
    "CorruptDataError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "GpuOutOfMemoryError",
    "UnsupportedError",
    "InputError",
]


class RecursionLimitError(HetdbError):
    """A WITH RECURSIVE query took more iterations than the connection option recursion_limit allows."""
