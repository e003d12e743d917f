"""A finished query's statistics (``Result.stats``): totals over its operators' statistics, its
scans' pages by path, and on the GPU how each pipeline ran."""

from __future__ import annotations

import time
from typing import Any

from hetdb.exec.operators.base import ExecContext
from hetdb.exec.route_stats import scan_routes


def pipeline_modes(physical: Any, ops: dict) -> dict[str, int]:
    """How the pipelines of a GPU query ran, from their sinks' notes: compiled by the pipeline
    compiler, dense-fused, on the host, or operator at a time (not run: skipped, e.g. reused)."""
    from hetdb.exec.compiled import COMPILED
    from hetdb.exec.kept_builds import KEPT, KEPT_INPUT

    modes = {"compiled": 0, "dense_fused": 0, "host": 0, "operator_at_a_time": 0, "not_run": 0}
    for p in physical.pipelines:
        s = ops.get(p.sink.op_id)
        note = s.fused if s is not None else ""
        # (exec/shared_results.py: reused; exec/kept_builds.py: kept from an earlier run, or only needed there)
        if s is None or note.startswith(("the result of pipeline", KEPT, KEPT_INPUT)):
            modes["not_run"] += 1
        elif note.startswith(COMPILED):
            modes["compiled"] += 1
        elif note.startswith(("fused into", "runs inside", "deferred", "not run")):
            modes["dense_fused"] += 1
        elif note.startswith("on the host"):
            modes["host"] += 1
        else:
            modes["operator_at_a_time"] += 1
    return modes


def query_stats(ctx: ExecContext, physical: Any, table: Any, exec_seconds: float, peak_host: int, host_pipelines: int,
                replayed: int, leaked: int) -> dict[str, Any]:
    """The statistics of a finished query (``Result.stats``) from its context's operator statistics:
    what the query's end knows at once, and the totals over its operators (bytes and pages read,
    pages by path, how each GPU pipeline ran) made at the first read of the dict (``QueryStats``:
    a hot GPU query's result is ready without them; the operators' statistics do not change once
    the query ended)."""
    ops = ctx.stats
    stats = {
        "plan_seconds": 0.0,
        "exec_seconds": exec_seconds,
        "rows": table.num_rows,
        "peak_host_bytes": peak_host,
        "peak_gpu_bytes": None,
        "host_pipelines": host_pipelines,
        "hot_replayed": replayed,  # fused pipelines run as their last full run's launch (exec/hot_replay.py)
        "operators": ops,
    }
    device = ctx.device
    if device is not None:
        early = ctx.early_scans
        stats.update({
            "peak_gpu_bytes": device.budget.peak_bytes,
            "gpu_cache_bytes": device.cache.used_bytes,
            "gpu_leaked_bytes": leaked,
            "gpu_reserved_after": device.memory.used,
            "gpu_over_budget_bytes": device.memory.peak_over,
            # scans started before their pipeline (exec/early_scan.py): how many, how many their
            # pipeline took over, the budget bytes their first deliveries held when queued
            "early_scans": {"started": len(early), "taken": sum(1 for e in early.values() if e.adopted),
                            "primed_bytes": sum(e.primed_bytes for e in early.values())},
        })
        cos = ctx.__dict__.get("coprocesses")
        if cos:  # co-processed scans (exec/coprocess.py): the CPU workers' morsels, ms from the query's start
            began = time.perf_counter() - exec_seconds
            stats["coprocess"] = [co.timeline(began) for co in cos]
    return QueryStats(stats, lambda: _totals(ops, physical, device is not None))


def _totals(ops: dict, physical: Any, gpu: bool) -> dict[str, Any]:
    """The statistics summed over a finished query's operators."""
    bytes_read = pages_read = pages_skipped = h2d = spilled = cached = 0
    for s in ops.values():  # (one pass)
        bytes_read += s.bytes_read
        pages_read += s.pages_read
        pages_skipped += s.pages_skipped
        h2d += s.bytes_host_to_device
        spilled += s.spilled_partitions
        cached += s.pages_cached
    out = {"bytes_read": bytes_read, "pages_read": pages_read, "pages_skipped": pages_skipped,
           "bytes_host_to_device": h2d, "spilled_partitions": spilled, "routes": scan_routes(ops).as_dict()}
    if gpu:
        fallbacks: dict[str, int] = {}
        for s in ops.values():
            for what, n in s.fallbacks.items():
                fallbacks[what] = fallbacks.get(what, 0) + n
        out.update({"pages_cached": cached, "cpu_fallbacks": fallbacks, "gpu_pipelines": pipeline_modes(physical, ops)})
    return out


class QueryStats(dict):
    """A query's statistics whose totals over its operators are made at the first read (any read:
    a key, ``get``, ``in``, iteration, ``len``, comparison, copy, pickling, JSON). Keys set before
    that read keep their value (the engine's ``plan_seconds``; a CPU re-run's ``cpu_fallbacks``)."""

    __slots__ = ("_pending",)

    def __init__(self, eager: dict, pending: Any) -> None:
        super().__init__(eager)
        self._pending = pending

    def _fill(self) -> None:
        pending = self._pending
        if pending is not None:
            self._pending = None
            for k, v in pending().items():
                if not dict.__contains__(self, k):
                    dict.__setitem__(self, k, v)

    def __getitem__(self, key: Any) -> Any:
        self._fill()
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._fill()
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        self._fill()
        return dict.__contains__(self, key)

    def __iter__(self):
        self._fill()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._fill()
        return dict.__len__(self)

    def __bool__(self) -> bool:  # (``stats or {}`` is no read)
        return dict.__len__(self) > 0 or self._pending is not None

    def __reversed__(self):
        self._fill()
        return dict.__reversed__(self)

    def keys(self):
        self._fill()
        return dict.keys(self)

    def values(self):
        self._fill()
        return dict.values(self)

    def items(self):
        self._fill()
        return dict.items(self)

    def copy(self) -> dict:
        self._fill()
        return dict(dict.items(self))

    def pop(self, key: Any, *default: Any) -> Any:
        self._fill()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple:
        self._fill()
        return dict.popitem(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self._fill()
        return dict.setdefault(self, key, default)

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, QueryStats):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __or__(self, other: Any) -> dict:
        self._fill()
        return dict(dict.items(self)) | other

    def __ror__(self, other: Any) -> dict:
        self._fill()
        return other | dict(dict.items(self))

    def __repr__(self) -> str:
        self._fill()
        return dict.__repr__(self)

    def __reduce__(self) -> tuple:
        self._fill()
        return (dict, (dict(dict.items(self)),))

    def __reduce_ex__(self, protocol: int) -> tuple:
        return self.__reduce__()
