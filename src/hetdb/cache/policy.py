"""Placement by benefit: which pages a tier keeps, and which new pages it lets in.

One policy object per tier (GPU memory, pinned host memory, the CPU's decoded host pages). It knows,
per cached entry, what one access to it saves — the time of moving it over the link the tier spares
(host→GPU copy for the GPU tier, disk read for host tiers), split into a per-page latency and a
per-byte transfer — and how many bytes the entry holds, and it counts accesses. It never holds data
and never frees memory: the tier asks it for victims and for an admission verdict and does the rest.

Two published ideas, combined (own code):

* **Eviction: GreedyDual-Size-Frequency** (Cherkasova, "Improving WWW proxies performance with
  Greedy-Dual-Size-Frequency caching policy", HP Labs 1998; after Cao & Irani's GreedyDual-Size).
  An entry's priority is ``L + frequency × saved_seconds / held_bytes``: link time avoided per byte
  held, times how often it is used. The lowest priority goes first. ``L`` ("inflation") is raised to
  each victim's priority, so entries not touched for a long time sink below newly used ones (aging
  without a clock walk). A column read often beats a cold column of the same size; a page kept
  decoded (more bytes held for the same link bytes saved) is worth less per byte than one kept as
  it is stored (compressed).
* **Admission: TinyLFU** (Einziger, Friedman, Manes, "TinyLFU: A Highly Efficient Cache Admission
  Policy", ACM ToS 2017). Access counts are kept for pages whether or not they are cached, and are
  halved every ``window`` accesses (aging). A page that must displace others to get in is admitted
  only if its count × saving exceeds that of the victims it would evict together (ties keep the
  residents). A scan larger than the tier reads each page once: its pages cannot displace a working
  set read more than once, so they pass through (bypass) and the working set stays. When the tier
  has free room everything is admitted.

Counting is exact (a dictionary) rather than a count-min sketch: the window bounds its size to the
pages seen in one window, a few thousand at hetdb's page size.

Sparse reads: an access may say which fraction of the page the reader needs (``fraction``); the
entry's saving then counts only that share of its transfer time (a page read through zero-copy
gathers or match hints would move only that share anyway), as a running mean over its accesses.

Hot paths that touch the same set of resident pages again and again (a fused kernel over a cached
table) register the set once per access with ``touch_group``: the counts are applied lazily, at the
next decision, so a hot query costs O(1) here.

Not thread-safe: each tier calls it under its own lock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

MIN_WINDOW = 1024   # accesses between halvings, at least
WINDOW_PER_ENTRY = 10  # ... and this many per resident entry (TinyLFU's sample size W ~ 10 x entries)


@dataclass
class _Meta:
    held: int            # bytes of the tier the entry takes
    latency: float       # seconds per access saved regardless of size (a link round trip)
    transfer: float      # seconds per access saved for moving the whole page
    fraction: float = 1.0  # running mean of the share of the page accesses need
    priority: float = 0.0
    seq: int = 0         # the heap record that is current (older records are stale)

    @property
    def saved(self) -> float:
        return self.latency + self.fraction * self.transfer


class BenefitPolicy:
    """GreedyDual-Size-Frequency eviction order plus TinyLFU admission (see the module docstring)."""

    def __init__(self, min_window: int = MIN_WINDOW) -> None:
        self._counts: dict[Hashable, int] = {}
        self._events = 0
        self._min_window = int(min_window)
        self._meta: dict[Hashable, _Meta] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count(1)
        self.inflation = 0.0  # GreedyDual's L
        self._groups: dict[int, list] = {}  # id(keys) -> [keys, pending count]

    # ---- access counting ---------------------------------------------------------------------------
    def frequency(self, key: Hashable) -> int:
        """Accesses of ``key`` counted in the current window (halved at each window's end)."""
        self._flush_groups()
        return self._counts.get(key, 0)

    def record(self, key: Hashable, fraction: float | None = None, count: int = 1) -> None:
        """An access of ``key`` (a hit or a miss); ``fraction``: the share of the page it needs."""
        self._counts[key] = self._counts.get(key, 0) + count
        self._events += count
        meta = self._meta.get(key)
        if meta is not None:
            if fraction is not None:
                meta.fraction = 0.5 * meta.fraction + 0.5 * min(1.0, max(0.0, float(fraction)))
            self._push(key, meta)
        self._age()

    def touch_group(self, keys: list) -> None:
        """One access of every key of ``keys`` (all resident), counted lazily. Pass the same list
        object each time: pending counts are kept per list."""
        got = self._groups.get(id(keys))
        if got is None:
            self._groups[id(keys)] = [keys, 1]
        else:
            got[1] += 1

    def _flush_groups(self) -> None:
        if not self._groups:
            return
        groups, self._groups = self._groups, {}
        for keys, count in groups.values():
            for key in keys:
                self._counts[key] = self._counts.get(key, 0) + count
                meta = self._meta.get(key)
                if meta is not None:
                    self._push(key, meta)
            self._events += count * len(keys)
        self._age()

    def _age(self) -> None:
        window = max(self._min_window, WINDOW_PER_ENTRY * len(self._meta))
        if self._events < window:
            return
        self._events = 0
        self._counts = {k: c >> 1 for k, c in self._counts.items() if c > 1}

    # ---- residents ---------------------------------------------------------------------------------
    def insert(self, key: Hashable, held: int, latency: float, transfer: float) -> None:
        """``key`` entered the tier holding ``held`` bytes; one access to it saves ``latency`` +
        ``transfer`` seconds (the transfer part scaled by the fraction accesses need)."""
        meta = _Meta(max(1, int(held)), float(latency), float(transfer))
        self._meta[key] = meta
        self._push(key, meta)

    def remove(self, key: Hashable) -> None:
        """``key`` left the tier for a reason other than eviction (cleared, dropped as stale)."""
        self._meta.pop(key, None)

    def evicted(self, key: Hashable) -> None:
        """``key`` was evicted as a victim: GreedyDual raises L to its priority."""
        meta = self._meta.pop(key, None)
        if meta is not None:
            self.inflation = max(self.inflation, meta.priority)

    def __contains__(self, key: object) -> bool:
        return key in self._meta

    def priority(self, key: Hashable) -> float:
        self._flush_groups()
        return self._meta[key].priority

    def _push(self, key: Hashable, meta: _Meta) -> None:
        meta.priority = self.inflation + self._counts.get(key, 0) * meta.saved / meta.held
        meta.seq = next(self._seq)
        heapq.heappush(self._heap, (meta.priority, meta.seq, key))
        if len(self._heap) > 4 * len(self._meta) + 64:
            self._heap = [(m.priority, m.seq, k) for k, m in self._meta.items()]
            heapq.heapify(self._heap)

    # ---- decisions ---------------------------------------------------------------------------------
    def victims(self, nbytes: int, evictable: Callable[[Hashable], bool]) -> list | None:
        """Resident keys to evict, lowest priority first, until they hold at least ``nbytes``; None
        when the evictable entries do not hold that much. Nothing is evicted here."""
        self._flush_groups()
        heap = self._heap
        taken: list[tuple[float, int, Hashable]] = []
        out: list = []
        freed = 0
        while freed < nbytes and heap:
            rec = heapq.heappop(heap)
            _, seq, key = rec
            meta = self._meta.get(key)
            if meta is None or meta.seq != seq:
                continue  # stale record: dropped for good
            taken.append(rec)
            if evictable(key):
                out.append(key)
                freed += meta.held
        for rec in taken:
            heapq.heappush(heap, rec)
        return out if freed >= nbytes else None

    def admit(self, key: Hashable, latency: float, transfer: float, victims: Iterable) -> bool:
        """Whether ``key`` (saving ``latency + transfer`` seconds per access) is worth more than the
        ``victims`` it would displace together: counts x savings, ties keep the residents."""
        self._flush_groups()
        victims = list(victims)
        if not victims:
            return True
        counts = self._counts
        value = counts.get(key, 0) * (latency + transfer)
        lost = sum(counts.get(v, 0) * self._meta[v].saved for v in victims)
        return value > lost

    def order(self) -> list:
        """Resident keys, lowest priority (next victim) first (for tests and tools)."""
        self._flush_groups()
        return sorted(self._meta, key=lambda k: (self._meta[k].priority, self._meta[k].seq))
