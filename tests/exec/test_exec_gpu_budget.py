"""CPU-runnable parts of the GPU memory-budget policy: a refusal by gpu_memory_limit (what nothing
could spill) is retried with the device page cache emptied and the operators' share cut to a
quarter, then run on the CPU with the fallback recorded; other errors pass through untouched. The
device is a stand-in (no CuPy); the CPU fallback runs the real query."""

from __future__ import annotations

import pytest

from hetdb.backend.cpu import CpuBackend
from hetdb.cache import DevicePageCache, PageKey
from hetdb.config import Options
from hetdb.errors import GpuOutOfMemoryError, HetdbError, OutOfMemoryError
from hetdb.exec.device import DeviceMemoryManager, _budget_class, is_device_oom
from hetdb.exec.engine import QueryEngine
from hetdb.exec.lookup_tables import LookupTables


class _Pool:
    def free_all_blocks(self) -> None:
        pass


class _Device:
    """What run_plan's retry path touches of DeviceResources."""

    def __init__(self, limit: int) -> None:
        self.budget = _budget_class()(limit)
        self.cache = DevicePageCache(self.budget, share=0.5)
        self.memory = DeviceMemoryManager(self.budget, self.cache)
        self.pool = _Pool()
        self.luts = LookupTables()

    def close(self) -> None:
        self.cache.clear()


def _engine(db, fails: int, error=GpuOutOfMemoryError):
    engine = QueryEngine(db, CpuBackend(), Options(threads=1))
    engine.device = _Device(16 << 20)
    assert engine.device.cache.put(PageKey("fact", 1, "k", 0), object(), 1 << 20)
    seen = []
    real_run = engine._run

    def run(plan, physical, reuse=False, **kwargs):
        seen.append((engine.device.memory.limit, len(engine.device.cache)))
        if len(seen) <= fails:
            raise error("streaming page 0 of column 'k' of table 'fact' needs 312.5 KiB of GPU memory")
        device, engine.device = engine.device, None  # the run that succeeds: on the CPU here
        try:
            return real_run(plan, physical, reuse, **kwargs)
        finally:
            engine.device = device

    engine._run = run
    return engine, seen


SQL = "select count(*), sum(k) from fact"


def test_budget_refusal_is_a_device_oom_and_reserve_raises_it() -> None:
    device = _Device(1000)
    assert device.memory.try_reserve(500)
    with pytest.raises(GpuOutOfMemoryError, match="gpu_memory_limit"):
        device.memory.reserve(100, "hash table")
    with pytest.raises(GpuOutOfMemoryError):
        device.budget.reserve(600, "streaming page")
    assert is_device_oom(GpuOutOfMemoryError("x")) and not is_device_oom(OutOfMemoryError("host"))
    device.memory.release(500)
    assert device.budget.used_bytes == 0


def test_retry_empties_the_cache_and_shrinks_the_operator_share(db) -> None:
    engine, seen = _engine(db, fails=1)
    try:
        entry, _ = engine.planned(SQL)
        table, stats, _ = engine.run_plan(entry.plan, entry.physical)
    finally:
        engine.close()
    share = (16 << 20) // 2
    assert seen == [(share, 1), (share // 4, 0)]
    assert stats["gpu_oom_retried"] and "cpu_fallbacks" not in stats
    assert table.column(0).to_pylist() == [3000] and table.column(1).to_pylist() == [sum(range(3000))]
    assert engine.device.memory.limit == share  # restored after the retry


def test_second_refusal_runs_the_query_on_the_cpu(db) -> None:
    engine, seen = _engine(db, fails=4)
    try:
        entry, _ = engine.planned(SQL)
        table, stats, _ = engine.run_plan(entry.plan, entry.physical)
        text = engine.explain(SQL, analyze=True)  # fails twice again: the plan is cached
    finally:
        engine.close()
    assert len(seen) == 4
    assert table.column(0).to_pylist() == [3000] and table.column(1).to_pylist() == [sum(range(3000))]
    (what,) = stats["cpu_fallbacks"]
    assert what.startswith("query on the CPU") and "312.5 KiB" in what
    assert "CPU fallbacks: query on the CPU" in text


def test_other_errors_are_not_retried(db) -> None:
    engine, seen = _engine(db, fails=1, error=HetdbError)
    try:
        entry, _ = engine.planned(SQL)
        with pytest.raises(HetdbError, match="streaming page"):
            engine.run_plan(entry.plan, entry.physical)
    finally:
        engine.close()
    assert len(seen) == 1
