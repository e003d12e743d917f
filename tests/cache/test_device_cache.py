"""DevicePageCache: eviction by benefit within its share of the budget, pinning, keeping,
reservations, stats.

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


def fetch(cache: DevicePageCache, k: PageKey, nbytes: int = 100, pin: bool = False) -> bool:
    """What a scan does: look the page up (counting the access), put it in on a miss."""
    if cache.get(k, pin=pin) is not None:
        return True
    return cache.put(k, page(nbytes), nbytes, pin=pin)


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


def test_eviction_by_benefit_within_capacity():
    budget = DeviceMemoryBudget(10_000)
    cache = DevicePageCache(budget, capacity_bytes=300)
    for rg in range(3):
        assert fetch(cache, key(rg))
    cache.get(key(0))  # page 0 read twice; pages 1 and 2 once
    assert not fetch(cache, key(3))  # read once: not worth displacing anything
    assert cache.stats.bypassed == 1 and cache.stats.evictions == 0
    assert fetch(cache, key(3))  # the second read gets it in, displacing page 1 (the oldest of the once-read)
    assert cache.keys() == [key(0), key(2), key(3)]
    assert cache.stats.evictions == 1 and cache.stats.evicted_bytes == 100
    assert cache.used_bytes == 300 == budget.used_bytes
    assert not cache.put(key(9), page(400), 400)  # larger than the whole share
    assert cache.stats.rejected == 2


def test_pinned_entries_are_never_evicted():
    budget = DeviceMemoryBudget(200)
    cache = DevicePageCache(budget, share=1.0)
    assert fetch(cache, key(0), pin=True)
    assert fetch(cache, key(1), pin=True)
    for _ in range(5):
        cache.get(key(2))  # a hot page that would displace anything unpinned
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


def test_kept_entries_stay_through_eviction_and_clear():
    budget = DeviceMemoryBudget(300)
    cache = DevicePageCache(budget, share=1.0)
    assert fetch(cache, key(0))
    cache.keep(key(0))
    assert cache.kept_bytes() == 100 == cache.pinned_bytes()
    for _ in range(4):
        for rg in (1, 2, 3):
            fetch(cache, key(rg))
    assert key(0) in cache  # never a victim however hot the others are
    assert cache.evict(10_000) == 200 and cache.keys() == [key(0)]
    cache.clear()
    assert cache.entries() == [(key(0), 100, True)]
    cache.unkeep(key(0))
    cache.clear()
    assert len(cache) == 0 and budget.used_bytes == 0


def test_cache_gives_memory_back_to_query_work():
    # The budget is shared: a query reserving memory evicts cached pages first.
    budget = DeviceMemoryBudget(400)
    cache = DevicePageCache(budget, share=1.0)
    for rg in range(4):
        assert fetch(cache, key(rg))
    cache.get(key(3))
    cache.get(key(2))
    assert not budget.try_reserve(150)
    assert cache.evict(150) == 200  # the least used pages go first
    assert budget.try_reserve(150)
    assert cache.keys() == [key(2), key(3)]
    # Query work holds memory: a page read more often than a cached one gets room by evicting it.
    cache.get(key(4))
    cache.get(key(4))
    assert fetch(cache, key(4))
    assert len(cache) == 2 and cache.stats.evictions == 3
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


def test_dictionaries_and_derived_state_are_admitted_without_a_history():
    cache = DevicePageCache(DeviceMemoryBudget(100), share=1.0)
    assert fetch(cache, key(0), 60)
    cache.get(key(0))
    assert cache.put(PageKey.dictionary("t", 1, "a"), "dict", 60)  # needed now: always admitted
    assert key(0) not in cache and cache.stats.bypassed == 0


def test_record_access_counts_for_placement_without_statistics():
    cache = DevicePageCache(DeviceMemoryBudget(1000), capacity_bytes=200)
    for rg in range(2):
        assert fetch(cache, key(rg))
    cache.record_access(key(5))  # whole-scan fills read it before, twice
    cache.record_access(key(5))
    assert cache.stats.misses == 2 and cache.stats.hits == 0
    assert cache.reserve(100, key=key(5))  # read again: worth displacing a page read once
    assert cache.stats.evictions == 1
    cache.release(100)


def test_budget_pressure_admission_weighs_every_page_displaced():
    # the capacity has room but the budget is full: the page is judged against everything it would
    # have to displace (three pages worth more together), before anything is evicted
    budget = DeviceMemoryBudget(300)
    cache = DevicePageCache(budget, capacity_bytes=1000)
    for rg in range(3):
        assert fetch(cache, key(rg))
    for _ in range(2):  # pages 0-2 come back every 9 reads
        for rg in (0, 1, 2, 10, 11, 12, 13, 14, 15):
            cache.get(key(rg))
    for rg in (7, 20, 21, 22, 7):  # page 7 every 4 reads: worth one of them, not three
        cache.get(key(rg))
    assert not cache.put(key(7), page(250), 250)
    assert cache.stats.bypassed == 1 and cache.stats.evictions == 0 and len(cache) == 3
    assert budget.used_bytes == cache.used_bytes


def test_admission_leaves_the_headroom_a_scan_needs_for_its_next_copies():
    # a scan under a tight budget asks with headroom = what its next deliveries need: a page read
    # for the first time gets in only while that much stays free, and never displaces for it
    budget = DeviceMemoryBudget(1000)
    cache = DevicePageCache(budget, capacity_bytes=600)
    assert cache.reserve(100, key=key(0), headroom=800)
    cache.put(key(0), page(100), 100, reserved=True)
    assert not cache.reserve(100, key=key(1), headroom=850)  # 100 + 100 + 850 > 1000
    assert cache.stats.bypassed == 1 and cache.stats.evictions == 0
    assert budget.used_bytes == 100 == cache.used_bytes
    # a page read again is worth more than one read once: it displaces it to keep the headroom
    for rg in (1, 2, 1):
        cache.get(key(rg))
    assert cache.reserve(100, key=key(1), headroom=850)
    assert cache.stats.evictions == 1 and key(0) not in cache
    assert budget.used_bytes == 100
    cache.release(100)
    assert budget.used_bytes == 0


def test_make_room_evicts_only_what_the_budget_lacks():
    """Transient work (a streamed page, operator state) asking for room evicts cached pages worth
    the budget's shortfall, lowest benefit first, not all it asks for."""
    budget = DeviceMemoryBudget(1000)
    cache = DevicePageCache(budget, capacity_bytes=800)
    for rg in range(8):
        assert fetch(cache, key(rg))
    for rg in range(4, 8):
        cache.get(key(rg))  # read again: worth more than pages 0-3
    assert budget.try_reserve(150)  # other work: 950 of 1000 used
    assert cache.make_room(40) == 0 and len(cache) == 8  # 990: it fits
    assert cache.make_room(250) == 200  # 1200 - 1000: two pages, not three
    assert budget.try_reserve(250)
    assert len(cache) == 6 and all(key(rg) in cache for rg in range(4, 8))
    budget.release(400)
    assert budget.used_bytes == cache.used_bytes == 600


def test_columns_cached_counts_a_table_versions_pages_by_column():
    # (scan_device.any_cached asks it first: a column of which no page is cached costs no look-up)
    from hetdb.exec.operators.scan_device import any_cached

    class Reader:
        name, version = "t", 1

    budget = DeviceMemoryBudget(10_000)
    cache = DevicePageCache(budget, share=1.0)
    assert cache.columns_cached("t", 1) == {} and not any_cached(cache, Reader(), ["a", "b"], [0, 1])
    for k in (key(0), key(1), key(0, "b"), key(0, version=2)):
        assert cache.put(k, page(100), 100)
    assert cache.put(key(0), page(100), 100)  # (already cached: counted once)
    assert cache.put(("fused state", "t", 1), page(100), 100)  # (not a page: not counted)
    assert cache.put(PageKey.dictionary("t", 1, "c"), page(100), 100)  # (a dictionary: not a page)
    assert cache.columns_cached("t", 1) == {"a": 2, "b": 1} and cache.columns_cached("t", 2) == {"a": 1}
    assert any_cached(cache, Reader(), ["b"], [0]) and not any_cached(cache, Reader(), ["b", "c"], [1, 2])
    cache.pin(key(0, "b"))
    cache.clear()  # (the pinned page stays)
    assert cache.columns_cached("t", 1) == {"b": 1} and cache.columns_cached("t", 2) == {}
    cache.unpin(key(0, "b"))
    assert cache.put(key(5), page(100), 100)
    assert cache.evict(10_000) > 0 and cache.columns_cached("t", 1) == {} and len(cache) == 0
