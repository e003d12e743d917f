"""DevicePageCache's hot-scan helpers: objects derived from cached pages live until an entry leaves,
batched lookups and LRU touches (NumPy values: no GPU needed)."""

from __future__ import annotations

import numpy as np

from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache, PageKey


def key(rg: int) -> PageKey:
    return PageKey("t", 1, "a", rg)


def test_derived_objects_live_until_an_entry_leaves() -> None:
    cache = DevicePageCache(DeviceMemoryBudget(10_000), capacity_bytes=300)
    for rg in range(3):
        assert cache.put(key(rg), np.full(100, rg, dtype=np.uint8), 100)
    values = cache.peek_many([key(0), key(1)])
    assert values is not None and [int(v[0]) for v in values] == [0, 1]
    assert cache.peek_many([key(0), key(7)]) is None
    cache.set_derived("table", "derived")
    assert cache.derived("table") == "derived"
    assert cache.put(key(3), np.zeros(100, dtype=np.uint8), 100)  # evicts the oldest page
    assert cache.derived("table") is None
    assert key(0) not in cache and len(cache) == 3


def test_touch_many_keeps_pages_recently_used_and_counts_hits() -> None:
    cache = DevicePageCache(DeviceMemoryBudget(10_000), capacity_bytes=300)
    for rg in range(3):
        cache.put(key(rg), np.zeros(100, dtype=np.uint8), 100)
    stamp = cache.touch_many([key(0)], 100, None)
    assert cache.keys()[-1] == key(0)
    assert cache.touch_many([key(0)], 100, stamp) == stamp  # nothing came or went: no LRU walk
    assert (cache.stats.hits, cache.stats.hit_bytes) == (2, 200)
    cache.put(key(3), np.zeros(100, dtype=np.uint8), 100)
    assert key(1) not in cache and key(0) in cache  # key 1 was the least recently used
