"""DevicePageCache: column pages kept in GPU memory between queries, within ``gpu_memory_limit``.

Entries are device objects (decoded device Columns viewing raw page bytes, or raw device arrays) keyed
by ``PageKey``. Every entry's bytes are a reservation against the connection's ``DeviceMemoryBudget``,
so cached pages and query work share one limit: when a query needs memory, it asks the cache to
``evict`` first. What stays and what gets in is decided by benefit (``cache/policy.py``): an entry is
worth the host→GPU copy time it saves per byte it holds, times how often it is read; a page that would
have to displace more valuable entries is not admitted (the scan streams it through instead). Pinned
entries (a kernel is reading them) and kept entries (``keep``: a user's ``con.pin``) are never
evicted. The cache never holds more than ``capacity_bytes`` (its share of the budget).

Hot scans avoid per-page work: ``generation`` changes whenever an entry leaves the cache, so an object
derived from a set of entries (``set_derived``: a fused kernel's page table over a scan's cached pages)
stays valid, without looking the pages up again, for as long as the generation is unchanged; derived
objects are dropped at the first eviction (they may hold entries' arrays). ``touch_many`` marks such
a set of pages used (and counts them as hits) in one call, costing O(1) (the policy counts the
accesses lazily).

Nothing here imports CuPy: the cache stores any object, so it is testable (and usable for host tiers)
without a GPU.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hetdb.cache.base import PAGE, CacheStats, PageCache, PageKey
from hetdb.cache.policy import BenefitPolicy
from hetdb.cache.rates import Rates, shared_rates

_NO_COLUMNS: dict[str, int] = {}


@dataclass
class _Entry:
    value: Any
    nbytes: int
    pins: int = 0
    kept: bool = False  # a user pin (``keep``): never evicted until ``unkeep``


class DevicePageCache(PageCache):
    """Page cache in device memory, placement by benefit. ``share`` is the fraction of the budget's
    limit the cache may hold (the rest stays for query work); ``capacity_bytes`` overrides it."""

    tier = "gpu"

    def __init__(self, budget: Any, share: float = 0.5, capacity_bytes: int | None = None,
                 rates: Rates | None = None, policy: Any = None) -> None:
        if capacity_bytes is None:
            if not 0.0 <= share <= 1.0:
                raise ValueError("share must be within [0, 1]")
            capacity_bytes = int(budget.limit_bytes * share)
        if capacity_bytes < 0:
            raise ValueError("capacity_bytes must be >= 0")
        self.budget = budget
        self.capacity_bytes = int(capacity_bytes)
        self._entries: dict[PageKey, _Entry] = {}  # in insertion order
        # a BenefitPolicy; another object with its interface for comparisons (cache/replay.py)
        self.policy = policy if policy is not None else BenefitPolicy()
        self.rates = rates or shared_rates()
        self._used = 0        # bytes of entries
        self._reserved = 0    # reservations not yet turned into entries
        self._stats = CacheStats()
        self._lock = threading.RLock()
        self.generation = 0   # bumped whenever an entry leaves the cache
        self.mutations = 0    # bumped whenever an entry enters or leaves the cache
        self._derived: dict[Any, Any] = {}
        self._kept_bytes = 0  # bytes of kept entries (asked for by every GPU query: keep_compressed)
        self._single: dict[Any, list] = {}  # key -> [key]: ``hold``'s lazy access, one list per key
        self._guards: dict[int, Any] = {}  # token -> callable run before the next entry leaves
        self._guard_tokens = 0
        # (table, version) -> {column: pages of it cached}: ``columns_cached`` answers whether a scan
        # finds any of its pages here without a look-up per page (a warm scan's first-scan test asked
        # for each of its ~460 pages, twice, on a connection caching only dimension pages)
        self._columns: dict[tuple[str, int], dict[str, int]] = {}

    # ---- lookups ---------------------------------------------------------------------------------
    def get(self, key: PageKey, pin: bool = False) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            self.policy.record(key)
            if entry is None:
                self._stats.misses += 1
                return None
            self._stats.hits += 1
            self._stats.hit_bytes += entry.nbytes
            if pin:
                self._pin(key, entry)
            return entry.value

    def hold(self, key: Any) -> Any | None:
        """``get(key, pin=True)`` whose access the policy applies lazily, as ``touch_many``'s: a
        query taking its plan's stored state (cache/fused_state.py) must not make the policy apply
        the previous query's pending accesses of every page it read (a record per page: ~1 ms per
        hot SSB query of 460-690 pages) when nothing is being decided."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return self.get(key, pin=True)
            self._stats.hits += 1
            self._stats.hit_bytes += entry.nbytes
            single = self._single.get(key)
            if single is None:
                single = self._single[key] = [key]
            self.policy.touch_group(single)
            self._pin(key, entry)
            return entry.value

    def hold_many(self, keys: list[Any]) -> list[Any] | None:
        """``hold`` of every key of ``keys`` under one lock, their accesses one lazy group (pass the
        same list object each time, as ``touch_many``): the values, or None (nothing pinned, no
        access counted) when one is not cached."""
        with self._lock:
            entries = self._entries
            got = [entries.get(key) for key in keys]
            if any(e is None for e in got):
                return None
            self._stats.hits += len(got)
            self._stats.hit_bytes += sum(e.nbytes for e in got)
            self.policy.touch_group(keys)
            for key, entry in zip(keys, got):
                self._pin(key, entry)
            return [e.value for e in got]

    def peek_many(self, keys: Iterable[PageKey]) -> list[Any] | None:
        """The values of ``keys`` when every one is cached, else None (no statistics, no access counted)."""
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
        """Count ``keys`` (all cached: see ``derived``; pass the same list object each time) as hits
        of ``nbytes`` and as one access each for the policy, lazily (O(1) here); returns the
        ``mutations`` stamp (kept for callers that track whether entries came or went)."""
        with self._lock:
            self.policy.touch_group(keys)
            self._stats.hits += len(keys)
            self._stats.hit_bytes += nbytes
            return self.mutations

    def record_access(self, key: PageKey) -> None:
        """Count an access of a page that is about to be brought in without ``get`` (a whole-scan
        fill), for placement only (no hit/miss statistics)."""
        with self._lock:
            self.policy.record(key)

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

    def arrays_changed(self) -> None:
        """An entry's device arrays grew with no entry coming or going (a kept build made its hash
        table on demand): ``mutations`` moves, so whoever memoizes on it looks again."""
        with self._lock:
            self.mutations += 1

    def guard_evictions(self, fn: Any) -> int:
        """Run ``fn()`` once, before the next entry leaves the cache (a kernel still reading cached
        pages makes the stream that reuses their memory wait for it: exec/resident_split.py); returns
        a token for ``unguard``."""
        with self._lock:
            self._guard_tokens += 1
            self._guards[self._guard_tokens] = fn
            return self._guard_tokens

    def unguard(self, token: int) -> None:
        """Drop a guard of ``guard_evictions`` that has not run (no-op when it has)."""
        with self._lock:
            self._guards.pop(token, None)

    def _run_guards(self) -> None:
        if self._guards:
            guards, self._guards = self._guards, {}
            for fn in guards.values():
                fn()

    def _removed(self) -> None:
        self.generation += 1
        self.mutations += 1
        self._derived.clear()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def columns_cached(self, table: str, version: int) -> dict[str, int]:
        """{column: pages of it cached} of a table version's column pages (part PAGE) held now; an
        empty dict when there are none. Read it, never change it."""
        return self._columns.get((table, version), _NO_COLUMNS)

    def _counted(self, key: Any, step: int) -> None:
        """Keep ``_columns`` in step with an entry of ``key`` coming (``step`` 1) or going (-1)."""
        if not isinstance(key, PageKey) or key.part != PAGE:
            return
        what = (key.table, key.version)
        cols = self._columns.get(what)
        if cols is None:
            cols = self._columns[what] = {}
        n = cols.get(key.column, 0) + step
        if n > 0:
            cols[key.column] = n
        else:
            cols.pop(key.column, None)
            if not cols:
                del self._columns[what]

    def keys(self) -> list[PageKey]:
        """Cached keys, in the order they were inserted."""
        with self._lock:
            return list(self._entries)

    def eviction_order(self) -> list[PageKey]:
        """Cached keys, next victim first (kept ones left out; pinned ones included)."""
        with self._lock:
            return self.policy.order()

    def entries(self) -> list[tuple[Any, int, bool]]:
        """(key, bytes, kept) of every entry (for ``hetdb info`` and the cache table function)."""
        with self._lock:
            return [(k, e.nbytes, e.kept) for k, e in self._entries.items()]

    # ---- insertion -------------------------------------------------------------------------------
    def reserve(self, nbytes: int, key: Any = None, link_bytes: int | None = None,
                first_reuse: int | None = None, headroom: int = 0) -> bool:
        """As ``PageCache.reserve``; with ``key`` (the page the room is for) and ``link_bytes`` (what
        moving it over the host→GPU link costs; default ``nbytes``), the policy may refuse a page
        worth less than the entries it would displace (counted as ``bypassed``). ``headroom``: bytes
        of the budget the caller is about to need for its own work (a streaming scan's next
        deliveries): the page gets in only if that much stays free beside it, by displacing entries
        worth less than it where needed. Without it, a scan under a tight budget would fill the room
        its own next copies need with pages those copies then evict again (admitted, copied and
        evicted once per delivery, never read)."""
        if nbytes < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        with self._lock:
            if not self._make_room(nbytes, key, link_bytes, first_reuse, headroom):
                return False
            self._reserved += nbytes
            return True

    def release(self, nbytes: int) -> None:
        with self._lock:
            if nbytes > self._reserved:
                raise ValueError(f"releasing {nbytes} reserved bytes but only {self._reserved} are reserved")
            self._reserved -= nbytes
            self.budget.release(nbytes)

    def put(self, key: PageKey, value: Any, nbytes: int, pin: bool = False, reserved: bool = False,
            link_bytes: int | None = None, first_reuse: int | None = None) -> bool:
        """As ``PageCache.put``; ``link_bytes``: what re-fetching the entry moves over the host→GPU
        link (default ``nbytes``; less for a page kept decoded from compressed bytes)."""
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:
                # Another scan cached the same immutable page first: keep that copy.
                if reserved:
                    self.release(nbytes)
                if pin:
                    self._pin(key, existing)
                return True
            if reserved:
                if nbytes > self._reserved:
                    raise ValueError("put(reserved=True) without a matching reserve()")
                self._reserved -= nbytes
            elif not self._make_room(nbytes, key, link_bytes, first_reuse):
                self._stats.rejected += 1
                return False
            entry = self._entries[key] = _Entry(value, int(nbytes))
            self._counted(key, 1)
            link = self.rates.h2d
            self.policy.insert(key, nbytes, link.latency_s,
                               link.transfer_seconds(nbytes if link_bytes is None else link_bytes), first_reuse)
            if pin:
                self._pin(key, entry)
            self.mutations += 1
            self._used += nbytes
            self._stats.inserted_bytes += nbytes
            self._stats.admitted += 1
            return True

    def _evictable(self, key: Any) -> bool:
        entry = self._entries[key]
        return not entry.pins and not entry.kept

    def _pin(self, key: Any, entry: _Entry) -> None:
        entry.pins += 1
        if entry.pins == 1:
            self.policy.busy(key)  # out of the eviction order: victims are chosen without a test

    def _make_room(self, nbytes: int, key: Any = None, link_bytes: int | None = None,
                   first_reuse: int | None = None, headroom: int = 0) -> bool:
        """Evict until ``nbytes`` fit in the capacity and the budget grants them with ``headroom``
        bytes to spare; reserves them. A page (``key`` of a PAGE) is admitted only if it is worth
        more than what it displaces."""
        if nbytes > self.capacity_bytes:
            return False
        judged = isinstance(key, PageKey) and key.part == PAGE
        link = self.rates.h2d
        transfer = link.transfer_seconds(nbytes if link_bytes is None else link_bytes)
        over = self._used + self._reserved + nbytes - self.capacity_bytes
        lost = 0.0  # worth of what this page displaced so far (admission weighs all of it)
        if over > 0:
            lost = self._displace(over, key, judged, link.latency_s, transfer, lost, first_reuse)
            if lost is None:
                return False
        while True:
            # The budget is shared with query work: free what it lacks, judged as a whole before
            # anything is evicted (a loop: query work may take memory meanwhile).
            short = self.budget.used_bytes + nbytes + headroom - self.budget.limit_bytes
            if short <= 0 and self.budget.try_reserve(nbytes):
                return True
            more = self._displace(max(1, short), key, judged, link.latency_s, transfer, lost, first_reuse)
            if more is None:
                return False
            lost += more

    def _displace(self, nbytes: int, key: Any, judged: bool, latency: float, transfer: float,
                  lost: float, first_reuse: int | None = None) -> float | None:
        """Evict entries holding ``nbytes`` when the page ``key`` is worth more than them together with
        ``lost`` (``judged``; otherwise whenever they exist); returns the worth of what it evicted, or
        None (nothing evicted) when the page is not worth it or the entries do not exist."""
        if judged:
            victims, worth = self.policy.displace(key, latency, transfer, nbytes, None, lost, first_reuse)
            if victims is None:
                self._stats.bypassed += 1
                return None
        else:
            victims, worth = self.policy.victims(nbytes, None), 0.0
            if not victims:
                return None
        for victim in victims:
            self._evict_entry(victim)
        return worth

    # ---- pinning and eviction --------------------------------------------------------------------
    def pin(self, key: PageKey) -> None:
        with self._lock:
            self._pin(key, self._entries[key])

    def pin_many(self, keys: list[PageKey]) -> None:
        """``pin`` each of ``keys`` under one lock (a hot scan pins every page it reads); KeyError,
        with none of them pinned, when one is not cached."""
        with self._lock:
            entries = [self._entries[key] for key in keys]
            for key, entry in zip(keys, entries):
                self._pin(key, entry)

    def unpin_many(self, keys: list[PageKey]) -> None:
        """``unpin`` each of ``keys`` under one lock."""
        with self._lock:
            for key in keys:
                self._unpin(key)

    def keep(self, key: PageKey) -> None:
        """Keep a cached entry until ``unkeep`` (a user's pin: never evicted, counts against the
        capacity like any entry)."""
        with self._lock:
            entry = self._entries[key]
            if not entry.kept:
                self._kept_bytes += entry.nbytes
            entry.kept = True
            self.policy.keep(key)

    def unkeep(self, key: PageKey) -> None:
        """Make a kept entry evictable again (no-op when it is not cached)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                if entry.kept:
                    self._kept_bytes -= entry.nbytes
                entry.kept = False
                self.policy.keep(key, False)
                if entry.pins:
                    self.policy.busy(key)

    def unpin(self, key: PageKey) -> None:
        with self._lock:
            self._unpin(key)

    def _unpin(self, key: PageKey) -> None:
        entry = self._entries.get(key)
        if entry is None or entry.pins == 0:
            raise ValueError(f"unpin of {key} which is not pinned")
        entry.pins -= 1
        if not entry.pins:
            self.policy.busy(key, False)

    def pinned_bytes(self) -> int:
        """Bytes of entries that cannot be evicted now (pinned or kept)."""
        with self._lock:
            return sum(e.nbytes for e in self._entries.values() if e.pins or e.kept)

    def kept_bytes(self) -> int:
        return self._kept_bytes

    def evict(self, nbytes: int) -> int:
        with self._lock:
            return self._evict(nbytes)

    def make_room(self, nbytes: int) -> int:
        """Evict what the budget lacks to grant ``nbytes`` of other work (a transient page, operator
        state), lowest benefit first, and nothing more: evicting all ``nbytes`` whenever the budget
        was short by any amount threw out pages the next run then copied again. Returns the bytes
        freed."""
        with self._lock:
            short = self.budget.used_bytes + int(nbytes) - self.budget.limit_bytes
            return self._evict(short) if short > 0 else 0

    def evict_matching(self, match: Any) -> int:
        """Evict every entry neither pinned nor kept for which ``match(key, value)`` is true (entries
        held in a form no longer wanted: cache/placement.py); returns the bytes freed."""
        with self._lock:
            victims = [k for k, e in self._entries.items() if not e.pins and not e.kept and match(k, e.value)]
            return sum(self._evict_entry(k) for k in victims)

    def _evict(self, nbytes: int) -> int:
        """Evict lowest-benefit evictable entries until ``nbytes`` are freed (all of them if they
        hold less); returns the bytes freed."""
        victims = self.policy.victims(nbytes, None)
        if victims is None:
            victims = [k for k in self.policy.order() if self._evictable(k)]
        return sum(self._evict_entry(v) for v in victims)

    def _evict_entry(self, key: Any) -> int:
        self._run_guards()
        entry = self._entries.pop(key)
        self._counted(key, -1)
        if entry.kept:
            self._kept_bytes -= entry.nbytes
        self._single.pop(key, None)
        self.policy.evicted(key)
        self._removed()
        self._used -= entry.nbytes
        self.budget.release(entry.nbytes)
        self._stats.evictions += 1
        self._stats.evicted_bytes += entry.nbytes
        return entry.nbytes

    def clear(self) -> None:
        """Drop every entry that is neither pinned nor kept."""
        with self._lock:
            self._run_guards()
            self._removed()
            for key in [k for k, e in self._entries.items() if not e.pins and not e.kept]:
                entry = self._entries.pop(key)
                self._counted(key, -1)
                self._single.pop(key, None)
                self.policy.remove(key)
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
