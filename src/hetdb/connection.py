"""The Python API: a Connection to one database directory."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from hetdb.config import Options, parse_bytes
from hetdb.errors import HetdbError


class Result:
    """The answer of one query: an Arrow table plus execution statistics."""

    def __init__(self, table: pa.Table, stats: dict[str, Any]):
        self._table = table
        self.stats = stats

    def arrow(self) -> pa.Table:
        return self._table

    def df(self):
        return self._table.to_pandas()

    def fetchall(self) -> list[tuple]:
        cols = [c.to_pylist() for c in self._table.columns]
        return list(zip(*cols)) if cols else []

    @property
    def num_rows(self) -> int:
        return self._table.num_rows

    def __repr__(self) -> str:
        return f"<hetdb.Result {self._table.num_rows} rows x {self._table.num_columns} columns>"


class TableHandle:
    """A stored table as of the moment it was looked up (a committed version)."""

    def __init__(self, reader):
        self._reader = reader

    @property
    def name(self) -> str:
        return self._reader.name

    @property
    def num_rows(self) -> int:
        return self._reader.num_rows

    @property
    def schema(self):
        return self._reader.schema

    def arrow(self, columns: list[str] | None = None) -> pa.Table:
        return self._reader.arrow(columns)

    def df(self):
        return self.arrow().to_pandas()


def resolve_backend(device: str):
    """'auto' -> GPU when CuPy sees one, else CPU; 'gpu' without a GPU is an error."""
    if device not in ("auto", "cpu", "gpu"):
        raise HetdbError(f"unknown device {device!r}: use 'auto', 'cpu' or 'gpu'")
    if device in ("auto", "gpu"):
        from hetdb.backend.gpu.device import gpu_available

        if gpu_available():
            from hetdb.backend.gpu import GpuBackend

            return GpuBackend()
        if device == "gpu":
            raise HetdbError("device='gpu' was asked for but no GPU is visible to CuPy "
                             "(install hetdb[gpu] on a machine with an NVIDIA GPU, or use device='cpu')")
    from hetdb.backend.cpu import CpuBackend

    return CpuBackend()


class Connection:
    def __init__(self, path: str, device: str = "auto", *, create: bool = True, workers: int | None = None,
                 cluster: str | None = None, **options: Any):
        from hetdb.storage import Database

        self.db = Database.open(str(path), create=create)
        for key in ("gpu_memory_limit", "host_memory_limit", "host_cache_limit"):
            if key in options:
                options[key] = parse_bytes(options[key])
        if "disabled_passes" in options:
            options["disabled_passes"] = frozenset(options["disabled_passes"])
        try:
            self.options = Options(device=device, **options)
        except TypeError as e:
            raise HetdbError(f"unknown connection option: {e}") from None
        self.backend = resolve_backend(device)
        self._engine = None
        self._dist = None
        if workers is not None or cluster is not None:  # distributed queries on Ray (hetdb.dist)
            from hetdb.dist.runtime import DistRuntime

            self._dist = DistRuntime(str(path), 1 if workers is None else workers, cluster, options)

    @property
    def device(self) -> str:
        return self.backend.name

    def tables(self) -> list[str]:
        return self.db.tables()

    def table(self, name: str) -> TableHandle:
        return TableHandle(self.db.table(name))

    def _get_engine(self):
        if self._engine is None:
            from hetdb.exec.engine import QueryEngine

            self._engine = QueryEngine(self.db, self.backend, self.options)
        return self._engine

    def sql(self, query: str) -> Result:
        if self._dist is not None:
            return Result(*self._dist.sql(self._get_engine(), query))
        table, stats = self._get_engine().execute(query)
        return Result(table, stats)

    def explain(self, query: str, analyze: bool = False) -> str:
        if self._dist is not None:
            return self._dist.explain(self._get_engine(), query, analyze=analyze)
        return self._get_engine().explain(query, analyze=analyze)

    def close(self) -> None:
        if self._dist is not None:
            self._dist.close()
            self._dist = None
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
