"""CPU-runnable parts of GPU execution: operator reservations against the device budget (evicting
cached pages first, forced state counted over the limit), spill partitions and host-step recording on
the CPU backend, and EXPLAIN ANALYZE's rendering of fallbacks and fusion."""

from __future__ import annotations

from hetdb.backend.cpu import CpuBackend
from hetdb.cache import DevicePageCache, PageKey
from hetdb.config import Options
from hetdb.exec.device import DeviceMemoryManager, _budget_class
from hetdb.exec.hostutil import SpillFile, activate, note_host_step
from hetdb.exec.memory import MemoryManager
from hetdb.exec.operators.base import ExecContext, OpStats
from hetdb.exec.physical import _format_stats


def _manager(limit: int = 1000, cache_share: float = 0.5):
    budget = _budget_class()(limit)
    cache = DevicePageCache(budget, share=cache_share)
    return budget, cache, DeviceMemoryManager(budget, cache, share=0.5)


def test_operator_share_and_release() -> None:
    budget, _, mem = _manager()
    assert mem.try_reserve(400)
    assert not mem.try_reserve(200), "operators may hold only their share of the budget"
    assert budget.used_bytes == 400
    mem.release(400)
    assert mem.used == 0 and budget.used_bytes == 0
    assert mem.peak == 400


def test_refused_reservation_evicts_cached_pages_first() -> None:
    budget, cache, mem = _manager(cache_share=0.8)
    assert cache.put(PageKey("t", 1, "c", 0), object(), 700)
    assert cache.put(PageKey("t", 1, "c", 1), object(), 50)
    assert mem.try_reserve(300)  # 250 free: room is made by evicting the least recently used page
    assert PageKey("t", 1, "c", 0) not in cache and PageKey("t", 1, "c", 1) in cache
    assert budget.used_bytes == 350
    mem.release(300)
    assert budget.used_bytes == cache.used_bytes == 50


def test_forced_state_beyond_the_share_counts_over_the_limit() -> None:
    budget, _, mem = _manager()
    mem.force_reserve(450)
    mem.force_reserve(300)  # beyond the operators' 500: kept, but not taken from the budget
    assert mem.used == 750 and mem.over_bytes == 300 and mem.peak_over == 300
    assert budget.used_bytes == 450
    mem.release(750)
    assert mem.used == 0 and mem.over_bytes == 0 and budget.used_bytes == 0
    mem.reset_peak()
    assert mem.peak == 0 and mem.peak_over == 0


def test_cpu_context_spills_to_files_and_records_no_fallbacks(tmp_path) -> None:
    ctx = ExecContext(None, CpuBackend(), Options(), MemoryManager(None), str(tmp_path))
    spill = ctx.spill_file({})
    assert isinstance(spill, SpillFile)
    activate(ctx)
    prev = ctx.enter_op(3)
    note_host_step(ctx.backend, "anything")
    ctx.exit_op(prev)
    assert all(not s.fallbacks for s in ctx.stats.values())


def test_gpu_context_records_fallbacks_per_operator(tmp_path) -> None:
    class FakeGpu:
        name = "gpu"

    ctx = ExecContext(None, CpuBackend(), Options(), MemoryManager(None), str(tmp_path), device=object())
    prev = ctx.enter_op(5)
    note_host_step(FakeGpu(), "string function (pyarrow)")
    note_host_step(FakeGpu(), "string function (pyarrow)")
    ctx.exit_op(prev)
    assert ctx.stats[5].fallbacks == {"string function (pyarrow)": 2}
    text = _format_stats(ctx.stats[5])
    assert "CPU fallback: string function (pyarrow) x2" in text


def test_format_shows_fusion_and_device_traffic() -> None:
    s = OpStats(rows_in=10, rows_out=1, pages_cached=3, bytes_host_to_device=4096,
                fused="fused into one generated kernel")
    text = _format_stats(s)
    assert "fused into one generated kernel" in text
    assert "pages from device cache=3" in text and "bytes host->device=4,096" in text
