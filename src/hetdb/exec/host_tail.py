"""The host tail of a GPU query: the pipelines that read only earlier pipelines' small results run on
the host's CPU backend (a placement, not a fallback: a few hundred rows are copied to the host faster
than the GPU launches the kernels sorting them), and the pipelines whose results only they read."""

from __future__ import annotations

from typing import Any

from hetdb.exec.operators.basic import ResultSource, UnionSource
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild
from hetdb.exec.physical import PhysicalPlan


def host_tail(physical: PhysicalPlan) -> set[int]:
    """Pipelines that may run on the host: they read only earlier pipelines' results (no table scan,
    no probe into a device hash table) and feed only pipelines of the same kind."""
    consumers: dict[int, list[int]] = {p.pid: [] for p in physical.pipelines}
    for p in physical.pipelines:
        for d in p.deps:
            consumers[d].append(p.pid)
    tail: set[int] = set()
    for p in reversed(physical.pipelines):
        if isinstance(p.source, (ResultSource, UnionSource)) and not isinstance(p.sink, HashBuild) \
                and not any(isinstance(op, HashProbe) for op in p.ops) \
                and all(c in tail for c in consumers[p.pid]):
            tail.add(p.pid)
    return tail


def host_sinks(physical: PhysicalPlan, tail: set[int]) -> frozenset[int]:
    """Pipelines outside ``tail`` whose every consumer is in it: a small result of theirs is taken to
    the host anyway, so it may be made there (exec/fusion_run.py: a fused aggregation's groups)."""
    consumers: dict[int, list[int]] = {p.pid: [] for p in physical.pipelines}
    for p in physical.pipelines:
        for d in p.deps:
            consumers[d].append(p.pid)
    return frozenset(pid for pid, cs in consumers.items()
                     if cs and pid not in tail and all(c in tail for c in cs))


def host_note(rows: int) -> str:
    """The EXPLAIN note of a pipeline placed on the host with ``rows`` input rows."""
    return f"on the host: {rows:,} rows in (a small result is placed there; not a fallback)"


def _tail_backend() -> Any:
    """The CPU backend with single-threaded kernels: waking a thread pool for a parallel kernel costs
    more than the whole work on a few thousand rows (measured: ~0.7 ms per sort with 16 threads)."""
    from hetdb.backend.cpu import CpuBackend

    class TailBackend(CpuBackend):
        def set_kernel_threads(self, n: int | None) -> None:
            super().set_kernel_threads(1)

    return TailBackend()


def _source_results(pipe: Any) -> list[int]:
    src = pipe.source
    return [src.pipeline_id] if isinstance(src, ResultSource) else list(src.pipeline_ids)
