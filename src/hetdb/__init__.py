"""hetdb: an embedded analytical SQL engine for data larger than GPU memory and host memory."""

from __future__ import annotations

import threading
from typing import Any

from hetdb.kernel_cache import configure as _configure_kernel_cache

# before any module of hetdb imports Numba: kernels are cached in a directory keyed by their code
_configure_kernel_cache()

from hetdb.errors import (  # noqa: E402
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

# PEP 249 module globals
apilevel = "2.0"
threadsafety = 1
paramstyle = "qmark"  # also $1 (numeric) and $name (named), as DuckDB

Error = HetdbError

_default = None
_default_lock = threading.Lock()


def connect(path: str | None = ":memory:", device: str = "auto", **options: Any):
    """Open (or create) the database directory ``path`` and return a Connection. ``":memory:"`` (the
    default) or None: a private database in a temporary directory deleted on close.

    device: "auto" (GPU when CuPy sees one, else CPU), "cpu" or "gpu".
    options: gpu_memory_limit, host_memory_limit, host_cache_limit, batch_rows, threads, zone_maps,
    spill_dir, disabled_passes (optimizer passes to switch off), create (False: the database must exist).
    """
    from hetdb.connection import Connection

    return Connection(path, device=device, **options)


def default_connection():
    """The module's shared in-memory connection (used by hetdb.sql / hetdb.execute)."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = connect(":memory:")
        return _default


def sql(query: str, params: Any = None):
    """Run ``query`` on the default in-memory connection and return its Result."""
    con = default_connection()
    return con._run(query, params, _scopes())


def execute(query: str, parameters: Any = None):
    """Run ``query`` on the default in-memory connection; returns the connection (fetch* on it)."""
    con = default_connection()
    con._run(query, parameters, _scopes())
    return con


def register(name: str, obj: Any):
    """Register ``obj`` on the default connection (see Connection.register)."""
    return default_connection().register(name, obj)


def _scopes() -> list[dict]:
    from hetdb.connection import _caller_scopes

    return _caller_scopes()


__all__ = [
    "connect",
    "sql",
    "execute",
    "register",
    "default_connection",
    "apilevel",
    "threadsafety",
    "paramstyle",
    "Error",
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
