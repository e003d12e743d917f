"""FusedStateStore: per (physical plan, pipeline) entries, in a DevicePageCache (accounted, evictable,
pinned while used) or a host LRU; entries report their arrays for the device-memory accounting."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache
from hetdb.cache.fused_state import FusedState, FusedStateStore
from hetdb.column import Column


class _Plan:
    """Stands for a physical plan: only its identity matters."""


def _entry(physical, pid=3, n=1000):
    rows = np.arange(n, dtype=np.int32)
    dictionary = Column(T.STRING, offsets=np.array([0, 1, 3], np.int64), chars=np.frombuffer(b"abc", np.uint8))
    return FusedState(physical, pid, object(), "fused", frozenset({0, 1}), frozenset(),
                      [rows, rows[: n // 2], dictionary])


def test_device_cache_entries_are_accounted_pinned_and_evicted() -> None:
    budget = DeviceMemoryBudget(1 << 20)
    cache = DevicePageCache(budget, share=0.5)
    store = FusedStateStore(cache)
    plan, other = _Plan(), _Plan()
    e = _entry(plan)
    assert e.nbytes == 4000 + 24 + 3  # the view shares its base's bytes
    assert store.put(e)
    assert budget.used_bytes == e.nbytes
    assert store.get(other, 3) is None and store.get(plan, 4) is None
    got, pin = store.get(plan, 3)
    assert got is e
    assert cache.evict(1 << 20) == 0  # pinned while a query uses it
    store.release(pin)
    assert cache.evict(1 << 20) == e.nbytes
    assert store.get(plan, 3) is None and budget.used_bytes == 0


def test_entries_too_large_for_the_cache_are_dropped() -> None:
    cache = DevicePageCache(DeviceMemoryBudget(8000), share=0.5)
    store = FusedStateStore(cache)
    plan = _Plan()
    assert not store.put(_entry(plan, n=2000))
    assert store.get(plan, 3) is None


def test_host_store_is_a_bounded_lru() -> None:
    store = FusedStateStore(None, max_entries=2)
    plans = [_Plan() for _ in range(3)]
    for p in plans:
        store.put(_entry(p))
    assert store.get(plans[0], 3) is None
    assert store.get(plans[2], 3)[0].physical is plans[2]
    assert len(store) == 2 and store.hits == 1


def test_device_accounting_sees_an_entrys_arrays() -> None:
    pytest.importorskip("hetdb.exec.device")
    from hetdb.exec.device import _arrays

    e = _entry(_Plan())
    arrays = list(_arrays(e))
    assert len(arrays) == 4  # rows, its view, the dictionary's offsets and chars
    assert any(a is e.arrays[0] for a in arrays)


def test_taking_a_stored_state_leaves_the_pages_pending_accesses_pending() -> None:
    """A hot query takes its plan's stored state (``get``, pinned) after the previous query counted
    an access of every page it read lazily (``touch_many``): taking it applies none of them (they
    cost a policy record each, per query), yet the entry's own access still counts (lazily too)."""
    from hetdb.cache.base import PAGE, PageKey

    cache = DevicePageCache(DeviceMemoryBudget(1 << 24), share=0.5)
    store = FusedStateStore(cache)
    plan = _Plan()
    store.put(_entry(plan))
    pages = [PageKey("t", 1, "c", rg, PAGE) for rg in range(50)]
    for k in pages:
        cache.put(k, np.zeros(10, np.uint8), 10)
    cache.touch_many(pages, 500, None)
    applied = []
    real = cache.policy.record
    cache.policy.record = lambda key, *a, **k: applied.append(key) or real(key, *a, **k)
    got, pin = store.get(plan, 3)
    assert applied == []  # nothing applied now
    store.release(pin)
    cache.policy.reuse_distance(pages[0])  # a decision applies what is pending, the entry's access included
    assert len(applied) == len(pages) + 1 and ("fused-state", id(plan), 3) in applied
    assert cache.stats.hits >= 1


def test_kept_bytes_follow_keep_unkeep_and_eviction() -> None:
    from hetdb.cache.base import PAGE, PageKey

    cache = DevicePageCache(DeviceMemoryBudget(1 << 20), share=0.5)
    a, b = PageKey("t", 1, "c", 0, PAGE), PageKey("t", 1, "c", 1, PAGE)
    cache.put(a, np.zeros(100, np.uint8), 100)
    cache.put(b, np.zeros(300, np.uint8), 300)
    assert cache.kept_bytes() == 0
    cache.keep(a)
    cache.keep(a)  # (twice: counted once)
    cache.keep(b)
    assert cache.kept_bytes() == 400
    cache.unkeep(b)
    assert cache.kept_bytes() == 100
    cache.clear()  # kept entries stay
    assert cache.kept_bytes() == 100 and a in cache and b not in cache
    cache.unkeep(a)
    assert cache.kept_bytes() == 0 and cache.evict(1 << 20) == 100
