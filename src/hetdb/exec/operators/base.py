"""Operator protocols, the execution context and per-operator statistics.

A pipeline is ``source -> operators... -> sink``. Sources split their input into morsels (a row group,
a slice of a previous result); workers pull morsels, push the batches through the streaming
operators and into the sink. Operator objects never change while a query runs: everything mutable is
in the state objects returned by ``init_global`` (one per pipeline) and ``init_local`` (one per
worker).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from hetdb.column import Batch
from hetdb.exec.memory import MemoryManager


@dataclass
class OpStats:
    """What EXPLAIN ANALYZE shows for one operator."""

    rows_in: int = 0
    rows_out: int = 0
    seconds: float = 0.0
    bytes_read: int = 0
    pages_read: int = 0
    pages_skipped: int = 0
    spilled_partitions: int = 0
    pages_cached: int = 0          # pages served from the device page cache (GPU scans)
    bytes_host_to_device: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)  # host (CPU) steps on the GPU -> count
    files_read: int = 0            # scans of files in place: files and Parquet row groups
    files_skipped: int = 0
    row_groups_read: int = 0
    row_groups_skipped: int = 0
    fused: str = ""                # GPU: "fused" or why the pipeline ran operator at a time
    routes: Any = None             # scans: cache.router.RouteCounts (pages/bytes by path, cache decisions)


class ExecContext:
    """Everything a running query shares: backend, options, memory, statistics, results of finished
    pipelines, and the evaluator cache."""

    def __init__(self, db, backend, options, memory: MemoryManager, spill_dir: str,
                 device: Any = None, host_memory: MemoryManager | None = None):
        from hetdb.exec.expressions import ExprEvaluator

        self.db = db
        self.backend = backend
        self.options = options
        self.memory = memory                 # operator state: host memory, or device memory on the GPU
        self.host_memory = host_memory if host_memory is not None else memory
        self.spill_dir = spill_dir
        self.device = device                 # exec.device.DeviceResources on the GPU, else None
        self.evaluator = ExprEvaluator(backend)
        self.stats: dict[int, OpStats] = {}
        self.results: dict[int, Any] = {}   # pipeline id -> sink result
        self.dict_cache: dict = {}          # host dictionary -> device dictionary
        self.cleanup: list = []             # callables run when the query ends
        self.early_scans: dict = {}         # GPU: scan op id -> a scan started early (exec/early_scan.py)
        # GPU: the backend of the host tail (small results), and the pipelines every consumer of
        # which runs there: a fused aggregation among them hands its groups over on the host
        self.tail_backend: Any = None
        self.host_sinks: frozenset[int] = frozenset()
        self.made_on_host: set[int] = set()  # of those, the pipelines whose result is host batches
        self._lock = threading.Lock()
        self._local = threading.local()

    # called with the index by set_morsel while a streamed result's pipeline runs (exec/stream.py)
    on_morsel: Any = None
    # the connection's worker pool and thread count (CPU), for operators' own parallel phases after
    # a pipeline's workers (a final aggregation merge)
    pool: Any = None
    threads: int = 1
    # GPU, pages kept compressed: per table the columns the device cache keeps decoded all the same
    # (exec/device_placement.py); their scans decode them on arrival
    decoded_columns: Mapping[str, frozenset[str]] = MappingProxyType({})
    # the query's physical plan (exec/engine.py; None in contexts of their own)
    physical: Any = None

    def set_morsel(self, index: int) -> None:
        """Called by the driver before a morsel's batches are pushed (orders collected results)."""
        self._local.morsel = index
        self._local.sub = 0
        if self.on_morsel is not None:
            self.on_morsel(index)

    def current_morsel_key(self) -> tuple[int, int]:
        sub = getattr(self._local, "sub", 0)
        self._local.sub = sub + 1
        return (getattr(self._local, "morsel", 0), sub)

    def stat(self, op_id: int) -> OpStats:
        s = self.stats.get(op_id)
        if s is None:
            with self._lock:
                s = self.stats.setdefault(op_id, OpStats())
        return s

    def add(self, op_id: int, **deltas: float) -> None:
        s = self.stat(op_id)
        with self._lock:
            for k, v in deltas.items():
                setattr(s, k, getattr(s, k) + v)

    def add_routes(self, op_id: int, counts: Any) -> None:
        """Add a scan's pages/bytes by path and cache decisions (a cache.router.RouteCounts)."""
        if not counts:
            return
        from hetdb.cache.router import RouteCounts

        s = self.stat(op_id)
        with self._lock:
            if s.routes is None:
                s.routes = RouteCounts()
            s.routes.merge(counts)

    @property
    def batch_rows(self) -> int | None:
        return self.options.batch_rows

    def spill_file(self, dtypes: dict) -> Any:
        """A new spill partition: a file under ``spill_dir`` on the CPU, pinned host memory on the GPU
        (partitions come back to the device at PCIe speed, not disk speed)."""
        if self.device is not None:
            from hetdb.exec.device import PinnedSpill

            return PinnedSpill(self.host_memory, dtypes)
        from hetdb.exec.hostutil import SpillFile

        return SpillFile(self.spill_dir, dtypes)

    def note_fallback(self, what: str) -> None:
        """Record that a step of the running operator ran on the host (GPU only; shown by EXPLAIN
        ANALYZE, so a CPU fallback is never silent)."""
        if self.device is None:
            return
        op = getattr(self._local, "op", None)
        s = self.stat(-1 if op is None else op)
        with self._lock:
            s.fallbacks[what] = s.fallbacks.get(what, 0) + 1

    def enter_op(self, op_id: int) -> Any:
        from hetdb.exec.hostutil import activate

        activate(self)
        prev = getattr(self._local, "op", None)
        self._local.op = op_id
        return prev

    def exit_op(self, prev: Any) -> None:
        self._local.op = prev


def in_morsel_order(keyed: list[tuple[Any, Batch]]) -> list[Batch]:
    """Batches collected as (morsel key, batch) by several workers, in morsel order: the result does
    not depend on thread timing (ties of a later sort keep scan order)."""
    return [b for _, b in sorted(keyed, key=lambda kb: kb[0])]


class Timer:
    def __init__(self, ctx: ExecContext, op_id: int):
        self.ctx, self.op_id = ctx, op_id

    def __enter__(self) -> Timer:
        self.t0 = time.perf_counter()
        self._prev = self.ctx.enter_op(self.op_id)  # host fallbacks inside are charged to this operator
        return self

    def __exit__(self, *exc) -> None:
        self.ctx.exit_op(self._prev)
        self.ctx.add(self.op_id, seconds=time.perf_counter() - self.t0)


@dataclass(frozen=True)
class PhysicalOp:
    """Common base: ``op_id`` is the operator's position in the physical plan (stable per plan)."""

    op_id: int = field(default=0, kw_only=True)

    def describe(self) -> str:
        raise NotImplementedError

    def init_global(self, ctx: ExecContext) -> Any:
        return None

    def init_local(self, ctx: ExecContext, gstate: Any) -> Any:
        return None


class Source(PhysicalOp):
    ordered = False  # morsels must be processed in order by one worker (sorted inputs)

    def morsels(self, ctx: ExecContext, gstate: Any) -> list:
        raise NotImplementedError

    def read(self, ctx: ExecContext, morsel: Any, gstate: Any) -> list[Batch]:
        raise NotImplementedError


class Operator(PhysicalOp):
    def execute(self, ctx: ExecContext, batch: Batch, gstate: Any, lstate: Any) -> list[Batch]:
        raise NotImplementedError

    def finalize(self, ctx: ExecContext, gstate: Any) -> list[Batch]:
        """Batches this operator emits after every worker finished (e.g. unmatched build rows)."""
        return []


class Sink(PhysicalOp):
    def sink(self, ctx: ExecContext, batch: Batch, gstate: Any, lstate: Any) -> None:
        raise NotImplementedError

    def combine(self, ctx: ExecContext, gstate: Any, lstate: Any) -> None:
        """Fold one worker's local state into the global state (called once per worker)."""

    def finalize(self, ctx: ExecContext, gstate: Any) -> Any:
        """The pipeline's result (kept in ``ctx.results``)."""
        raise NotImplementedError
