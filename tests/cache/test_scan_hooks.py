"""The GPU scan's device-cache hooks (exec/operators/scan_device.py) on the CPU: the fused path's
look-up of resident pages and the warm fill's early refusal, with a DevicePageCache holding NumPy
columns (no GPU, no CuPy)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache
from hetdb.cache.pages import page_info, scan_device_bytes
from hetdb.column import Column
from hetdb.exec.operators.scan_device import DeviceScanState, resident_pages, warm_fill
from hetdb.types import DataType


class _CountingCache(DevicePageCache):
    """Counts the keys ``peek_many`` looked at."""

    looked = 0

    def peek_many(self, keys):
        def counted():
            for key in keys:
                self.looked += 1
                yield key

        return super().peek_many(counted())


def _ctx(cache, host_tier=None):
    added: list = []
    ctx = SimpleNamespace(
        options=SimpleNamespace(route="auto", gpu_compressed_cache=False),
        device=SimpleNamespace(cache=cache, host_tier=lambda options: host_tier),
        add=lambda op_id, **kw: added.append(kw), add_routes=lambda op_id, counts: added.append(counts))
    return ctx, added


def _column(n):
    return Column(DataType.parse("BIGINT"), data=np.zeros(n, dtype=np.int64))


def test_resident_pages_stops_at_the_first_page_not_cached(paged_con):
    reader = paged_con._get_engine().db.table("t")
    cache = _CountingCache(DeviceMemoryBudget(1 << 30), capacity_bytes=1 << 28)
    ctx, added = _ctx(cache)
    state, op = DeviceScanState(reader), SimpleNamespace(op_id=1)
    rgs, names = list(range(reader.num_row_groups)), ["a", "b"]
    keys = [page_info(reader, n, rg).key for rg in rgs for n in names]
    for key in keys[:3]:
        cache.put(key, _column(reader.row_group_rows(key.row_group)), 100)
    assert resident_pages(op, ctx, state, rgs, names) is None
    assert cache.looked == 4  # three cached pages and the first missing one, not all ten
    for key in keys[3:]:
        cache.put(key, _column(reader.row_group_rows(key.row_group)), 100)
    got = resident_pages(op, ctx, state, rgs, names)
    assert got is not None and got.keys == keys and got.num_rows == reader.num_rows
    assert [rows for rows, _ in got.pages] == [reader.row_group_rows(rg) for rg in rgs]
    assert cache.stats.hits == len(keys) and added  # counted as hits, reported to the statistics
    again = resident_pages(op, ctx, state, rgs, names)
    assert again is got and cache.looked == 4 + len(keys)  # the second time: no look-up at all


def test_warm_fill_refuses_a_scan_larger_than_the_cache_without_a_streamer(paged_con):
    """No PageStreamer is made for a scan that cannot fit (making one needs CuPy, which this
    machine does not have: the refusal comes first)."""
    reader = paged_con._get_engine().db.table("t")
    names = ["a", "b", "s"]
    need = scan_device_bytes(reader, names)
    assert need >= sum(page_info(reader, n, rg).device_bytes for n in names for rg in range(reader.num_row_groups))
    cache = DevicePageCache(DeviceMemoryBudget(1 << 30), capacity_bytes=need - 1)
    ctx, _ = _ctx(cache, host_tier=object())
    state, op = DeviceScanState(reader), SimpleNamespace(op_id=1)
    assert warm_fill(op, ctx, state, list(range(reader.num_row_groups)), names) is None
    assert len(cache) == 0 and cache.stats.bypassed == 0
