"""DevicePageCache: column pages kept in GPU memory between queries, within ``gpu_memory_limit``.

Entries are device objects (decoded device Columns viewing raw page bytes, or raw device arrays) keyed
by ``PageKey``. Every entry's bytes are a reservation against the connection's ``DeviceMemoryBudget``,
so cached pages and query work share one limit: when a query needs memory, it asks the cache to
``evict`` first. Eviction is least-recently-used among unpinned entries (a pinned page is being read
by a kernel). The cache never holds more than ``capacity_bytes`` (its share of the budget).

Hot scans avoid per-page work: ``generation`` changes whenever an entry leaves the cache, so an object
derived from a set of entries (``set_derived``: a fused kernel's page table over a scan's cached pages)
stays valid, without looking the pages up again, for as long as the generation is unchanged; derived
objects are dropped at the first eviction (they may hold entries' arrays). ``touch_many`` marks such
a set of pages used (and counts them as hits) in one call.

Nothing here imports CuPy: the cache stores any object, so it is testable (and usable for host tiers)
without a GPU.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from hetdb.cache.base import CacheStats, PageCache, PageKey


@dataclass
class _Entry:
    value: Any
    nbytes: int
    pins: int = 0


class DevicePageCache(PageCache):
    """LRU page cache in device memory. ``share`` is the fraction of the budget's limit the cache may
    hold (the rest stays for query work); ``capacity_bytes`` overrides it."""

    tier = "gpu"

    def __init__(self, budget: Any, share: float = 0.5, capacity_bytes: int | None = None) -> None:
        if capacity_bytes is None:
            if not 0.0 <= share <= 1.0:
                raise ValueError("share must be within [0, 1]")
            capacity_bytes = int(budget.limit_bytes * share)
        if capacity_bytes < 0:
            raise ValueError("capacity_bytes must be >= 0")
        self.budget = budget
        self.capacity_bytes = int(capacity_bytes)
        self._entries: OrderedDict[PageKey, _Entry] = OrderedDict()  # oldest first
        self._used = 0        # bytes of entries
        self._reserved = 0    # reservations not yet turned into entries
        self._stats = CacheStats()
        self._lock = threading.RLock()
        self.generation = 0   # bumped whenever an entry leaves the cache
        self.mutations = 0    # bumped whenever an entry enters or leaves the cache
        self._derived: dict[Any, Any] = {}

    # ---- lookups ---------------------------------------------------------------------------------
    def get(self, key: PageKey, pin: bool = False) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._stats.misses += 1
                return None
            self._entries.move_to_end(key)
            self._stats.hits += 1
            self._stats.hit_bytes += entry.nbytes
            if pin:
                entry.pins += 1
            return entry.value

    def peek_many(self, keys: list[PageKey]) -> list[Any] | None:
        """The values of ``keys`` when every one is cached, else None (no statistics, no LRU change)."""
        with self._lock:
            entries = self._entries
            out = []
            for key in keys:
                entry = entries.get(key)
                if entry is None:
                    return None
                out.append(entry.value)
            return out

    def touch_many(self, keys: list[PageKey], nbytes: int, touched_at: int | None) -> int:
        """Count ``keys`` (all cached: see ``derived``) as hits of ``nbytes`` and mark them recently
        used; returns the ``mutations`` stamp to pass next time. When no entry came or went since
        ``touched_at`` nothing could have been inserted after them, so the LRU walk is skipped (a hot
        query then costs O(1) here)."""
        with self._lock:
            if touched_at != self.mutations:
                entries = self._entries
                for key in keys:
                    entries.move_to_end(key)
            self._stats.hits += len(keys)
            self._stats.hit_bytes += nbytes
            return self.mutations

    def derived(self, key: Any) -> Any | None:
        """An object stored with ``set_derived`` while no entry has left the cache since, else None."""
        with self._lock:
            got = self._derived.get(key)
            if got is None or got[0] != self.generation:
                return None
            return got[1]

    def set_derived(self, key: Any, value: Any) -> None:
        """Keep ``value`` (built from entries cached now) until the next eviction."""
        with self._lock:
            self._derived[key] = (self.generation, value)

    def _removed(self) -> None:
        self.generation += 1
        self.mutations += 1
        self._derived.clear()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[PageKey]:
        """Cached keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    # ---- insertion -------------------------------------------------------------------------------
    def reserve(self, nbytes: int) -> bool:
        if nbytes < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        with self._lock:
            if not self._make_room(nbytes):
                return False
            self._reserved += nbytes
            return True

    def release(self, nbytes: int) -> None:
        with self._lock:
            if nbytes > self._reserved:
                raise ValueError(f"releasing {nbytes} reserved bytes but only {self._reserved} are reserved")
            self._reserved -= nbytes
            self.budget.release(nbytes)

    def put(self, key: PageKey, value: Any, nbytes: int, pin: bool = False, reserved: bool = False) -> bool:
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:
                # Another scan cached the same immutable page first: keep that copy.
                if reserved:
                    self.release(nbytes)
                self._entries.move_to_end(key)
                if pin:
                    existing.pins += 1
                return True
            if reserved:
                if nbytes > self._reserved:
                    raise ValueError("put(reserved=True) without a matching reserve()")
                self._reserved -= nbytes
            elif not self._make_room(nbytes):
                self._stats.rejected += 1
                return False
            self._entries[key] = _Entry(value, int(nbytes), 1 if pin else 0)
            self.mutations += 1
            self._used += nbytes
            self._stats.inserted_bytes += nbytes
            return True

    def _make_room(self, nbytes: int) -> bool:
        """Evict until ``nbytes`` fit in the capacity and the budget grants them; reserves them."""
        if nbytes > self.capacity_bytes:
            return False
        over = self._used + self._reserved + nbytes - self.capacity_bytes
        if over > 0 and self._evict(over) < over:
            return False
        while not self.budget.try_reserve(nbytes):
            # The budget is shared with query work: free what we can, oldest first, one at a time.
            if self._evict(1) == 0:
                return False
        return True

    # ---- pinning and eviction --------------------------------------------------------------------
    def pin(self, key: PageKey) -> None:
        with self._lock:
            self._entries[key].pins += 1

    def unpin(self, key: PageKey) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.pins == 0:
                raise ValueError(f"unpin of {key} which is not pinned")
            entry.pins -= 1

    def pinned_bytes(self) -> int:
        with self._lock:
            return sum(e.nbytes for e in self._entries.values() if e.pins)

    def evict(self, nbytes: int) -> int:
        with self._lock:
            return self._evict(nbytes)

    def _evict(self, nbytes: int) -> int:
        freed = 0
        for key in list(self._entries):
            if freed >= nbytes:
                break
            entry = self._entries[key]
            if entry.pins:
                continue
            del self._entries[key]
            self._removed()
            self._used -= entry.nbytes
            self.budget.release(entry.nbytes)
            self._stats.evictions += 1
            self._stats.evicted_bytes += entry.nbytes
            freed += entry.nbytes
        return freed

    def clear(self) -> None:
        with self._lock:
            self._removed()
            for key in [k for k, e in self._entries.items() if not e.pins]:
                entry = self._entries.pop(key)
                self._used -= entry.nbytes
                self.budget.release(entry.nbytes)

    # ---- accounting ------------------------------------------------------------------------------
    @property
    def used_bytes(self) -> int:
        return self._used

    @property
    def reserved_bytes(self) -> int:
        return self._reserved

    @property
    def stats(self) -> CacheStats:
        return self._stats

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = CacheStats()
