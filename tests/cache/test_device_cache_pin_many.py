"""DevicePageCache.pin_many / unpin_many (a hot scan's pages pinned under one lock): the same
effect as pinning each key, all or none when a key is missing."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache, PageKey


def key(rg: int) -> PageKey:
    return PageKey("t", 1, "a", rg)


def test_pin_many_pins_like_pin_and_unpin_many_releases():
    budget = DeviceMemoryBudget(300)
    cache = DevicePageCache(budget, share=1.0)
    for rg in range(3):
        assert cache.put(key(rg), np.zeros(100, np.uint8), 100)
    cache.pin_many([key(0), key(1), key(1)])  # twice: two pins, as pin twice
    assert cache.pinned_bytes() == 200 and cache.evict(1000) == 100  # only key(2) could go
    cache.unpin_many([key(1)])
    assert cache.evict(1000) == 0  # key(1) still pinned once
    cache.unpin_many([key(0), key(1)])
    assert cache.pinned_bytes() == 0 and cache.evict(1000) == 200
    with pytest.raises(ValueError):
        cache.unpin_many([key(0)])


def test_pin_many_is_all_or_none():
    cache = DevicePageCache(DeviceMemoryBudget(300), share=1.0)
    assert cache.put(key(0), np.zeros(100, np.uint8), 100)
    with pytest.raises(KeyError):
        cache.pin_many([key(0), key(5)])
    assert cache.pinned_bytes() == 0


def test_hold_many_pins_counts_hits_and_is_all_or_none():
    """hold_many (a hot replay takes its plan's stored entries at once): the values in order, each
    pinned and counted as a hit; None with nothing pinned or counted when a key is missing."""
    cache = DevicePageCache(DeviceMemoryBudget(300), share=1.0)
    values = [np.full(100, rg, np.uint8) for rg in range(3)]
    for rg in range(3):
        assert cache.put(key(rg), values[rg], 100)
    hits = cache.stats.hits
    assert cache.hold_many([key(0), key(5)]) is None
    assert cache.pinned_bytes() == 0 and cache.stats.hits == hits
    keys = [key(2), key(0)]
    got = cache.hold_many(keys)
    assert [int(v[0]) for v in got] == [2, 0] and cache.stats.hits == hits + 2
    assert cache.pinned_bytes() == 200 and cache.evict(1000) == 100  # only key(1) could go
    cache.unpin_many(keys)
    assert cache.pinned_bytes() == 0 and cache.evict(1000) == 200
