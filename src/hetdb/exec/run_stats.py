"""A finished query's statistics (``Result.stats``): totals over its operators' statistics, its
scans' pages by path, and on the GPU how each pipeline ran."""

from __future__ import annotations

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
    """The statistics of a finished query (``Result.stats``) from its context's operator statistics."""
    ops = ctx.stats
    bytes_read = pages_read = pages_skipped = h2d = spilled = cached = 0
    for s in ops.values():  # (one pass: a hot GPU query is a few milliseconds of Python)
        bytes_read += s.bytes_read
        pages_read += s.pages_read
        pages_skipped += s.pages_skipped
        h2d += s.bytes_host_to_device
        spilled += s.spilled_partitions
        cached += s.pages_cached
    stats = {
        "plan_seconds": 0.0,
        "exec_seconds": exec_seconds,
        "rows": table.num_rows,
        "bytes_read": bytes_read,
        "pages_read": pages_read,
        "pages_skipped": pages_skipped,
        "peak_host_bytes": peak_host,
        "bytes_host_to_device": h2d,
        "peak_gpu_bytes": None,
        "spilled_partitions": spilled,
        "host_pipelines": host_pipelines,
        "hot_replayed": replayed,  # fused pipelines run as their last full run's launch (exec/hot_replay.py)
        "routes": scan_routes(ops).as_dict(),
        "operators": ops,
    }
    device = ctx.device
    if device is not None:
        fallbacks: dict[str, int] = {}
        for s in ops.values():
            for what, n in s.fallbacks.items():
                fallbacks[what] = fallbacks.get(what, 0) + n
        early = ctx.early_scans
        stats.update({
            "peak_gpu_bytes": device.budget.peak_bytes,
            "pages_cached": cached,
            "gpu_cache_bytes": device.cache.used_bytes,
            "gpu_leaked_bytes": leaked,
            "gpu_reserved_after": device.memory.used,
            "gpu_over_budget_bytes": device.memory.peak_over,
            "cpu_fallbacks": fallbacks,
            "gpu_pipelines": pipeline_modes(physical, ops),
            # scans started before their pipeline (exec/early_scan.py): how many, how many their
            # pipeline took over, the budget bytes their first deliveries held when queued
            "early_scans": {"started": len(early), "taken": sum(1 for e in early.values() if e.adopted),
                            "primed_bytes": sum(e.primed_bytes for e in early.values())},
        })
    return stats
