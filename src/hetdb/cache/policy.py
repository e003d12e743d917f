"""Placement by benefit: which pages a tier keeps, and which new pages it lets in.

One policy object per tier (GPU memory, pinned host memory, the CPU's decoded host pages). It knows,
per cached entry, what one access to it saves — the time of moving it over the link the tier spares
(host→GPU copy for the GPU tier, disk read for host tiers), split into a per-page latency and a
per-byte transfer — and how many bytes the entry holds, and it watches accesses. It never holds data
and never frees memory: the tier asks it for victims and for an admission verdict and does the rest.

An entry's worth is the link time it saves per byte held per unit of time, where time is the tier's
access clock (one tick per page access) and how often a page comes back is measured by its
**reuse distance**: the accesses between its last two uses (LIRS' inter-reference recency: Jiang &
Zhang, "LIRS: An Efficient Low Inter-reference Recency Set Replacement Policy", SIGMETRICS 2002),
smoothed over its uses. A resident page not used for longer than its reuse distance is judged by the
time since its last use instead, so a working set that is no longer read ages out on its own::

    worth(p) = saved_seconds(p) / held_bytes(p) / max(reuse_distance(p), now - last_use(p))

Cost per byte is GreedyDual-Size's idea (Cao & Irani, "Cost-Aware WWW Proxy Caching Algorithms",
USITS 1997): a page kept decoded (more bytes held for the same link bytes saved) is worth less per
byte than one kept as it is stored (compressed), and a column read more often beats a cold column
of the same size. Own code; no LIRS stacks: the few thousand pages of a tier are kept in recency
order and eviction takes the least worth among the ``SAMPLE`` least recently used evictable entries
(approximate, as Redis' sampled eviction, so a decision costs O(SAMPLE), not O(entries)).

Admission (what makes a tier scan-resistant): a page that must displace others to get in is admitted
only if it saves more link time per unit of time than the victims together (its own reuse distance
against theirs; ties keep the residents). A page read for the first time has no reuse distance, so it
never displaces anything: a scan larger than the tier reads each page once and passes through
(bypass) while the working set stays, and a repeated scan larger than the tier keeps the part that
fits instead of evicting each page just before it is read again (which plain LRU does). A new
working set gets in at its second read, as soon as it is read more recently than the old one;
unless the reader says what reuse distance to presume for a first read (``first_reuse``: a GPU scan
that fits in the tier as a whole passes its length, as if its query ran again), which then stands
until a second read measures one, and wins ties (so a new query that fits gets in at its first run,
as with LRU, while a scan larger than the tier still passes through). When the tier has free room
everything is admitted. Keys that left (or never entered) keep their history
for a while (``GHOSTS`` ghost entries) so a page's second read is recognised.

Sparse reads: an access may say which fraction of the page the reader needs (``fraction``); the
entry's saving then counts only that share of its transfer time (a page read through zero-copy
gathers or match hints would move only that share anyway), as a running mean over its accesses.

Hot paths that read the same set of resident pages again and again (a fused kernel over a cached
table) register the set once per access with ``touch_group``: the accesses are applied lazily, at
the next decision, so a hot query costs O(1) here.

Not thread-safe: each tier calls it under its own lock.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator

SAMPLE = 8      # least recently used evictable entries compared per victim
GHOSTS = 4096   # non-resident keys whose access history is kept (at least; 4 x residents if more)


class _Meta:
    """A resident entry: what it holds and saves, and its access history (shared with ``_hist``)."""

    __slots__ = ("held", "latency", "transfer", "fraction", "hist")

    def __init__(self, held: int, latency: float, transfer: float, hist: list) -> None:
        self.held = held          # bytes of the tier the entry takes
        self.latency = latency    # seconds per access saved regardless of size (a link round trip)
        self.transfer = transfer  # seconds per access saved for moving the whole page
        self.fraction = 1.0       # running mean of the share of the page accesses need
        self.hist = hist          # [last access, smoothed reuse distance]

    @property
    def saved(self) -> float:
        return self.latency + self.fraction * self.transfer


class BenefitPolicy:
    """Reuse-distance worth per byte, sampled eviction, admission against the victims' worth."""

    def __init__(self, sample: int = SAMPLE, ghosts: int = GHOSTS) -> None:
        self.clock = 0
        self._sample = int(sample)
        self._ghost_min = int(ghosts)
        # key -> [last access, smoothed reuse distance (inf before the second access)], for residents
        # and ghosts; a resident's _Meta holds the same list (no look-up when ranking it)
        self._hist: dict[Hashable, list] = {}
        self._resident: OrderedDict[Hashable, _Meta] = OrderedDict()  # evictable order: LRU first
        self._kept: dict[Hashable, _Meta] = {}
        self._busy: dict[Hashable, _Meta] = {}  # in use (``busy``): not evictable until released
        self._ghosts: OrderedDict[Hashable, None] = OrderedDict()
        self._groups: dict[int, list] = {}  # id(keys) -> [keys, pending accesses]
        # The first victim's saving per tick, kept while neither the clock nor the residents change
        # (``_first_victim``): the admissions of a scan's pages between two accesses (a batch of
        # row groups, or one row group's pages) that the first victim already refuses cost a look-up.
        self._version = 0
        self._first_token: tuple | None = None
        self._first_tick: float | None = None

    # ---- accesses ------------------------------------------------------------------------------------
    def record(self, key: Hashable, fraction: float | None = None, count: int = 1) -> None:
        """``count`` accesses of ``key`` (a hit or a miss) now; ``fraction``: the share of the page
        they need."""
        if self._groups:
            self._flush_groups()  # earlier group accesses first: recency and clock stay in order
        self.clock += count
        now = self.clock
        meta = self._resident.get(key)
        if meta is not None:
            self._resident.move_to_end(key)
            hist = meta.hist
        else:
            meta = self._busy.get(key) or self._kept.get(key)
            if meta is not None:
                hist = meta.hist
            else:
                hist = self._hist.get(key)
                self._ghost(key)
                if hist is None:
                    self._hist[key] = [now, math.inf]
                    return
        distance = max(1.0, (now - hist[0]) / count)
        old = hist[1]
        hist[1] = distance if old == math.inf else 0.5 * (old + distance)
        hist[0] = now
        if fraction is not None and meta is not None:
            meta.fraction = 0.5 * meta.fraction + 0.5 * min(1.0, max(0.0, float(fraction)))

    def touch_group(self, keys: list) -> None:
        """One access of every key of ``keys`` (all resident), applied lazily: before the next other
        access, insertion or decision (so a run of hot queries costs O(1) each). Pass the same list
        object each time: pending accesses are kept per list."""
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
                self.record(key, count=count)

    def _ghost(self, key: Hashable) -> None:
        ghosts = self._ghosts
        ghosts[key] = None
        ghosts.move_to_end(key)
        if len(ghosts) > self._ghost_min:
            bound = max(self._ghost_min, 4 * (len(self._resident) + len(self._kept) + len(self._busy)))
            while len(ghosts) > bound:
                old, _ = ghosts.popitem(last=False)
                self._hist.pop(old, None)

    def reuse_distance(self, key: Hashable) -> float:
        """Accesses between the last uses of ``key`` (smoothed; infinite before its second use)."""
        self._flush_groups()
        hist = self._hist.get(key)
        return math.inf if hist is None else hist[1]

    # ---- residents ---------------------------------------------------------------------------------
    def insert(self, key: Hashable, held: int, latency: float, transfer: float,
               first_reuse: float | None = None) -> None:
        """``key`` entered the tier holding ``held`` bytes; one access to it saves ``latency`` +
        ``transfer`` seconds (the transfer part scaled by the fraction accesses need).
        ``first_reuse``: the reuse distance it was admitted on before it had one (see ``displace``),
        kept as its estimate until its next access measures one."""
        if self._groups:
            self._flush_groups()
        self._ghosts.pop(key, None)
        hist = self._hist.get(key)
        if hist is None:
            hist = self._hist[key] = [self.clock, math.inf]
        if hist[1] == math.inf and first_reuse:
            hist[1] = max(1.0, float(first_reuse))
        self._resident[key] = _Meta(max(1, int(held)), float(latency), float(transfer), hist)
        self._version += 1

    def remove(self, key: Hashable) -> None:
        """``key`` left the tier (evicted, cleared, dropped as stale); its history stays a while."""
        if (self._resident.pop(key, None) is not None or self._kept.pop(key, None) is not None
                or self._busy.pop(key, None) is not None):
            self._version += 1
            self._ghost(key)

    evicted = remove

    def keep(self, key: Hashable, kept: bool = True) -> None:
        """Take a resident ``key`` out of the eviction order (a user's pin), or put it back."""
        self._version += 1
        if kept:
            meta = self._resident.pop(key, None) or self._busy.pop(key, None)
            if meta is not None:
                self._kept[key] = meta
        elif key in self._kept:
            self._resident[key] = self._kept.pop(key)  # most recently used: it was just kept

    def busy(self, key: Hashable, busy: bool = True) -> None:
        """Take a resident ``key`` out of the eviction order while it is in use (a reader holds it),
        or put it back (as the most recently used: it was just read). A tier that reports every
        such change may pass no ``evictable`` test to ``victims`` / ``displace``; kept entries stay
        kept."""
        self._version += 1
        if busy:
            meta = self._resident.pop(key, None)
            if meta is not None:
                self._busy[key] = meta
        else:
            meta = self._busy.pop(key, None)
            if meta is not None:
                self._resident[key] = meta

    def __contains__(self, key: object) -> bool:
        return key in self._resident or key in self._kept or key in self._busy

    def worth(self, key: Hashable) -> float:
        """Seconds saved per byte held per access tick (see the module docstring)."""
        self._flush_groups()
        meta = self._resident.get(key) or self._busy.get(key) or self._kept[key]
        return meta.saved / meta.held / self._horizon(meta)

    def _horizon(self, meta: _Meta) -> float:
        last, reuse = meta.hist
        return max(1.0, reuse, self.clock - last)

    # ---- decisions ---------------------------------------------------------------------------------
    def _candidates(self, evictable: Callable[[Hashable], bool] | None
                    ) -> Iterator[tuple[Hashable, _Meta, float]]:
        """(key, meta, link seconds per tick it saves) of the victims in the order they are taken:
        each the least worth per byte among a window of the ``SAMPLE`` least recently used
        evictable entries not taken yet (one pass over the recency order; ranks computed as
        victims are asked for). ``evictable``: None when every entry of the order may go."""
        self._flush_groups()
        clock = self.clock
        entries = iter(self._resident.items()) if evictable is None else (
            item for item in self._resident.items() if evictable(item[0]))
        window = []
        for i, (key, meta) in enumerate(itertools.islice(entries, self._sample)):
            last, reuse = meta.hist
            per_tick = (meta.latency + meta.fraction * meta.transfer) / max(1.0, reuse, clock - last)
            window.append((per_tick / meta.held, i, key, meta, per_tick))  # ties: less recent first
        heapq.heapify(window)
        i = len(window)
        while window:
            _, _, key, meta, per_tick = heapq.heappop(window)
            yield key, meta, per_tick
            for k, m in itertools.islice(entries, 1):
                last, reuse = m.hist
                tick = (m.latency + m.fraction * m.transfer) / max(1.0, reuse, clock - last)
                heapq.heappush(window, (tick / m.held, i, k, m, tick))
                i += 1

    def victims(self, nbytes: int, evictable: Callable[[Hashable], bool] | None) -> list | None:
        """Resident keys to evict until they hold at least ``nbytes``; None when the evictable entries
        do not hold that much. Nothing is evicted here."""
        out: list = []
        freed = 0
        if freed >= nbytes:
            return out
        for key, meta, _ in self._candidates(evictable):
            out.append(key)
            freed += meta.held
            if freed >= nbytes:
                return out
        return None

    def displace(self, key: Hashable, latency: float, transfer: float, nbytes: int,
                 evictable: Callable[[Hashable], bool] | None, already_lost: float = 0.0,
                 first_reuse: float | None = None) -> tuple[list | None, float]:
        """``victims`` and ``admit`` in one pass: (victims to evict so that ``key``'s ``nbytes`` fit,
        the link seconds per tick they save together) when ``key`` is worth more than them (plus
        ``already_lost``); (None, 0.0) when it is not, or the evictable entries do not hold
        ``nbytes``. Stops at the first victim that tips the balance, so a page read for the first
        time (worth nothing yet) costs no ranking at all. ``first_reuse``: the reuse distance to
        assume for a page read for the first time (a scan that fits in the tier passes its length:
        if its query runs again, that is when; None: a first read is worth nothing); such a page
        wins ties, as LRU would take it."""
        if nbytes <= 0:
            return [], 0.0
        self._flush_groups()
        hist = self._hist.get(key)
        reuse = math.inf if hist is None else hist[1]
        presumed = reuse == math.inf and bool(first_reuse)
        if presumed:
            reuse = max(1.0, float(first_reuse))
        gain = 0.0 if reuse == math.inf else (latency + transfer) / reuse
        room = gain - already_lost
        if room <= 0.0:
            return None, 0.0
        candidates = None
        if evictable is None:
            # what the loop below would find at its first victim, without ranking again while the
            # clock and the residents stay as they were
            token = (self.clock, self._version)
            if self._first_token != token:
                candidates = self._candidates(None)
                head = next(candidates, None)
                self._first_tick = None if head is None else head[2]
                self._first_token = token
                candidates = None if head is None else itertools.chain([head], candidates)
            first = self._first_tick
            if first is None or first > room or (first == room and not presumed):
                return None, 0.0
        out: list = []
        freed, lost = 0, 0.0
        for victim, meta, per_tick in candidates or self._candidates(evictable):
            lost += per_tick
            if lost > room or (lost == room and not presumed):  # ties keep the residents
                return None, 0.0
            out.append(victim)
            freed += meta.held
            if freed >= nbytes:
                return out, lost
        return None, 0.0

    def loss(self, victims: Iterable) -> float:
        """Link seconds per access tick the resident ``victims`` save together."""
        self._flush_groups()
        total = 0.0
        for v in victims:
            meta = self._resident.get(v) or self._busy[v]
            total += meta.saved / self._horizon(meta)
        return total

    def admit(self, key: Hashable, latency: float, transfer: float, victims: Iterable,
              already_lost: float = 0.0) -> bool:
        """Whether ``key`` (saving ``latency + transfer`` seconds per access) saves more link time per
        access tick than the ``victims`` it would displace together (plus ``already_lost``: what it
        displaced before, for admissions made victim by victim); ties keep the residents."""
        victims = list(victims)
        if not victims and not already_lost:
            return True
        return (latency + transfer) / self.reuse_distance(key) > already_lost + self.loss(victims)

    def order(self) -> list:
        """Resident keys that are not kept (busy ones included), least worth (next victim) first,
        recency breaking ties."""
        self._flush_groups()
        metas = {**self._resident, **self._busy}
        position = {k: i for i, k in enumerate(metas)}
        return sorted(metas, key=lambda k: (metas[k].saved / metas[k].held / self._horizon(metas[k]),
                                            position[k]))
