"""DevicePageCache's hot-scan helpers: objects derived from cached pages live until an entry leaves,
batched lookups and lazily counted touches (NumPy values: no GPU needed)."""

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
    cache.get(key(3))
    cache.get(key(3))
    assert cache.put(key(3), np.zeros(100, dtype=np.uint8), 100)  # read twice: evicts the oldest page
    assert cache.derived("table") is None
    assert key(0) not in cache and len(cache) == 3


def test_touch_many_counts_accesses_lazily_and_counts_hits() -> None:
    cache = DevicePageCache(DeviceMemoryBudget(10_000), capacity_bytes=300)
    for rg in range(3):
        cache.get(key(rg))
        cache.put(key(rg), np.zeros(100, dtype=np.uint8), 100)
    hot = [key(0), key(1)]
    stamp = cache.touch_many(hot, 200, None)
    assert cache.touch_many(hot, 200, stamp) == stamp  # nothing came or went
    assert (cache.stats.hits, cache.stats.hit_bytes) == (4, 400)
    assert cache.policy.reuse_distance(key(0)) < cache.policy.reuse_distance(key(2)) == float("inf")
    for _ in range(2):
        cache.get(key(3))
    cache.put(key(3), np.zeros(100, dtype=np.uint8), 100)
    assert key(2) not in cache and key(0) in cache and key(1) in cache  # key 2 was read least
