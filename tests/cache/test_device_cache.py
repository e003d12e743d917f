"""DevicePageCache: LRU eviction within its share of the budget, pinning, reservations, stats.

The cache stores any object, so these tests use NumPy arrays and run without a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache, PageKey


def key(rg: int, column: str = "a", version: int = 1) -> PageKey:
    return PageKey("t", version, column, rg)


def page(nbytes: int) -> np.ndarray:
    return np.random.default_rng(nbytes).integers(0, 255, nbytes, dtype=np.uint8)


def test_hit_miss_and_stats():
    budget = DeviceMemoryBudget(1000)
    cache = DevicePageCache(budget, share=1.0)
    assert cache.get(key(0)) is None
    value = page(100)
    assert cache.put(key(0), value, 100)
    assert cache.get(key(0)) is value
    assert key(0) in cache and key(1) not in cache
    assert key(0, version=2) not in cache  # a new table version is a different page
    s = cache.stats
    assert (s.hits, s.misses, s.hit_bytes, s.inserted_bytes) == (1, 1, 100, 100)
    assert budget.used_bytes == 100 == cache.used_bytes


def test_lru_eviction_within_capacity():
    budget = DeviceMemoryBudget(10_000)
    cache = DevicePageCache(budget, capacity_bytes=300)
    for rg in range(3):
        assert cache.put(key(rg), page(100), 100)
    cache.get(key(0))  # 0 is now the most recently used; 1 is the oldest
    assert cache.put(key(3), page(100), 100)
    assert cache.keys() == [key(2), key(0), key(3)]
    assert cache.stats.evictions == 1 and cache.stats.evicted_bytes == 100
    assert cache.used_bytes == 300 == budget.used_bytes
    assert not cache.put(key(9), page(400), 400)  # larger than the whole share
    assert cache.stats.rejected == 1


def test_pinned_entries_are_never_evicted():
    budget = DeviceMemoryBudget(200)
    cache = DevicePageCache(budget, share=1.0)
    assert cache.put(key(0), page(100), 100, pin=True)
    assert cache.put(key(1), page(100), 100, pin=True)
    assert not cache.put(key(2), page(100), 100)  # everything is pinned
    assert cache.evict(1000) == 0
    cache.unpin(key(0))
    assert cache.put(key(2), page(100), 100)
    assert key(0) not in cache and key(1) in cache
    with pytest.raises(ValueError):
        cache.unpin(key(2))  # not pinned
    cache.unpin(key(1))
    cache.clear()
    assert len(cache) == 0 and budget.used_bytes == 0


def test_cache_gives_memory_back_to_query_work():
    # The budget is shared: a query reserving memory evicts cached pages first.
    budget = DeviceMemoryBudget(400)
    cache = DevicePageCache(budget, share=1.0)
    for rg in range(4):
        assert cache.put(key(rg), page(100), 100)
    assert not budget.try_reserve(150)
    assert cache.evict(150) == 200
    assert budget.try_reserve(150)
    assert cache.keys() == [key(2), key(3)]
    # Query work holds memory: the cache evicts its own entries to admit new ones.
    assert cache.put(key(4), page(100), 100)
    assert budget.used_bytes == 150 + 200


def test_reserve_then_put_and_release():
    budget = DeviceMemoryBudget(300)
    cache = DevicePageCache(budget, share=1.0)
    assert cache.reserve(200)
    assert cache.reserved_bytes == 200 and budget.used_bytes == 200
    assert not cache.reserve(200)  # 100 left and nothing to evict
    assert cache.put(key(0), page(200), 200, pin=True, reserved=True)
    assert cache.reserved_bytes == 0 and cache.used_bytes == 200
    assert cache.reserve(100)
    cache.release(100)
    assert budget.used_bytes == 200
    # Putting a key that is already cached keeps the first copy and returns the reservation.
    assert cache.reserve(50)
    first = cache.get(key(0))
    assert cache.put(key(0), page(50), 50, reserved=True)
    assert cache.get(key(0)) is first and budget.used_bytes == 200
    cache.unpin(key(0))


def test_dictionary_keys_are_distinct_from_pages():
    cache = DevicePageCache(DeviceMemoryBudget(100), share=1.0)
    d = PageKey.dictionary("t", 1, "a")
    assert cache.put(d, "dict", 10)
    assert cache.get(key(-1)) is None and cache.get(d) == "dict"
    assert cache.stats.hit_rate == 0.5
