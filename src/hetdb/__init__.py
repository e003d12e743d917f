"""hetdb: an embedded analytical SQL engine for data larger than GPU memory and host memory."""

from __future__ import annotations

from hetdb.errors import (
    CatalogError,
    CorruptDataError,
    HetdbError,
    InputError,
    OutOfMemoryError,
    OutOfRangeError,
    SqlError,
    UnsupportedError,
)

__version__ = "0.1.0"


def connect(path: str, device: str = "auto", **options):
    """Open (or create) the database directory ``path`` and return a Connection.

    device: "auto" (GPU when CuPy sees one, else CPU), "cpu" or "gpu".
    options: gpu_memory_limit, host_memory_limit, batch_rows, threads, optimizer passes to disable.
    """
    from hetdb.connection import Connection

    return Connection(path, device=device, **options)


__all__ = [
    "connect",
    "HetdbError",
    "SqlError",
    "CatalogError",
    "CorruptDataError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "UnsupportedError",
    "InputError",
    "__version__",
]
