"""The Python API: a Connection to one database directory (or to an in-memory database)."""

from __future__ import annotations

import atexit
import dataclasses
import inspect
import shutil
import tempfile
import threading
from typing import Any

import pyarrow as pa

from hetdb.config import Options, parse_bytes
from hetdb.errors import HetdbError
from hetdb.result import Result

__all__ = ["Connection", "Cursor", "Result", "TableHandle", "resolve_backend", "MEMORY"]

MEMORY = ":memory:"


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
        """The table (or ``columns``) as an Arrow table."""
        return self._reader.arrow(columns)

    def df(self):
        """The table as a pandas DataFrame (needs ``hetdb[pandas]``)."""
        return Result(self.arrow()).df()


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


def _make_options(device: str, options: dict[str, Any]) -> Options:
    options = dict(options)
    for key in ("gpu_memory_limit", "host_memory_limit", "host_cache_limit"):
        if key in options:
            options[key] = parse_bytes(options[key])
    if "disabled_passes" in options:
        options["disabled_passes"] = frozenset(options["disabled_passes"])
    try:
        return Options(device=device, **options)
    except TypeError as e:
        known = ", ".join(f.name for f in dataclasses.fields(Options) if f.name != "device")
        raise HetdbError(f"unknown connection option: {e} (known: {known})") from None


def _caller_scopes() -> list[dict]:
    """Local and global variables of the first caller outside hetdb (for replacement scans)."""
    frame = inspect.currentframe()
    try:
        while frame is not None and frame.f_globals.get("__name__", "").startswith("hetdb"):
            frame = frame.f_back
        if frame is None:
            return []
        return [dict(frame.f_locals), frame.f_globals]
    finally:
        del frame


class LastResult:
    """DB-API style access to the result of the last statement run (``self._last``), shared by
    Connection (execute) and Cursor."""

    arraysize = 1
    _last: Result | None
    _not_run = "no statement has been executed on this connection yet"

    def _result(self) -> Result:
        if self._last is None:
            raise HetdbError(self._not_run)
        return self._last

    def fetchone(self) -> tuple | None:
        return self._result().fetchone()

    def fetchmany(self, size: int | None = None) -> list[tuple]:
        return self._result().fetchmany(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple]:
        return self._result().fetchall()

    def arrow(self) -> pa.Table:
        return self._result().arrow()

    fetch_arrow_table = arrow

    def fetch_record_batch(self, rows_per_batch: int = 1_000_000) -> pa.RecordBatchReader:
        return self._result().fetch_record_batch(rows_per_batch)

    def df(self):
        return self._result().df()

    fetchdf = df

    def pl(self):
        return self._result().pl()

    @property
    def description(self) -> list[tuple] | None:
        return None if self._last is None else self._last.description

    @property
    def rowcount(self) -> int:
        return -1


class Connection(LastResult):
    """A connection to a database directory; ``path=":memory:"`` (or None) makes a private database
    in a temporary directory that is deleted on close (it behaves as an in-memory database: tables
    live in the page cache and go to disk only under memory pressure)."""

    def __init__(self, path: str | None = MEMORY, device: str = "auto", *, create: bool = True,
                 workers: int | None = None, cluster: str | None = None, **options: Any):
        from hetdb.storage import Database

        self._temp_dir: str | None = None
        if path is None or str(path) == MEMORY:
            self._temp_dir = tempfile.mkdtemp(prefix="hetdb-memory-")
            path = self._temp_dir
            atexit.register(shutil.rmtree, self._temp_dir, True)
        self.db = Database.open(str(path), create=create)
        from hetdb.dist import pop_dist_options

        dist_options = pop_dist_options(options, workers is not None or cluster is not None)
        self.options = _make_options(device, options)
        self._defaults = self.options
        self.backend = resolve_backend(device)
        self._engine = None
        self._registered: dict[str, str] = {}   # lower name -> storage.external key
        self._registered_names: dict[str, str] = {}
        self._last: Result | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._dist = None
        if workers is not None or cluster is not None:  # distributed queries on Ray (hetdb.dist)
            from hetdb.dist.runtime import DistRuntime

            self._dist = DistRuntime(str(path), 1 if workers is None else workers, cluster, options,
                                     dist_options)

    # ---- catalog ----------------------------------------------------------------------------------
    @property
    def device(self) -> str:
        """'cpu' or 'gpu': where this connection's queries run."""
        return self.backend.name

    @property
    def path(self) -> str:
        return self.db.path

    def tables(self) -> list[str]:
        """Names of the stored tables, sorted."""
        return self.db.tables()

    def table(self, name: str) -> TableHandle:
        """A handle of stored table ``name`` (its committed version now)."""
        return TableHandle(self.db.table(name))

    def register(self, name: str, obj: Any) -> Connection:
        """Make ``obj`` (pandas or Polars DataFrame, Arrow table, record batch reader or dataset)
        queryable as ``name``; Arrow data is scanned in place, not copied."""
        from hetdb.storage import external as X
        from hetdb.storage.registered import ArrowSource

        src = ArrowSource(name, obj)
        self.unregister(name)
        key = X.register_source(src, key=f"reg-{id(self)}-{name.lower()}")
        self._registered[name.lower()] = key
        self._registered_names[name.lower()] = name
        self._tables_changed()  # a cached plan of a stored table of this name no longer applies
        return self

    def unregister(self, name: str) -> Connection:
        """Forget an object registered as ``name`` (nothing if there is none)."""
        from hetdb.storage import external as X

        key = self._registered.pop(name.lower(), None)
        self._registered_names.pop(name.lower(), None)
        if key is not None:
            X.unregister_source(key)
            self._tables_changed()
        return self

    # ---- running statements ------------------------------------------------------------------------
    def _get_engine(self):
        if self._closed:
            raise HetdbError("the connection is closed")
        if self._engine is None:
            from hetdb.exec.engine import QueryEngine

            self._engine = QueryEngine(self.db, self.backend, self.options)
        return self._engine

    def _session(self, scopes: list[dict]):
        from hetdb.sql.external import Session

        return Session(registered=dict(self._registered), frames=scopes)

    def _run(self, sql: str, parameters: Any, scopes: list[dict]) -> Result:
        from hetdb.exec.ddl import StatementRunner
        from hetdb.sql import external as SX
        from hetdb.sql.statements import statements
        from hetdb.storage import external as X

        with self._lock:
            stmts = statements(sql, parameters)
            session = self._session(scopes)
            token = SX.SESSION.set(session)
            try:
                result = None
                for st in stmts:
                    if st.kind == "query" and self._dist is not None:
                        table, stats = self._dist.sql(self._get_engine(), st.text)
                        result = Result(table, stats)
                    elif st.kind == "query":
                        table, stats = self._get_engine().execute(st.text)
                        result = Result(table, stats)
                    else:
                        result = Result(StatementRunner(self).run(st), {})
            finally:
                SX.SESSION.reset(token)
                for key in session.replaced:
                    X.unregister_source(key)
            self._last = result
            return result

    def sql(self, query: str, params: Any = None) -> Result:
        """Run one or more ``;``-separated statements and return the last one's Result.
        ``params``: a list for ``?``/``$1`` placeholders or a dict for ``$name``."""
        return self._run(query, params, _caller_scopes())

    def execute(self, query: str, parameters: Any = None) -> Connection:
        """Run statements (as ``sql``) and keep the result for fetchone/fetchall/df/arrow; returns
        the connection, as DuckDB's does."""
        self._run(query, parameters, _caller_scopes())
        return self

    def executemany(self, query: str, parameters: list) -> Connection:
        """Run ``query`` once per parameter set."""
        scopes = _caller_scopes()
        for p in parameters:
            self._run(query, p, scopes)
        return self

    def explain(self, query: str, analyze: bool = False) -> str:
        """The physical plan of ``query`` (with per-operator statistics after running it when ``analyze``)."""
        from hetdb.sql import external as SX
        from hetdb.sql.statements import statements

        stmts = statements(query, None)
        if len(stmts) == 1 and stmts[0].kind == "query":
            # the text sql() plans (no trailing ';'), so EXPLAIN ANALYZE finds the same cached plan
            query = stmts[0].text
        token = SX.SESSION.set(self._session(_caller_scopes()))
        try:
            if self._dist is not None:
                return self._dist.explain(self._get_engine(), query, analyze=analyze)
            return self._get_engine().explain(query, analyze=analyze)
        finally:
            SX.SESSION.reset(token)

    # used by exec/ddl.py while a statement runs (the session is already set)
    def _query_arrow(self, sql: str) -> pa.Table:
        return self._get_engine().execute(sql)[0]

    def _plan_only(self, sql: str):
        return self._get_engine().logical_plan(sql)

    def _explain_text(self, sql: str, analyze: bool) -> str:
        return self._get_engine().explain(sql, analyze=analyze)

    def _tables_changed(self) -> None:
        if self._engine is not None:
            self._engine.clear_plan_cache()

    # ---- options -----------------------------------------------------------------------------------
    def set_option(self, name: str, value: Any) -> None:
        """Change a connection option (as SQL ``SET name = value``): threads, host_memory_limit
        (memory_limit), gpu_memory_limit, batch_rows, zone_maps, spill_dir, host_cache_limit."""
        from hetdb.exec.ddl import options_with

        self._reconfigure(options_with(self.options, name, value, self._defaults))

    def reset_option(self, name: str) -> None:
        """Back to the value the connection was opened with (SQL ``RESET name``)."""
        from hetdb.exec.ddl import options_with

        self._reconfigure(options_with(self.options, name, None, self._defaults))

    def _reconfigure(self, options: Options) -> None:
        if options == self.options:
            return
        self.options = options
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def cursor(self) -> Cursor:
        """A PEP 249 cursor on this connection (its own current result)."""
        return Cursor(self)

    # ---- life cycle --------------------------------------------------------------------------------
    def commit(self) -> None:
        """Every statement commits on its own (PEP 249 compatibility: nothing to do)."""

    def rollback(self) -> None:
        raise HetdbError("hetdb has no open transactions to roll back: each statement commits on its own")

    def close(self) -> None:
        """Release the engine (and delete an in-memory database)."""
        for name in list(self._registered):
            self.unregister(name)
        if self._dist is not None:
            self._dist.close()
            self._dist = None
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        self._closed = True
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Cursor(LastResult):
    """PEP 249 cursor: runs statements on its connection and keeps its own result."""

    _not_run = "the cursor has not executed a statement yet"

    def __init__(self, con: Connection) -> None:
        self.connection = con
        self._last: Result | None = None

    def execute(self, query: str, parameters: Any = None) -> Cursor:
        """Run ``query`` (parameters as Connection.execute) and keep its result."""
        self._last = self.connection._run(query, parameters, _caller_scopes())
        return self

    def executemany(self, query: str, parameters: list) -> Cursor:
        scopes = _caller_scopes()
        for p in parameters:
            self._last = self.connection._run(query, p, scopes)
        return self

    def close(self) -> None:
        self._last = None

    def __iter__(self):
        while (row := self.fetchone()) is not None:
            yield row
