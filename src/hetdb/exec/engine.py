"""QueryEngine: SQL text -> bound plan -> optimized plan -> pipelines -> Arrow table with stats."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import shutil
import tempfile
import time
import traceback
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hetdb.cache.fused_state import FusedStateStore
from hetdb.deepstack import DEEP_SQL_CHARS, run_guarded
from hetdb.errors import GpuWideValueError, HetdbError
from hetdb.exec import plan_cache
from hetdb.exec.columns import concat_batches
from hetdb.exec.host_cache import DecodedPageCache
from hetdb.exec.host_tail import _source_results, _tail_backend, host_note, host_sinks, host_tail
from hetdb.exec.hostutil import batch_to_device, batch_to_host, deactivate, spill_made, to_arrow_table
from hetdb.exec.memory import MemoryManager
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.physical import PhysicalPlan, PhysicalPlanner
from hetdb.exec.pipeline import run_pipeline
from hetdb.exec.results import loaded
from hetdb.exec.route_stats import scan_routes
from hetdb.exec.run_stats import query_stats
from hetdb.exec.small_tail import run_small
from hetdb.exec.snapshot import QuerySnapshot
from hetdb.plan import logical as L
from hetdb.plan.host_values import host_kind

PLAN_CACHE_ENTRIES = 256
_SPILL_TOKEN = uuid.uuid4().hex[:12]  # spill directory names: this process's token and a count
_SPILL_COUNTER = itertools.count()
# A pipeline that only reads earlier results (sort, top-n, projections of an aggregate, the final
# collect) runs on the host when they hold at most this many rows: a few hundred rows are copied to
# the host faster than the GPU launches the kernels sorting them (a placement, not a fallback).
HOST_RESULT_ROWS = 1 << 16


# id(plan) -> (plan, _host_only(plan)): a plan from the process-wide plan cache (exec/plan_cache.py) is
# the same object on every connection, so a fresh connection does not walk its expressions again
_HOST_ONLY: dict[int, tuple[L.Output, str]] = {}
_TAIL_BACKENDS: list = []  # _shared_tail_backend's


def _shared_tail_backend() -> Any:
    """The process's tail backend (host_tail._tail_backend: a stateless CPU backend), made once: a
    class statement and its instance per connection cost a fresh connection's first query ~30 us
    before its first copy."""
    if not _TAIL_BACKENDS:
        _TAIL_BACKENDS.append(_tail_backend())
    return _TAIL_BACKENDS[0]


# (id(options), gpu_compressed_cache) -> (options, options with it decided): _options_with's memo, the
# process's (connections with equal options share one Options object: connection._interned)
_RESOLVED_OPTIONS: dict[tuple, tuple] = {}


@dataclass(frozen=True)
class CachedPlan:
    """A planned query: the optimized logical plan, its physical plan (immutable operator
    descriptions, reusable by any number of runs) and the table readers it was planned against."""

    plan: L.Output
    physical: PhysicalPlan
    readers: tuple[tuple[str, Any], ...]  # (table name, TableReader snapshot)


def plan_tables(*plans: L.Node) -> set[str] | None:
    """Stored tables the plans scan; None when one reads something a table version does not
    describe (a Parquet file), which must not be cached."""
    names: set[str] = set()
    stack = list(plans)
    while stack:
        node = stack.pop()
        if isinstance(node, L.Scan):
            if node.source != "table":
                return None
            names.add(node.table)
        stack.extend(node.inputs())
    return names


class QueryEngine:
    """Runs queries of one connection: a worker pool and a host memory budget shared by its queries."""

    def __init__(self, db, backend, options):
        self.db = db
        self.backend = backend
        self.options = options
        self.memory = MemoryManager(options.host_memory_limit)
        self.device = None
        self.last_gpu_leak = 0  # device bytes the last query left allocated (checked after errors too)
        if backend.name == "gpu":
            from hetdb.exec.device import DeviceResources

            # one budget and page cache per connection: pages stay on the GPU between its queries
            self.device = DeviceResources(options.gpu_memory_limit)
        # CPU: pages stay decoded in host memory between queries (a quarter of the host budget)
        self.host_cache = DecodedPageCache(self.memory.limit // 4) if backend.name == "cpu" else None
        if backend.name == "cpu":  # (freed arrays stay in the process: backend/cpu/heap.py)
            from hetdb.backend.cpu.heap import keep_freed_memory

            keep_freed_memory()
        self.threads = max(1, int(options.threads or 1))
        # (none on the GPU: its pipelines run with one worker, the host tail's too)
        self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="hetdb-worker") \
            if self.threads > 1 and self.device is None else None
        # SQL text -> CachedPlan. Options are fixed per connection, so the text and the committed
        # version of every table read (checked per lookup) decide the plan, cardinality samples included.
        self._plans: OrderedDict[str, CachedPlan] = OrderedDict()
        self.plan_cache_hits = 0
        # fused pipelines' dense tables per cached physical plan (device cache entries on the GPU)
        self.fused_states = FusedStateStore(self.device.cache if self.device is not None else None)
        # what the running statement is doing, for progress lines: stage, pipeline i of n, context
        self.live: dict[str, Any] = {}
        self.tail_backend = None  # the backend small-result pipelines run on (set on the GPU)
        self._cpu_engine: QueryEngine | None = None  # GPU: runs what gpu_memory_limit cannot hold
        self._spill_root: tuple | None = None  # (options, where this connection's queries' spill directories go)
        self._tail_memo: dict[int, tuple] = {}  # id(physical) -> (physical, host tail, host sinks)
        self._hot: dict[int, Any] = {}  # id(physical) -> exec/hot_replay.HotRecord of its last full hot run
        # host copies of device dictionaries small results take to the host tail: the same objects
        # every run of a plan (its sort ranks are then kept too: exec/dictionary_memo.py)
        from hetdb.exec.dictionary_memo import DictionaryMemo

        self.host_dictionaries = DictionaryMemo()
        if self.device is not None:
            self.tail_backend = _shared_tail_backend()

    # ---- planning ---------------------------------------------------------------------------------
    def logical_plan(self, sql: str) -> L.Output:
        """The optimized logical plan of ``sql`` (from the plan cache when current)."""
        return self.planned(sql)[0].plan

    def _optimize(self, plan: L.Output) -> L.Output:
        try:
            from hetdb.plan.optimizer import optimize
        except ImportError:  # the optimizer is optional for correctness: run the bound plan as it is
            return plan
        options = self.options
        if options.device == "auto":  # (passes that differ per device see the one that runs)
            options = dataclasses.replace(options, device="gpu" if self.device is not None else "cpu")
        out = optimize(plan, self.db, options)
        return out if isinstance(out, L.Output) else L.Output(out, plan.fields)

    def physical_plan(self, plan: L.Output) -> PhysicalPlan:
        return PhysicalPlanner().plan(plan)

    def planned(self, sql: str) -> tuple[CachedPlan, bool]:
        """(plan of ``sql``, whether it came from the plan cache). A cached plan is used only while
        every table it reads is still at the version it was planned against."""
        entry = self._plans.get(sql)
        if entry is not None:
            if self._current(entry):
                self._plans.move_to_end(sql)
                self.plan_cache_hits += 1
                return entry, True
            del self._plans[sql]
        from hetdb.sql import bind

        key = self._shared_key(sql)
        got: list = []
        shared = plan_cache.lookup(key, self.db, got) if key is not None else None
        if shared is not None:
            # planned by another connection of this process against the same table versions
            try:
                readers = tuple(got) if len(got) == len(shared.tables) \
                    else tuple((n, self.db.table(n)) for n, _ in shared.tables)
            except HetdbError:
                readers = None
            if readers is not None:
                entry = CachedPlan(shared.plan, shared.physical, readers)
                self._remember(sql, entry)
                self.plan_cache_hits += 1
                return entry, True
        self.live = {"stage": "planning"}
        facts: dict = {}
        bound = bind(sql, self.db, self.options.timezone, facts)
        plan = self._optimize(bound)
        entry = CachedPlan(plan, self.physical_plan(plan), ())
        names = None if facts.get("volatile") else plan_tables(bound, plan)
        if names is not None:
            try:
                readers = tuple((n, self.db.table(n)) for n in sorted(names))
                identities = tuple((n, self.db.table_identity(n)) for n in sorted(names))
            except HetdbError:
                return entry, False
            entry = CachedPlan(plan, entry.physical, readers)
            self._remember(sql, entry)
            if key is not None:
                plan_cache.store(key, plan, entry.physical, identities)
        return entry, False

    def _remember(self, sql: str, entry: CachedPlan) -> None:
        self._plans[sql] = entry
        while len(self._plans) > PLAN_CACHE_ENTRIES:
            self._plans.popitem(last=False)

    def _shared_key(self, sql: str) -> tuple | None:
        """The process-wide plan cache's key of ``sql`` on this connection (exec/plan_cache.py)."""
        if not isinstance(sql, str):
            return None
        from hetdb.sql.external import SESSION

        session = SESSION.get()
        registered = frozenset(session.registered) if session is not None else frozenset()
        return plan_cache.plan_key(self.db, sql, self.options, self.backend.name, registered)

    def _current(self, entry: CachedPlan) -> bool:
        try:
            is_current = getattr(self.db, "is_current", None)  # (one stat per table: Database.is_current)
            if is_current is not None:
                return all(is_current(name, reader) for name, reader in entry.readers)
            # db.table returns the same reader object while the committed version is unchanged
            return all(self.db.table(name) is reader for name, reader in entry.readers)
        except HetdbError:  # a table was dropped: plan again, which reports it
            return False

    def clear_plan_cache(self) -> None:
        self._plans.clear()
        self._hot.clear()

    # ---- running ------------------------------------------------------------------------------------
    def execute(self, sql: str) -> tuple[pa.Table, dict[str, Any]]:
        return run_guarded("query", lambda: self._execute(sql), deep=isinstance(sql, str) and len(sql) > DEEP_SQL_CHARS)

    def _execute(self, sql: str) -> tuple[pa.Table, dict[str, Any]]:
        t0 = time.perf_counter()
        entry, cached = self.planned(sql)
        plan_seconds = time.perf_counter() - t0
        table, stats, _ = self.run_plan(entry.plan, entry.physical, reuse=self._reusable(sql, entry),
                                        readers=entry.readers)
        stats["plan_seconds"] = plan_seconds
        stats["plan_cached"] = cached
        return table, stats

    def execute_stream(self, sql: str, stream: Any) -> dict[str, Any]:
        """Run ``sql`` handing its result to ``stream`` (exec/stream.py) batch by batch while the
        final pipeline runs; returns the statistics."""
        def body() -> dict[str, Any]:
            if stream.rows:  # run_guarded retries on a deep stack: never after rows went out
                raise HetdbError("the query failed after part of its result was streamed")
            t0 = time.perf_counter()
            entry, cached = self.planned(sql)
            stream.open(to_arrow_table(self.backend, None, entry.plan.fields, self.options.timezone).schema)
            plan_seconds = time.perf_counter() - t0
            _, stats, _ = self.run_plan(entry.plan, entry.physical, reuse=self._reusable(sql, entry), stream=stream,
                                        readers=entry.readers)
            stats.update(plan_seconds=plan_seconds, plan_cached=cached, rows=stream.rows)
            return stats

        return run_guarded("query", body, deep=isinstance(sql, str) and len(sql) > DEEP_SQL_CHARS)

    def _reusable(self, sql: str, entry: CachedPlan) -> bool:
        """Whether state derived from ``entry``'s physical plan may be kept for its next runs."""
        return self._plans.get(sql) is entry and bool(self.options.reuse_fused_state)

    def run_plan(self, plan: L.Output, physical: PhysicalPlan | None = None, reuse: bool = False,
                 stream: Any = None, readers: tuple = ()) -> tuple[pa.Table, dict[str, Any], PhysicalPlan]:
        """Run a logical plan (bound and optimized; ``physical`` is its physical plan when already
        made); returns (result, stats, physical plan with per-operator statistics in
        ``stats['operators']``). ``reuse``: ``physical`` comes from the plan cache, so state derived
        from it (fused pipelines' dense tables) may be kept for its next runs. ``readers``: (table,
        TableReader) pairs known current (the plan cache's), which the run reads without looking
        the tables up again."""
        run = functools.partial(self._run, stream=stream, readers=readers)
        if self.device is None:
            return run(plan, physical, reuse)
        return self._run_on_device(run, plan, physical, reuse, stream)

    def _run_on_device(self, run: Any, plan: L.Output, physical: PhysicalPlan | None, reuse: bool,
                       stream: Any) -> tuple[pa.Table, dict[str, Any], PhysicalPlan]:
        from hetdb.exec.device import is_device_oom

        host_only = self._host_only(plan)
        if host_only:
            return self._run_on_cpu(plan, physical, host_only, oom=False, stream=stream)
        try:
            return run(plan, physical, reuse)
        except GpuWideValueError:
            if stream is not None and stream.rows:
                raise
            # the GPU kernels hold 64-bit values; the CPU path holds HUGEINT / DECIMAL(38) exactly
            return self._run_on_cpu(plan, physical, "a value needs more than 64 bits",
                                    oom=False, stream=stream)
        except Exception as e:
            # a streamed result cannot be run again once part of it went out
            if not is_device_oom(e) or (stream is not None and stream.rows):
                raise
        # Out of device memory (hetdb's budget refused what nothing could spill, or CUDA itself ran
        # out): drop cached pages and run again with operators allowed a quarter of their share, so
        # joins and aggregations partition early and pages in flight find room.
        memory = self.device.memory
        limit = memory.limit
        self.device.cache.clear()
        self.device.luts.clear()
        self.device.pool.free_all_blocks()
        memory.limit = limit // 4
        try:
            table, stats, physical = run(plan, physical, reuse)
        except Exception as e:
            if not is_device_oom(e) or (stream is not None and stream.rows):
                raise
            # still too little: the query runs on the CPU, said in its statistics and EXPLAIN ANALYZE
            return self._run_on_cpu(plan, physical, f"gpu_memory_limit too small ({e})", stream=stream)
        finally:
            memory.limit = limit
        stats["gpu_oom_retried"] = True
        return table, stats, physical

    def _run_on_cpu(self, plan: L.Output, physical: PhysicalPlan | None, reason: str, oom: bool = True,
                    stream: Any = None                    ) -> tuple[pa.Table, dict[str, Any], PhysicalPlan]:
        """Run a query the GPU could not (its budget, or a value past 64 bits) on the CPU backend (same
        physical plan); ``reason`` is what EXPLAIN ANALYZE and the statistics say."""
        if self._cpu_engine is None:
            from hetdb.backend.cpu import CpuBackend

            self._cpu_engine = QueryEngine(self.db, CpuBackend(), self.options)
        table, stats, physical = self._cpu_engine._run(plan, physical, stream=stream)
        stats.update({"peak_gpu_bytes": 0, "pages_cached": 0, "gpu_cache_bytes": self.device.cache.used_bytes,
                      "gpu_leaked_bytes": 0, "gpu_reserved_after": self.device.memory.used,
                      "gpu_over_budget_bytes": 0, "gpu_oom_retried": oom,
                      "cpu_fallbacks": {f"query on the CPU: {reason}": 1}})
        return table, stats, physical

    def _host_only(self, plan: L.Output) -> str:
        """_host_only(plan), once per plan object (a cached plan runs many times; the walk over
        every expression of the plan costs a hot query a good part of a millisecond)."""
        hit = _HOST_ONLY.get(id(plan))
        if hit is None or hit[0] is not plan:
            hit = (plan, _host_only(plan))
            if len(_HOST_ONLY) >= PLAN_CACHE_ENTRIES:
                _HOST_ONLY.clear()
            _HOST_ONLY[id(plan)] = hit
        return hit[1]

    def _run(self, plan: L.Output, physical: PhysicalPlan | None, reuse: bool = False, stream: Any = None,
             readers: tuple = ()) -> tuple[pa.Table, dict[str, Any], PhysicalPlan]:
        t0 = time.perf_counter()
        if physical is None:
            physical = self.physical_plan(plan)
        reuse_key = physical  # (fused state is kept per cached physical plan, streamed or not)
        if stream is not None:
            from hetdb.exec.stream import streaming_plan

            physical = streaming_plan(physical, stream, plan.fields)
        if self._spill_root is None or self._spill_root[0] is not self.options:  # (SET temp_directory)
            self._spill_root = (self.options, self.options.spill_dir or os.path.join(
                getattr(self.db, "path", None) or tempfile.gettempdir(), ".spill"))
        # (a name per query: a random token per process, its id and a count; no random bytes per query)
        spill_dir = f"{self._spill_root[1]}{os.sep}q-{_SPILL_TOKEN}-{os.getpid()}-{next(_SPILL_COUNTER)}"
        device = self.device
        memory = device.memory if device is not None else self.memory
        options = self.options
        db = QuerySnapshot(self.db, readers)
        decoded = None
        if device is not None and not isinstance(options.gpu_compressed_cache, bool):
            options = self._options_with(device.keep_compressed(options.gpu_compressed_cache, db))
            if options.gpu_compressed_cache and options.gpu_decoded_placement:
                from hetdb.exec.device_placement import place_decoded

                decoded = place_decoded(device, db, physical)
        ctx = ExecContext(db, self.backend, options, memory, spill_dir, device=device,
                          host_memory=self.memory)
        ctx.physical = physical  # (co-processing's CPU side reads its join builds' scans: coprocess_setup)
        if decoded:
            ctx.decoded_columns = decoded
        ctx.host_cache = self.host_cache
        peak_before = self.memory.peak
        self.memory._peak = self.memory.used
        # GPU pipelines run with one worker: kernels of one device serialise anyway, and the page
        # streamer delivers row groups in order
        threads = 1 if device is not None else self.threads
        if device is None:
            ctx.pool, ctx.threads = self._pool, threads
        snapshot = device.snapshot() if device is not None else None
        leaked = 0
        reusing = reuse
        on_host: set[int] = set()
        hot = None  # the exec/hot_replay.HotRecord this run replays
        replayed = 0  # fused pipelines it replayed
        try:
            skipped: set[int] = set()
            if reusing:
                if device is not None and stream is None and options.gpu_hot_replay:
                    from hetdb.exec import hot_replay

                    hot = self._hot.get(id(reuse_key))
                    if not hot_replay.usable(hot, reuse_key, options, device) \
                            or not hot_replay.take_stored(ctx, self.fused_states, hot):
                        hot = None
                if hot is not None:
                    skipped = hot.skipped
                else:
                    from hetdb.exec.fusion_reuse import prepare_reuse

                    skipped = prepare_reuse(ctx, self.fused_states, physical, reuse_key)
            if device is not None and hot is None:  # (a replayed run's last full run started none)
                from hetdb.exec.early_scan import start_early_scans

                start_early_scans(ctx, physical, skipped)
            tail, sinks = self._tail_of(physical) if self.tail_backend is not None else (frozenset(), frozenset())
            if tail:
                ctx.tail_backend, ctx.host_sinks = self.tail_backend, sinks
            host_ctx = None
            for i, pipe in enumerate(physical.pipelines):
                self.live = {"stage": "running", "pipeline": i + 1, "pipelines": len(physical.pipelines),
                             "ctx": ctx, "source": pipe.source}
                if pipe.pid in skipped:
                    continue
                if hot is not None and pipe.pid in hot.steps \
                        and hot_replay.replay_fused_step(ctx, pipe, hot.steps[pipe.pid]):
                    replayed += 1
                    continue
                if hot is not None and pipe.pid in ctx.__dict__.get("hot_done", ()):
                    on_host.add(pipe.pid)  # (a replay made the result: exec/hot_tail.py)
                    continue
                if pipe.pid in tail and self._place_on_host(ctx, pipe, on_host):
                    if host_ctx is None:  # (the one a fused aggregation handed its groups over in, if any)
                        host_ctx = ctx.__dict__.get("host_context") or self._host_context(ctx, spill_dir)
                    if not run_small(host_ctx, pipe, hot is None):  # (exec/small_tail.py)
                        run_pipeline(host_ctx, pipe, None, 1)
                    on_host.add(pipe.pid)
                    continue
                run_pipeline(ctx, pipe, self._pool, threads)
            table = ctx.__dict__.get("hot_table")
            if table is None:
                backend = self.tail_backend if physical.result_pipeline in on_host else self.backend
                batches = [loaded(backend, b) for b in ctx.results[physical.result_pipeline]]
                batch = concat_batches(backend, batches) if batches else None
                table = to_arrow_table(backend, batch, plan.fields, self.options.timezone)
                batches = batch = None
                if hot is not None:
                    hot_replay.check_tail(ctx, plan.fields, self.options.timezone, table)
            if reusing and hot is None and device is not None and stream is None and options.gpu_hot_replay:
                self._note_hot(ctx, reuse_key, options, skipped)
        except BaseException as e:
            # frames of the traceback would keep device arrays alive past the leak check below
            traceback.clear_frames(e.__traceback__)
            raise
        finally:
            self.live = {}
            for fn in reversed(ctx.cleanup):
                fn()
            # the closers (and the host tail's context) refer to ctx: cycles that held the query's
            # scans, streamers and their device blocks until a collection
            ctx.cleanup.clear()
            ctx.__dict__.pop("host_context", None)
            deactivate(ctx)
            ctx.results.clear()
            if reusing:
                from hetdb.exec.fusion_reuse import release_reuse

                release_reuse(ctx)
            if spill_made(spill_dir):  # (nothing on disk unless an operator spilled there)
                shutil.rmtree(spill_dir, ignore_errors=True)
            if device is not None:
                ctx.evaluator = None
                ctx.dict_cache.clear()
                leaked = self.last_gpu_leak = device.leaked_bytes(snapshot)
        peak = self.memory.peak
        self.memory._peak = max(peak_before, peak)
        stats = query_stats(ctx, physical, table, time.perf_counter() - t0, peak, len(on_host), replayed, leaked)
        return table, stats, physical

    def _note_hot(self, ctx: ExecContext, physical: PhysicalPlan, options: Any, skipped: set[int]) -> None:
        """Keep (or drop) the hot-replay record of ``physical`` after a full run (exec/hot_replay.py)."""
        from hetdb.exec.hot_replay import RECORDS, make_record

        record = make_record(ctx, physical, options, skipped)
        if record is None:
            self._hot.pop(id(physical), None)
            return
        if len(self._hot) >= RECORDS:
            self._hot.pop(next(iter(self._hot)))
        self._hot[id(physical)] = record

    def _tail_of(self, physical: PhysicalPlan) -> tuple[frozenset[int], frozenset[int]]:
        """(host_tail, host_sinks) of ``physical``, once per plan object (a cached plan runs many times)."""
        hit = self._tail_memo.get(id(physical))
        if hit is None or hit[0] is not physical:
            tail = frozenset(host_tail(physical))
            hit = (physical, tail, host_sinks(physical, tail) if tail else frozenset())
            if len(self._tail_memo) >= PLAN_CACHE_ENTRIES:
                self._tail_memo.clear()
            self._tail_memo[id(physical)] = hit
        return hit[1], hit[2]

    def _options_with(self, compressed: bool) -> Any:
        """The connection's options with ``gpu_compressed_cache`` decided (one object per answer:
        dataclasses.replace of every option, per query, cost a hot query tens of microseconds)."""
        memo = _RESOLVED_OPTIONS  # (the process's: a fresh connection per query would replace them every query)
        key = (id(self.options), compressed)
        got = memo.get(key)
        if got is None or got[0] is not self.options:
            if len(memo) >= PLAN_CACHE_ENTRIES:
                memo.clear()
            got = memo[key] = (self.options, dataclasses.replace(self.options, gpu_compressed_cache=compressed))
        return got[1]

    def _place_on_host(self, ctx: ExecContext, pipe: Any, on_host: set[int]) -> bool:
        """Whether ``pipe`` (of the host tail) runs on the host, its inputs moved to where it runs:
        it does when its inputs are small or already there."""
        inputs = _source_results(pipe)
        # results there already: of host pipelines, and a fused aggregation's groups made there
        here = on_host | (ctx.made_on_host & set(inputs))
        rows = sum(b.num_rows for pid in inputs for b in ctx.results[pid])
        if rows > HOST_RESULT_ROWS and not all(pid in here for pid in inputs):
            for pid in inputs:  # a large input: back to the device with the others
                if pid in here:
                    ctx.results[pid] = [batch_to_device(self.backend, loaded(self.tail_backend, b), ctx.dict_cache)
                                        for b in ctx.results[pid]]
                    on_host.discard(pid)
                    ctx.made_on_host.discard(pid)
            return False
        for pid in inputs:
            if pid not in here:
                cache = self.host_dictionaries  # one host copy per device dictionary, while it lives
                ctx.results[pid] = [batch_to_host(self.backend, b, cache)
                                    for b in (loaded(self.backend, r) for r in ctx.results[pid])]
                on_host.add(pid)
        ctx.stat(pipe.sink.op_id).fused = host_note(rows)
        return True

    def _host_context(self, ctx: ExecContext, spill_dir: str) -> ExecContext:
        """A context running pipelines on the host backend, sharing the query's results and stats."""
        host = ExecContext(ctx.db, self.tail_backend, self.options, self.memory, spill_dir,
                           device=None, host_memory=self.memory)
        host.stats, host.results, host.cleanup = ctx.stats, ctx.results, ctx.cleanup
        return host

    def explain(self, sql: str, analyze: bool = False) -> str:
        return run_guarded("query", lambda: self._explain(sql, analyze), deep=isinstance(sql, str) and len(sql) > DEEP_SQL_CHARS)

    def _explain(self, sql: str, analyze: bool) -> str:
        t0 = time.perf_counter()
        entry, cached = self.planned(sql)
        plan_ms = (time.perf_counter() - t0) * 1000
        if not analyze:
            return entry.physical.format()
        table, stats, physical = self.run_plan(entry.plan, entry.physical, reuse=self._reusable(sql, entry),
                                               readers=entry.readers)
        text = physical.format(stats["operators"])
        planning = "plan from the plan cache" if cached else "planned"
        total = (f"{text}\nPlanning: {planning} in {plan_ms:.1f} ms\n"
                 f"Total: {table.num_rows:,} rows in {stats['exec_seconds'] * 1000:.1f} ms; "
                 f"bytes read={stats['bytes_read']:,} pages read={stats['pages_read']:,} "
                 f"pages skipped={stats['pages_skipped']:,} peak host memory={stats['peak_host_bytes']:,}")
        routes = scan_routes(stats["operators"])
        if routes:
            total += f"\nPages by path: {routes.format()}"
        if stats["host_pipelines"]:
            total += f"\nHost: {stats['host_pipelines']} small-result pipeline(s) placed on the host"
        if self.device is not None:
            total += (f"\nGPU: pages from device cache={stats['pages_cached']:,} "
                      f"bytes host->device={stats['bytes_host_to_device']:,} "
                      f"peak device memory={stats['peak_gpu_bytes']:,} "
                      f"spilled partitions={stats['spilled_partitions']:,}")
            if stats.get("gpu_oom_retried"):
                total += ("\nGPU memory: gpu_memory_limit refused what nothing could spill; the query ran again "
                          "with the device page cache emptied and operators at a quarter of their share")
            if stats["cpu_fallbacks"]:
                total += "\nCPU fallbacks: " + ", ".join(f"{w} x{n}" for w, n in sorted(stats["cpu_fallbacks"].items()))
        return total

    def close(self) -> None:
        if self._cpu_engine is not None:
            self._cpu_engine.close()
            self._cpu_engine = None
        if self.device is not None:
            self.device.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _host_only(node: L.Node) -> str:
    """Why the plan runs on the CPU on a GPU connection ("" where it need not): LIST values live in
    host object arrays and TIME values have host functions only (plan/host_values.py); stored
    INTERVAL columns (16-byte values) are read by the host scan only (the device scan and pipeline
    compiler hold values of at most 8 bytes)."""
    kind = host_kind(node)
    if kind:
        return f"{kind} values are computed on the host"
    if isinstance(node, L.Scan) and any(f.dtype.kind == "interval" for f in node.schema):
        return "stored INTERVAL columns are read on the host"
    return next((why for why in map(_host_only, node.inputs()) if why), "")
