"""The Python API: a Connection to one database directory (or to an in-memory database)."""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import dataclasses
import inspect
import shutil
import tempfile
import threading
from typing import Any

import pyarrow as pa

from hetdb.config import Options, parse_bytes
from hetdb.errors import HetdbError
from hetdb.gc_pause import no_full_collection
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
    for key in ("gpu_memory_limit", "host_memory_limit", "host_cache_limit", "gpu_batch_bytes"):
        if key in options:
            options[key] = parse_bytes(options[key])
    if "disabled_passes" in options:
        options["disabled_passes"] = frozenset(options["disabled_passes"])
    if "timezone" in options:
        from hetdb.exec.timezones import zone

        zone(str(options["timezone"]))  # an unknown zone fails here, naming it
    try:
        made = Options(device=device, **options)
    except TypeError as e:
        known = ", ".join(f.name for f in dataclasses.fields(Options) if f.name != "device")
        raise HetdbError(f"unknown connection option: {e} (known: {known})") from None
    return _interned(made)


# (Options, repr) -> the one Options object of the process with those values: memos keyed by the
# options object (the shared plan key's repr, the resolved gpu_compressed_cache) then hold across
# connections, a fresh connection per query no longer building them at its first query's head
# (the repr in the key keeps 1 and True apart, which compare equal)
_OPTIONS: dict[tuple, Options] = {}


def _interned(options: Options) -> Options:
    try:
        key = (options, repr(options))
        got = _OPTIONS.get(key)
    except TypeError:  # (an unhashable value)
        return options
    if got is None:
        if len(_OPTIONS) >= 256:
            _OPTIONS.clear()
        got = _OPTIONS[key] = options
    return got


def _check_route(options: Options, backend) -> None:
    """HetdbError when the ``route`` option forces a path this connection's device cannot take."""
    from hetdb.cache.coscan import check_coprocess
    from hetdb.cache.router import check_admission, check_mode, check_zero_copy

    check_mode(options.route, gpu=backend.name == "gpu")
    check_coprocess(options.gpu_coprocess)
    check_admission(options.gpu_cache_admission)
    check_zero_copy(options.gpu_zero_copy)


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
    live in the page cache and go to disk only under memory pressure). ``progress=True`` shows a
    progress line (stage, rows and pages read, time) on stderr for statements running over a second,
    also in a notebook (SQL: ``SET progress = true``)."""

    def __init__(self, path: str | None = MEMORY, device: str = "auto", *, create: bool = True,
                 workers: int | None = None, cluster: str | None = None, progress: bool = False,
                 **options: Any):
        from hetdb.storage import Database

        self.progress = self._progress_default = bool(progress)
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
        _check_route(self.options, self.backend)
        self._engine = None
        self._registered: dict[str, str] = {}   # lower name -> storage.external key
        self._registered_names: dict[str, str] = {}
        self._last: Result | None = None
        # (result, stream, cursor) of a query still running: the cursor holding the result, or None
        # when Connection.execute started it (then only this connection reaches it)
        self._streaming: tuple[Result, Any, Any] | None = None
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

    def _settle(self, new_statement: bool = False) -> None:
        """Let a query still streaming its result finish before the engine runs anything else: its
        rest is kept in memory for its Result, cursor or reader (a cancelled one just stops). With
        ``new_statement`` a result of Connection.execute that no reader took is cancelled instead:
        the statement replaces it as the connection's result, so nothing can read it any more."""
        if self._streaming is not None:
            result, stream, cursor = self._streaming
            self._streaming = None
            try:
                if new_statement and cursor is None and result._stream is not None:
                    result.close()
                else:
                    result._settle()
            finally:
                stream.wait_finished()

    def _run(self, sql: str, parameters: Any, scopes: list[dict], stream: bool = False,
             cursor: Any = None) -> Result:
        from hetdb.sql import external as SX
        from hetdb.sql.statements import statements
        from hetdb.storage import external as X

        with self._lock:
            self._settle(new_statement=True)
            stmts = statements(sql, parameters)
            session = self._session(scopes)
            token = SX.SESSION.set(session)
            streamed = False
            try:
                with self._progress(), no_full_collection():
                    result, streamed = self._run_statements(stmts, session, stream, cursor)
            finally:
                SX.SESSION.reset(token)
                if not streamed:  # a streamed query unregisters them when it ends
                    for key in session.replaced:
                        X.unregister_source(key)
            self._last = result
            return result

    def _progress(self):
        if not self.progress:  # (the default: no generator context per statement)
            return contextlib.nullcontext()
        from hetdb.cli.progress import engine_status, progress_line

        return progress_line(enabled=self.progress, status=engine_status(self), terminal_only=False)

    def _run_statements(self, stmts: list, session: Any, stream: bool, cursor: Any) -> tuple[Result | None, bool]:
        from hetdb.exec.ddl import StatementRunner

        result, streamed = None, False
        for i, st in enumerate(stmts):
            if st.kind == "query" and self._dist is not None:
                table, stats = self._dist.sql(self._get_engine(), st.text)
                result = Result(table, stats)
            elif st.kind == "query" and stream and i == len(stmts) - 1:
                result, streamed = self._start_stream(st.text, session, cursor), True
            elif st.kind == "query":
                table, stats = self._get_engine().execute(st.text)
                result = Result(table, stats)
            else:
                result = Result(StatementRunner(self).run(st), {})
        return result, streamed

    def _start_stream(self, sql: str, session: Any, cursor: Any) -> Result:
        """Start ``sql`` on a background thread streaming its result (exec/stream.py); return once it
        has finished or waits for a reader (its queue is full), raising its error if it failed first."""
        from hetdb.exec.stream import ResultStream
        from hetdb.storage import external as X

        stream = ResultStream()
        engine = self._get_engine()
        context = contextvars.copy_context()  # the session (replacement scans) the query binds with

        def body() -> None:
            stats: dict[str, Any] = {}
            error = None
            try:
                stats = context.run(engine.execute_stream, sql, stream)
            except BaseException as e:  # noqa: BLE001 - handed to the reader / execute()
                error = e
            finally:
                for key in session.replaced:
                    X.unregister_source(key)
                stream.finish(error, stats)

        result = Result(None, None, stream)
        self._streaming = (result, stream, cursor)
        threading.Thread(target=body, name="hetdb-query", daemon=True).start()
        try:
            stream.wait_ready()
        except BaseException:
            stream.cancel()  # an error (raised here, as before) or Ctrl-C while waiting
            stream.wait_finished()
            self._streaming = None
            raise
        return result

    def sql(self, query: str, params: Any = None) -> Result:
        """Run one or more ``;``-separated statements and return the last one's Result.
        ``params``: a list for ``?``/``$1`` placeholders or a dict for ``$name``."""
        return self._run(query, params, _caller_scopes())

    def execute(self, query: str, parameters: Any = None) -> Connection:
        """Run statements (as ``sql``) and keep the result for fetchone/fetchall/df/arrow; returns
        the connection, as DuckDB's does. A query's result is streamed: ``fetch_record_batch``
        reads batches while it still runs (it returns once the query ends or its first batches
        wait for a reader); the next statement on the connection lets it finish first."""
        self._run(query, parameters, _caller_scopes(), stream=True)
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

        with self._lock:
            self._settle()
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
        (memory_limit), gpu_memory_limit, batch_rows, zone_maps, spill_dir, host_cache_limit;
        progress (the progress line)."""
        from hetdb.exec.ddl import options_with

        if name == "progress":
            self.progress = value if isinstance(value, bool) else str(value).lower() in ("true", "1", "on")
            return
        self._reconfigure(options_with(self.options, name, value, self._defaults))

    def reset_option(self, name: str) -> None:
        """Back to the value the connection was opened with (SQL ``RESET name``)."""
        from hetdb.exec.ddl import options_with

        if name == "progress":
            self.progress = self._progress_default
            return
        self._reconfigure(options_with(self.options, name, None, self._defaults))

    def _reconfigure(self, options: Options) -> None:
        if options == self.options:
            return
        _check_route(options, self.backend)
        self._settle()
        self.options = options
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def cursor(self) -> Cursor:
        """A PEP 249 cursor on this connection (its own current result)."""
        return Cursor(self)

    # ---- pins --------------------------------------------------------------------------------------------
    def pin(self, table: str, columns: list[str] | str | None = None, tier: str = "gpu") -> dict:
        """Load ``columns`` (default: all) of ``table`` into ``tier`` ("gpu" or "host") and keep them
        there, never evicted, counted against the tier's budget (``PinError`` when they do not fit).
        SQL: ``PRAGMA hetdb_pin('t', columns='a,b', tier='host')``. Returns what was pinned."""
        from hetdb.cache.pins import pin

        with self._lock:
            return pin(self, table, columns, tier)

    def unpin(self, table: str, columns: list[str] | str | None = None, tier: str | None = None) -> int:
        """Release pins of ``table`` (``columns`` of it; in ``tier``, or every tier): the pages stay
        cached, evictable again. Returns how many pages were released."""
        from hetdb.cache.pins import unpin

        with self._lock:
            return unpin(self, table, columns, tier)

    # ---- life cycle --------------------------------------------------------------------------------
    def commit(self) -> None:
        """Every statement commits on its own (PEP 249 compatibility: nothing to do)."""

    def rollback(self) -> None:
        raise HetdbError("hetdb has no open transactions to roll back: each statement commits on its own")

    def close(self) -> None:
        """Release the engine (and delete an in-memory database); a query still streaming stops."""
        if self._streaming is not None:
            self._streaming[1].cancel()
            self._settle()
        for name in list(self._registered):
            self.unregister(name)
        if self._dist is not None:
            self._dist.close()
            self._dist = None
        from hetdb.cache.pins import release_all

        release_all(self)
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
        """Run ``query`` (parameters and streaming as Connection.execute) and keep its result."""
        self._last = self.connection._run(query, parameters, _caller_scopes(), stream=True, cursor=self)
        return self

    def executemany(self, query: str, parameters: list) -> Cursor:
        scopes = _caller_scopes()
        for p in parameters:
            self._last = self.connection._run(query, p, scopes)
        return self

    def close(self) -> None:
        """Forget the result; a query still streaming it stops."""
        if self._last is not None:
            self._last.close()
        self._last = None

    def __iter__(self):
        while (row := self.fetchone()) is not None:
            yield row
