"""Replay of GPU scans' page accesses through the GPU tier, without a GPU: what each query moves
over the host→GPU link under a placement policy and a ``gpu_memory_limit``.

A trace (``cache/trace.py`` makes one from the real planner over a real database) is a list of
queries, each a list of scans, each the pages of its columns row group by row group with the bytes a
page holds on the device and the bytes it moves over the link. ``replay`` drives a real
``DevicePageCache`` (within a real ``DeviceMemoryBudget``) the way a GPU scan does
(``backend/gpu/stream.py`` and ``exec/fusion_run.py``'s resident path): the same calls in the same order,

    resident  every page of the scan cached: ``peek_many`` then ``touch_many`` (one launch, no copy)
    through   gpu_cache_admission='reuse' (the default; ``scan_device.first_scan``): the connection's
              first scan of these columns, none of its pages cached, streams past the cache (route
              'copy': every page copied and held transiently, the cache neither asked nor filled),
              so a query that fits fills the cache at its second run and is resident at its third
    fill      warm path (all pages are in the pinned host tier in hot and warm runs) when the scan
              fits in the cache: ``reserve`` each missing page judged by the policy, ``record_access``,
              ``put``; a refusal stops the fill and the scan streams
    stream    ``depth`` row groups scheduled ahead: ``get(pin=True)`` per page when scheduled; when
              delivered, ``reserve`` (judged) and ``put(pin)``, else a transient reservation (which
              evicts cached pages when the budget is short); unpinned / released when retired

and counts the link bytes of every page that was not resident (plus each dictionary moved).

A query's working memory (``QueryRef.working``: the device bytes its operators reserve — hash
tables, aggregation state, kernels' buffers — e.g. the operators' peak a GPU run reports) is
reserved as ``exec/device.DeviceMemoryManager`` reserves it, evicting cached pages when the budget
is short, before the query's largest scan (the fact table's, which probes the builds of the scans
before it) and released when the query ends: at its peak for the whole scan, so this bounds the
evictions it causes from above.

Policies compared (``POLICIES``): the current ``BenefitPolicy``; ``LruPolicy`` (the tier at 69951da:
admit everything, evict the least recently used); ``BeladyPolicy`` (the offline optimum's rule: evict
the page needed farthest in the future, bypass a page needed later than everything it would
displace — an ideal to measure against, not a usable policy).
"""

from __future__ import annotations

import bisect
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hetdb.cache.base import PageKey
from hetdb.cache.device_cache import DevicePageCache
from hetdb.cache.policy import BenefitPolicy

DEPTH = 3          # row groups a PageStreamer schedules ahead (its default)
CACHE_SHARE = 0.8  # the device cache's share of gpu_memory_limit (exec/device.py)
OPERATOR_SHARE = 0.5  # the operators' share of gpu_memory_limit (exec/device.py)


@dataclass(frozen=True)
class PageRef:
    """One page a scan reads: ``held`` device bytes once delivered, ``link`` bytes moved when copied."""

    key: PageKey
    held: int
    link: int


@dataclass
class ScanRef:
    """One GPU scan: its pages row group by row group (the scan's columns in each), and the
    dictionaries (string columns) it moves once unless cached."""

    table: str
    row_groups: list[list[PageRef]]
    dictionaries: list[PageRef] = field(default_factory=list)

    def pages(self) -> list[PageRef]:
        return [p for rg in self.row_groups for p in rg]

    def columns(self) -> tuple[str, int, frozenset[str]]:
        """(table, version, columns) of the scan's pages."""
        pages = self.row_groups[0] if self.row_groups else self.dictionaries
        version = pages[0].key.version if pages else 0
        return self.table, version, frozenset(p.key.column for p in pages)


@dataclass
class QueryRef:
    name: str
    scans: list[ScanRef]
    working: int = 0  # device bytes the query's operators hold (see the module docstring)

    def pages(self) -> list[PageRef]:
        return [p for s in self.scans for p in (*s.pages(), *s.dictionaries)]


# ---- policies to compare with -------------------------------------------------------------------------
class LruPolicy:
    """The GPU tier before the benefit policy (69951da): every page is admitted, the least recently
    used evictable entry leaves first. Same interface as ``BenefitPolicy``."""

    def __init__(self) -> None:
        self.clock = 0
        self._resident: OrderedDict[Hashable, int] = OrderedDict()
        self._kept: dict[Hashable, int] = {}
        self._busy: dict[Hashable, int] = {}
        self._groups: dict[int, list] = {}

    def record(self, key: Hashable, fraction: float | None = None, count: int = 1) -> None:
        if self._groups:
            self._flush()
        self.clock += count
        if key in self._resident:
            self._resident.move_to_end(key)

    def touch_group(self, keys: list) -> None:
        self._groups[id(keys)] = keys

    def _flush(self) -> None:
        groups, self._groups = self._groups, {}
        for keys in groups.values():
            for key in keys:
                self.record(key)

    def insert(self, key: Hashable, held: int, latency: float, transfer: float,
               first_reuse: float | None = None) -> None:
        if self._groups:
            self._flush()
        self._resident[key] = max(1, int(held))

    def remove(self, key: Hashable) -> None:
        self._resident.pop(key, None)
        self._kept.pop(key, None)
        self._busy.pop(key, None)

    evicted = remove

    def keep(self, key: Hashable, kept: bool = True) -> None:
        if kept and (key in self._resident or key in self._busy):
            self._kept[key] = self._resident.pop(key, None) or self._busy.pop(key)
        elif not kept and key in self._kept:
            self._resident[key] = self._kept.pop(key)

    def busy(self, key: Hashable, busy: bool = True) -> None:
        if busy and key in self._resident:
            self._busy[key] = self._resident.pop(key)
        elif not busy and key in self._busy:
            self._resident[key] = self._busy.pop(key)

    def __contains__(self, key: object) -> bool:
        return key in self._resident or key in self._kept or key in self._busy

    def victims(self, nbytes: int, evictable: Callable[[Hashable], bool] | None) -> list | None:
        self._flush()
        out, freed = [], 0
        for key, held in self._resident.items():
            if freed >= nbytes:
                break
            if evictable is None or evictable(key):
                out.append(key)
                freed += held
        return out if freed >= nbytes else None

    def loss(self, victims: Iterable) -> float:
        return 0.0

    def admit(self, key: Hashable, latency: float, transfer: float, victims: Iterable,
              already_lost: float = 0.0) -> bool:
        return True

    def displace(self, key: Hashable, latency: float, transfer: float, nbytes: int,
                 evictable: Callable[[Hashable], bool] | None, already_lost: float = 0.0,
                 first_reuse: float | None = None) -> tuple[list | None, float]:
        victims = self.victims(nbytes, evictable)
        if victims is None or not self.admit(key, latency, transfer, victims, already_lost):
            return None, 0.0
        return victims, self.loss(victims)

    def order(self) -> list:
        self._flush()
        return [*self._resident, *self._busy]


class BeladyPolicy(LruPolicy):
    """Clairvoyant: ``next_use(key)`` is the trace position of the key's next access (``math.inf``
    when none). Evicts the entries needed farthest ahead; admits a page only if it is needed before
    every entry it would displace."""

    def __init__(self, next_use: Callable[[Hashable], float]) -> None:
        super().__init__()
        self.next_use = next_use

    def victims(self, nbytes: int, evictable: Callable[[Hashable], bool] | None) -> list | None:
        self._flush()
        ranked = sorted((k for k in self._resident if evictable is None or evictable(k)),
                        key=self.next_use, reverse=True)
        return _first_covering(ranked, self._resident, nbytes)

    def admit(self, key: Hashable, latency: float, transfer: float, victims: Iterable,
              already_lost: float = 0.0) -> bool:
        victims = list(victims)
        if not victims:
            return True
        return self.next_use(key) < min(self.next_use(v) for v in victims)

    def order(self) -> list:
        self._flush()
        return sorted([*self._resident, *self._busy], key=self.next_use, reverse=True)


# ---- the scan protocol --------------------------------------------------------------------------------
class _Value:
    """Stands for a device Column: its bytes are the page's ``held``."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


@dataclass
class ReplayResult:
    """Link bytes and resident hits per query (one entry per query run, in trace order)."""

    policy: str
    limit_bytes: int
    link_bytes: list[int]
    hit_pages: list[int]
    decisions: list[tuple[int, int, int]]  # per query run: pages admitted, evicted, bypassed
    cache: DevicePageCache
    seconds: float = 0.0  # wall time of the replay (the cache's bookkeeping, mostly)
    short_bytes: int = 0  # transient bytes the budget had no room for even after evicting (not held)

    @property
    def total_link_bytes(self) -> int:
        return sum(self.link_bytes)


class _Clock:
    """The position of the scan protocol in the trace's page accesses (for Belady's oracle)."""

    def __init__(self, queries: list[QueryRef]) -> None:
        self.position = 0
        self._uses: dict[PageKey, list[int]] = {}
        i = 0
        for q in queries:
            for p in q.pages():
                self._uses.setdefault(p.key, []).append(i)
                i += 1

    def next_use(self, key: Hashable) -> float:
        uses = self._uses.get(key)  # type: ignore[arg-type]
        if not uses:
            return math.inf
        j = bisect.bisect_left(uses, self.position)
        return uses[j] if j < len(uses) else math.inf


class OraclePolicy(LruPolicy):
    """Clairvoyant and cost-aware (Belady's rule weighted as GreedyDual-Size weighs): an entry is worth
    the link seconds one access saves per byte held per access tick until its next use; the least
    worth leaves first, and a page is admitted only if it saves more per tick until its next use than
    the entries it would displace together. The ideal the benefit policy estimates."""

    def __init__(self, next_use: Callable[[Hashable], float], now: Callable[[], int]) -> None:
        super().__init__()
        self.next_use, self.now = next_use, now
        self._saved: dict[Hashable, float] = {}

    def insert(self, key: Hashable, held: int, latency: float, transfer: float,
               first_reuse: float | None = None) -> None:
        super().insert(key, held, latency, transfer)
        self._saved[key] = latency + transfer

    def remove(self, key: Hashable) -> None:
        super().remove(key)
        self._saved.pop(key, None)

    evicted = remove

    def _rate(self, key: Hashable, saved: float) -> float:
        return saved / max(1.0, self.next_use(key) - self.now())

    def victims(self, nbytes: int, evictable: Callable[[Hashable], bool] | None) -> list | None:
        self._flush()
        ranked = sorted((k for k in self._resident if evictable is None or evictable(k)),
                        key=lambda k: self._rate(k, self._saved[k]) / self._resident[k])
        return _first_covering(ranked, self._resident, nbytes)

    def loss(self, victims: Iterable) -> float:
        return sum(self._rate(v, self._saved[v]) for v in victims)

    def admit(self, key: Hashable, latency: float, transfer: float, victims: Iterable,
              already_lost: float = 0.0) -> bool:
        victims = list(victims)
        if not victims and not already_lost:
            return True
        return self._rate(key, latency + transfer) > already_lost + self.loss(victims)

    def order(self) -> list:
        self._flush()
        held = {**self._resident, **self._busy}
        return sorted(held, key=lambda k: self._rate(k, self._saved[k]) / held[k])


def _policy(name: str, clock: _Clock) -> Any:
    if name == "benefit":
        return BenefitPolicy()
    if name == "lru":
        return LruPolicy()
    if name == "belady":
        return BeladyPolicy(clock.next_use)
    if name == "oracle":
        return OraclePolicy(clock.next_use, lambda: clock.position)
    raise ValueError(f"unknown policy {name!r}: use one of {', '.join(POLICIES)}")


POLICIES = ("benefit", "lru", "belady", "oracle")


class _ScanReplay:
    """One scan through the cache, in the order PageStreamer and the fused resident path call it."""

    def __init__(self, cache: DevicePageCache, clock: _Clock, scan: ScanRef, depth: int,
                 seen: dict | None = None) -> None:
        self.cache, self.clock, self.scan, self.depth = cache, clock, scan, depth
        # gpu_cache_admission='reuse': (table, version) -> columns scanned on the connection
        # (``DeviceResources.scanned_columns``); None: 'first'
        self.seen = seen
        self.budget = cache.budget
        self.link = 0
        self.hits = 0
        self.short = 0  # bytes of pages no budget room was found for (``_transient``)
        self._positions: dict[PageKey, int] = {}
        self._group: list[PageKey] | None = None
        self._through = False

    def run(self, start: int) -> int:
        """Replay the scan whose first page access is trace position ``start``; returns the position
        after its last access (dictionaries count after the pages)."""
        pages = self.scan.pages()
        for i, p in enumerate(pages):
            self._positions[p.key] = start + i
        after = start + len(pages)
        for i, d in enumerate(self.scan.dictionaries):
            self._positions[d.key] = after + i
        self._dicts = {d.key.column: d for d in self.scan.dictionaries}
        # PageStreamer._first_reuse: a scan that fits in the cache judges a first read as if its
        # query ran again (here from the scan's own pages, there from the manifest's bound)
        need = sum(p.held for p in pages) + sum(d.held for d in self.scan.dictionaries)
        fits = need <= self.cache.capacity_bytes - self.cache.kept_bytes()
        self._first_reuse = len(pages) if fits else None
        self._dict_pins: list[PageKey] = []
        self._dict_transient = 0
        try:
            if not self._resident(pages):
                if self._first_scan(pages):
                    self._stream(through=True)
                elif not self._fill(pages):
                    self._stream()
        finally:
            for key in self._dict_pins:
                self.cache.unpin(key)
            if self._dict_transient:
                self.budget.release(self._dict_transient)
        return after + len(self.scan.dictionaries)

    def _at(self, key: PageKey) -> None:
        self.clock.position = self._positions[key]

    # the fused resident path (exec/fusion_run.py _run_resident, scan_device.resident_pages / warm_fill)
    def _resident(self, pages: list[PageRef]) -> bool:
        keys = [p.key for p in pages]
        if self.cache.peek_many(keys) is None:
            return False
        if pages:
            self._at(pages[-1].key)
        self.cache.touch_many(keys, sum(p.held for p in pages), None)
        self.hits += len(pages)
        return True

    def _first_scan(self, pages: list[PageRef]) -> bool:
        """``scan_device.first_scan``: under gpu_cache_admission='reuse', the connection's first scan
        of these columns, none of its pages cached, passes through (streamed as route 'copy': the
        device cache neither read nor filled)."""
        if self.seen is None:
            return False
        table, version, names = self.scan.columns()
        got = self.seen.setdefault((table, version), set())
        if got.issuperset(names):
            return False
        got.update(names)
        cache = self.cache
        return not (len(cache) and any(p.key in cache for p in pages))

    def _fill(self, pages: list[PageRef]) -> bool:
        cache = self.cache
        if sum(p.held for p in pages) > cache.capacity_bytes - cache.pinned_bytes():
            return False
        for p in pages:
            if p.key in cache:
                continue
            self._at(p.key)
            if not cache.reserve(p.held, key=p.key, link_bytes=p.link, first_reuse=len(pages)):
                return False
            cache.record_access(p.key)
            cache.put(p.key, _Value(p.held), p.held, reserved=True, link_bytes=p.link, first_reuse=len(pages))
            self.link += p.link
            self._dictionary(p.key.column)
        return self._resident(pages)

    # PageStreamer (backend/gpu/stream.py): schedule / deliver / retire with ``depth`` ahead
    def _stream(self, through: bool = False) -> None:
        """``through``: route 'copy' (a first scan passing through): every page is copied and held
        transiently, the device cache is neither asked nor filled (it still gives memory back)."""
        self._through = through
        rgs = self.scan.row_groups
        pending = [self._schedule(rgs[i]) for i in range(min(self.depth, len(rgs)))]
        nxt = len(pending)
        current = None
        for _ in range(len(rgs)):
            rg = pending.pop(0)
            self._deliver(rg)
            if current is not None:
                self._retire(current)
            current = rg
            if nxt < len(rgs):
                pending.append(self._schedule(rgs[nxt]))
                nxt += 1
        if current is not None:
            self._retire(current)

    def _schedule(self, pages: list[PageRef]) -> list[list]:
        out = []
        for p in pages:
            self._at(p.key)
            hit = not self._through and self.cache.get(p.key, pin=True) is not None
            self.hits += hit
            out.append([p, hit, 0])  # page, cached (pinned), transient bytes
        return out

    def _deliver(self, rg: list[list]) -> None:
        cache = self.cache
        for entry in rg:
            p, cached, _ = entry
            if cached:
                continue
            self._at(p.key)
            if not self._through and cache.reserve(p.held, key=p.key, link_bytes=p.link,
                                                   first_reuse=self._first_reuse):
                entry[1] = True
            else:
                entry[2] = self._transient(p.held)
            self.link += p.link
            self._dictionary(p.key.column)  # decoding the page needs its column's dictionary
            if entry[1]:
                cache.put(p.key, _Value(p.held), p.held, pin=True, reserved=True, link_bytes=p.link,
                          first_reuse=self._first_reuse)

    def _transient(self, nbytes: int) -> int:
        """Hold ``nbytes`` for a page the cache does not keep (evicting cached pages when the budget
        is short); the bytes held: 0 when even that does not make room (the GPU would fail over or
        wait for its consumer: counted in ``short``, nothing held)."""
        if not self.budget.try_reserve(nbytes):
            self.cache.make_room(nbytes)
            if not self.budget.try_reserve(nbytes):
                self.short += nbytes
                return 0
        return nbytes

    def _retire(self, rg: list[list]) -> None:
        for p, cached, transient in rg:
            if cached:
                self.cache.unpin(p.key)
            if transient:
                self.budget.release(transient)

    def _dictionary(self, column: str) -> None:
        """``PageStreamer._dictionary``: a string column's dictionary, once per scan: a cache hit
        (pinned), else moved and cached (not judged by the policy) or held transiently."""
        d = self._dicts.pop(column, None)
        if d is None:
            return
        cache = self.cache
        self._at(d.key)
        if not self._through and cache.get(d.key, pin=True) is not None:
            self._dict_pins.append(d.key)
            return
        self.link += d.link
        if not self._through and cache.reserve(d.held):
            cache.put(d.key, _Value(d.held), d.held, pin=True, reserved=True)
            self._dict_pins.append(d.key)
            return
        self._dict_transient += self._transient(d.held)


def replay(queries: list[QueryRef], limit_bytes: int, policy: str = "benefit", depth: int = DEPTH,
           share: float = CACHE_SHARE, make_cache: Callable[..., DevicePageCache] | None = None,
           admission: str = "reuse") -> ReplayResult:
    """Replay ``queries`` (each run once, in order, on one connection: the GPU tier persists) under
    ``gpu_memory_limit`` = ``limit_bytes``, the cache holding ``share`` of it, with the connection
    option ``gpu_cache_admission`` = ``admission``."""
    from hetdb.cache.router import check_admission

    check_admission(admission)
    seen: dict | None = {} if admission == "reuse" else None
    from hetdb.backend.gpu.memory import DeviceMemoryBudget

    clock = _Clock(queries)
    budget = DeviceMemoryBudget(int(limit_bytes))
    make = make_cache or DevicePageCache
    cache = make(budget, share=share, policy=_policy(policy, clock))
    links, hits, decisions = [], [], []
    position = short = 0
    t0 = time.perf_counter()
    for q in queries:
        st = cache.stats
        before = (st.admitted, st.evictions, st.bypassed)
        link = hit = 0
        largest = max(range(len(q.scans)), key=lambda i: len(q.scans[i].pages()), default=-1)
        working = 0
        for i, scan in enumerate(q.scans):
            if i == largest:
                working = _reserve_working(cache, budget, q.working, int(limit_bytes * OPERATOR_SHARE))
            r = _ScanReplay(cache, clock, scan, depth, seen)
            position = r.run(position)
            link += r.link
            hit += r.hits
            short += r.short
        if working:
            budget.release(working)
        links.append(link)
        hits.append(hit)
        st = cache.stats
        decisions.append(tuple(a - b for a, b in zip((st.admitted, st.evictions, st.bypassed), before)))
        if cache.reserved_bytes or budget.used_bytes != cache.used_bytes:
            raise AssertionError(f"replay of {q.name} left reservations behind")
    return ReplayResult(policy, int(limit_bytes), links, hits, decisions, cache, time.perf_counter() - t0, short)


def _reserve_working(cache: DevicePageCache, budget: Any, nbytes: int, share: int) -> int:
    """``DeviceMemoryManager``'s forced reservation of ``nbytes`` (within the operators' ``share``;
    a refused budget first evicts cached pages); returns the bytes reserved (0: counted as over the
    limit, as the manager does, so nothing is held)."""
    if nbytes <= 0 or nbytes > share:
        return 0
    if budget.try_reserve(nbytes):
        return nbytes
    cache.make_room(nbytes)
    return nbytes if budget.try_reserve(nbytes) else 0


def _first_covering(ranked: Iterable, sizes: dict, nbytes: int) -> list | None:
    """The shortest prefix of ``ranked`` whose sizes add up to ``nbytes`` (None: all of it does not)."""
    out, freed = [], 0
    for key in ranked:
        if freed >= nbytes:
            break
        out.append(key)
        freed += sizes[key]
    return out if freed >= nbytes else None
