"""HostPageCache: the pinned host-memory page tier, from which pages reach the GPU at PCIe speed.

Pages are raw page bytes (as on disk, padded to 4 KiB) kept in page-locked host memory, so a host→device
copy is a plain asynchronous DMA: no CPU copy and no checksum on the way (the CRC is checked once, when
the page is loaded from storage). The memory is one pool, grown in large chunks up to the tier's limit
and carved into fixed-size blocks; a page takes as many blocks as it needs. Blocks need not be adjacent
(so the pool never fragments), but pages are usually given address-contiguous blocks, and each page
exposes its bytes as ``runs`` — maximal contiguous views — so a 4 MiB page is typically one copy.

What stays is decided by benefit (``cache/policy.py``: disk read time saved per byte held, times how
often a page is read; a page worth less than what it would displace is not loaded here but read
through the streamer's ring, so a scan larger than the tier does not flush the pages other queries
keep reading); a pinned page (a copy out of it is in flight, or it is being loaded) and a kept page
(``keep``: a user's ``con.pin(..., tier="host")``) are never evicted or reused. The tier is process-wide (``shared_host_cache``) and keyed by
the table's version directory + column + row group, so a new connection in the same process finds
its pages warm; an entry also remembers its page's checksum and length and is only served for a page
that still has them (a database re-created at the same path does not see stale bytes).

Nothing here touches a GPU except the default allocator: ``allocate`` is the one injectable function
(plain aligned NumPy memory in CPU tests, CUDA pinned host memory for real).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb.cache.base import CacheStats, PageCache, PageKey
from hetdb.cache.policy import BenefitPolicy
from hetdb.cache.rates import Rates, shared_rates
from hetdb.io import ALIGN

# 64 KiB blocks: a page's last block wastes less than 64 KiB, and the pages a scan loads one after
# another lie back to back (gaps under a block), so a delivery copies a column's neighbouring pages
# together (backend/gpu/batch.py); with 1 MiB blocks SSB's ~1.2 MB pages took 2 MiB each
DEFAULT_BLOCK_BYTES = 64 << 10
DEFAULT_CHUNK_BYTES = 256 << 20
DEFAULT_RAM_FRACTION = 0.5
# stable groups whose last look-up ``lookup_many`` keeps (all dropped when there are more)
MAX_GROUPS = 4096

Allocate = Callable[[int], np.ndarray]


def pinned_allocate(nbytes: int) -> np.ndarray:
    """``nbytes`` of page-locked (CUDA pinned) host memory as a 4096-aligned uint8 array; the memory is
    returned to the system when the array (and every view of it) is gone."""
    import cupy

    mem = cupy.cuda.PinnedMemory(nbytes + ALIGN)
    raw = np.frombuffer(cupy.cuda.PinnedMemoryPointer(mem, 0), dtype=np.uint8, count=nbytes + ALIGN)
    start = (-raw.ctypes.data) % ALIGN
    return raw[start:start + nbytes]


def default_limit_bytes() -> int:
    """Half of the machine's physical memory (the tier's limit when no option sets one)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 8 << 30
    return int(ram * DEFAULT_RAM_FRACTION)


@dataclass(eq=False)
class HostPage:
    """One page's bytes in the tier. ``runs`` are contiguous views covering ``padded_length`` bytes in
    order; the first ``length`` bytes are the page. Valid while the caller holds a pin."""

    key: PageKey
    length: int
    padded_length: int
    checksum: int
    blocks: list[int]
    runs: list[np.ndarray]
    pins: int = 0
    ready: bool = False  # verified and visible to lookups (False while it is being loaded)
    kept: bool = False   # a user's pin (``keep``): never evicted until ``unkeep``
    # the chunk of the pool each run lies in (one allocation each): a copy may span two pages'
    # runs only inside one chunk (backend/gpu/batch.py merges a column's neighbouring pages)
    run_chunks: list[int] = field(default_factory=list, repr=False)
    _addresses: list[tuple[int, int]] | None = field(default=None, repr=False)
    # (checksum, length, padded_length): what ``matches`` compares, as one tuple (``lookup_many``
    # compares a group's pages with their locations' ``page_ident`` in one list comparison)
    ident: tuple[int, int, int] = field(init=False, repr=False)
    # ``addresses()`` and the chunk of each run (None unless known for every run), computed with the
    # page: what a batched delivery copies it from (backend/gpu/stream_batch.py reads them per page)
    source: list[tuple[int, int]] = field(init=False, repr=False)
    source_chunks: list[int] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.ident = (self.checksum, self.length, self.padded_length)
        self.source = self.addresses()
        chunks = self.run_chunks
        self.source_chunks = chunks if len(chunks) == len(self.runs) else None

    def addresses(self) -> list[tuple[int, int]]:
        """(address, bytes) of each run, computed once (a warm scan asks for every page it copies)."""
        got = self._addresses
        if got is None or len(got) != len(self.runs):
            got = self._addresses = [(int(r.ctypes.data), int(r.shape[0])) for r in self.runs]
        return got

    def matches(self, location: Any) -> bool:
        """Whether this entry holds the page at ``location`` (same checksum and sizes)."""
        return (self.checksum == location.checksum and self.length == location.length
                and self.padded_length == location.padded_length)

    def tobytes(self) -> bytes:
        """The page's ``length`` bytes (a copy; for tests and tools, not for the data path)."""
        return b"".join(bytes(r) for r in self.runs)[:self.length]


def page_ident(location: Any) -> tuple[int, int, int]:
    """(checksum, length, padded_length) of a PageLocation: what ``HostPage.ident`` must equal for the
    entry to hold that page."""
    return (location.checksum, location.length, location.padded_length)


@dataclass
class _Pool:
    """Fixed-size blocks carved from chunks of host memory; block ``b`` lies in chunk ``b // per``."""

    block_bytes: int
    chunks: list[np.ndarray] = field(default_factory=list)
    chunk_blocks: list[int] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # first block id of each chunk
    free: list[int] = field(default_factory=list)    # a stack; popping gives ascending ids in a fresh chunk
    total: int = 0

    def grow(self, blocks: int, allocate: Allocate) -> None:
        mem = allocate(blocks * self.block_bytes)
        if mem.ctypes.data % ALIGN:
            raise ValueError("the host page tier's allocator must return 4096-aligned memory")
        self.chunks.append(mem)
        self.chunk_blocks.append(blocks)
        self.starts.append(self.total)
        self.free.extend(range(self.total + blocks - 1, self.total - 1, -1))
        self.total += blocks

    def take(self, n: int) -> list[int]:
        ids = [self.free.pop() for _ in range(n)]
        return ids

    def give(self, ids: list[int]) -> None:
        # pushed back in reverse so the next ``take`` of the same size gets them in the same order
        self.free.extend(reversed(ids))

    def view(self, block: int) -> tuple[int, int]:
        """(chunk index, byte offset in the chunk) of a block."""
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:  # binary search: chunks may differ in size
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= block:
                lo = mid
            else:
                hi = mid - 1
        return lo, (block - self.starts[lo]) * self.block_bytes

    def runs(self, ids: list[int], nbytes: int, chunks: list[int] | None = None) -> list[np.ndarray]:
        """Contiguous views over ``ids`` (adjacent blocks of one chunk merged) covering ``nbytes``;
        ``chunks``: gets the chunk index of each run."""
        out: list[np.ndarray] = []
        left = nbytes
        i = 0
        while left > 0:
            chunk, off = self.view(ids[i])
            j = i + 1
            while (j < len(ids) and ids[j] == ids[j - 1] + 1
                   and self.view(ids[j])[0] == chunk):
                j += 1
            n = min(left, (j - i) * self.block_bytes)
            out.append(self.chunks[chunk][off:off + n])
            if chunks is not None:
                chunks.append(chunk)
            left -= n
            i = j
        return out


class HostPageCache(PageCache):
    """Raw pages in (pinned) host memory within ``limit_bytes``, placed by benefit; thread-safe.

    Loading protocol: ``acquire`` blocks for a page (pinned, invisible), fill ``runs``, verify, then
    ``commit`` (visible; returns the entry to use, which is another loader's if it won the race) or
    ``abort``. Readers ``lookup`` with pin=True and ``unpin_page`` once their copies have completed.
    """

    tier = "host"

    def __init__(self, limit_bytes: int, *, block_bytes: int = DEFAULT_BLOCK_BYTES,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES, allocate: Allocate | None = None,
                 rates: Rates | None = None) -> None:
        if block_bytes <= 0 or block_bytes % ALIGN:
            raise ValueError(f"block_bytes must be a positive multiple of {ALIGN}")
        if limit_bytes < 0:
            raise ValueError("limit_bytes must be >= 0")
        self.block_bytes = int(block_bytes)
        self._chunk_blocks = max(1, int(chunk_bytes) // self.block_bytes)
        self._capacity = int(limit_bytes) // self.block_bytes
        self._allocate = allocate or pinned_allocate
        self._pool = _Pool(self.block_bytes)
        self._entries: dict[PageKey, HostPage] = {}  # in insertion order
        self.policy = BenefitPolicy()
        self.rates = rates or shared_rates()
        self._assigned = 0   # blocks held by pages (entries and pages being loaded)
        self._reserved = 0   # blocks promised by reserve() that are still in the free list
        self._entry_blocks = 0
        self._stats = CacheStats()
        self._lock = threading.RLock()
        self._version = 0  # bumped whenever an entry comes or goes
        # id(keys) -> (keys, idents, _version, entries): a stable group's last look-up (``lookup_many``)
        self._groups: dict[int, tuple] = {}
        self.allocation_error: str | None = None  # why the pool stopped growing, if it did

    # ---- sizes -----------------------------------------------------------------------------------
    def blocks_for(self, nbytes: int) -> int:
        return max(1, -(-int(nbytes) // self.block_bytes))

    @property
    def capacity_bytes(self) -> int:
        return self._capacity * self.block_bytes

    @property
    def allocated_bytes(self) -> int:
        """Host memory the pool holds (chunks allocated so far)."""
        return self._pool.total * self.block_bytes

    @property
    def used_bytes(self) -> int:
        """Bytes of blocks held by cached entries."""
        return self._entry_blocks * self.block_bytes

    @property
    def held_bytes(self) -> int:
        """Bytes of blocks in use: entries, pages being loaded and reservations."""
        return (self._assigned + self._reserved) * self.block_bytes

    @property
    def stats(self) -> CacheStats:
        return self._stats

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = CacheStats()

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[PageKey]:
        """Cached keys, in the order they were committed."""
        with self._lock:
            return list(self._entries)

    def eviction_order(self) -> list[PageKey]:
        """Cached keys, next victim first (kept ones left out; pinned ones included)."""
        with self._lock:
            return self.policy.order()

    def entries(self) -> list[tuple[PageKey, int, bool]]:
        """(key, bytes held, kept) of every entry (for ``hetdb info`` and the cache table function)."""
        with self._lock:
            return [(k, len(p.blocks) * self.block_bytes, p.kept) for k, p in self._entries.items()]

    def pinned_bytes(self) -> int:
        """Bytes of entries that cannot be evicted now (pinned or kept)."""
        with self._lock:
            return sum(len(p.blocks) for p in self._entries.values() if p.pins or p.kept) * self.block_bytes

    def kept_bytes(self) -> int:
        with self._lock:
            return sum(len(p.blocks) for p in self._entries.values() if p.kept) * self.block_bytes

    def keep(self, key: PageKey) -> None:
        """Keep a cached page until ``unkeep`` (never evicted; counts against the limit)."""
        with self._lock:
            self._entries[key].kept = True
            self.policy.keep(key)

    def unkeep(self, key: PageKey) -> None:
        """Make a kept page evictable again (no-op when it is not cached)."""
        with self._lock:
            page = self._entries.get(key)
            if page is not None:
                page.kept = False
                self.policy.keep(key, False)

    # ---- lookups ---------------------------------------------------------------------------------
    def get(self, key: PageKey, pin: bool = False) -> HostPage | None:
        return self.lookup(key, None, pin)

    def lookup(self, key: PageKey, location: Any = None, pin: bool = False) -> HostPage | None:
        """The entry for ``key`` (None on a miss). With ``location`` (a PageLocation) an entry whose
        checksum or size differs is a miss, and is dropped if nobody reads it."""
        with self._lock:
            page = self._entries.get(key)
            if page is not None and location is not None and not page.matches(location):
                if not page.pins and not page.kept:
                    self._drop(key)
                page = None
            self.policy.record(key)
            if page is None:
                self._stats.misses += 1
                return None
            self._stats.hits += 1
            self._stats.hit_bytes += page.length
            if pin:
                page.pins += 1
            return page

    def lookup_many(self, keys: list[PageKey], locations: list[Any], stable: bool = False,
                    idents: list[tuple[int, int, int]] | None = None) -> list[HostPage] | None:
        """Every entry of ``keys`` (each matching its PageLocation), each pinned once, under one lock;
        None, pinning nothing and counting nothing, when any of them is missing or stale (the caller
        then routes page by page). Saves a scan the per-page lookups of the steady state.
        ``stable``: ``keys`` is the same list object every time these pages are asked for together
        (a scan's memoized group), so their accesses are recorded lazily, as one group
        (``BenefitPolicy.touch_group``), instead of page by page. ``idents``: the locations'
        ``page_ident``s (computed once with the group): the pages are checked against them in one
        comparison; a stable group asked again with no entry come or gone since is answered
        without a look-up per page (the list returned is then the one returned before: read it,
        never change it)."""
        with self._lock:
            # a stable group found whole before, with no entry come or gone since: the same entries
            memo = stable and idents is not None
            last = self._groups.get(id(keys)) if memo else None
            if last is not None and last[0] is keys and last[1] is idents and last[2] == self._version:
                got, nbytes = last[3], last[4]
            else:
                got = list(map(self._entries.get, keys))
                if None in got:
                    return None
                if idents is None:
                    idents = list(map(page_ident, locations))
                if [page.ident for page in got] != idents:
                    return None
                nbytes = sum(page.length for page in got)
                if memo:
                    if len(self._groups) >= MAX_GROUPS:
                        self._groups.clear()
                    self._groups[id(keys)] = (keys, idents, self._version, got, nbytes)
            if stable:
                self.policy.touch_group(keys)
            else:
                for key in keys:
                    self.policy.record(key)
            for page in got:
                page.pins += 1
            self._stats.hit_bytes += nbytes
            self._stats.hits += len(got)
            return got

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    # ---- loading ---------------------------------------------------------------------------------
    def acquire(self, key: PageKey, length: int, padded_length: int, checksum: int,
                force: bool = False) -> HostPage | None:
        """Blocks for a page about to be loaded (evicting lower-benefit unpinned entries, growing the
        pool), pinned once and not yet visible; None when it cannot fit or is worth less than what it
        would displace (then read it some other way). A scan larger than the tier thus keeps the part
        it loaded first and the pages other scans read more often, and streams the rest. ``force``:
        no admission test (a user's pin loading it)."""
        return self._acquire(key, length, padded_length, checksum, False, force)

    def _acquire(self, key: PageKey, length: int, padded_length: int, checksum: int,
                 reserved: bool, force: bool = False) -> HostPage | None:
        n = self.blocks_for(padded_length)
        with self._lock:
            if reserved:
                if n > self._reserved:
                    raise ValueError("put(reserved=True) without a matching reserve()")
                self._reserved -= n  # the reservation kept these blocks in the free list
            elif not self._make_room(n, None if force else key, padded_length):
                self._stats.rejected += 1
                return None
            ids = self._pool.take(n)
            self._assigned += n
            chunks: list[int] = []
            runs = self._pool.runs(ids, padded_length, chunks)
            return HostPage(key, int(length), int(padded_length), int(checksum), ids, runs, pins=1,
                            run_chunks=chunks)

    def commit(self, page: HostPage) -> HostPage:
        """Make a loaded, verified page visible; returns the entry to read from (pinned once for the
        caller): ``page`` itself, or the entry another loader committed first (``page`` is freed)."""
        with self._lock:
            existing = self._entries.get(page.key)
            if existing is not None and existing is not page:
                if existing.matches(page):
                    self._free(page)
                    existing.pins += 1
                    return existing
                if existing.pins:
                    # a stale entry (older bytes at this path) still being read: the loader reads its
                    # own copy, unlisted, freed at its last unpin
                    return page
                self._drop(page.key)
            page.ready = True
            self._entries[page.key] = page
            self._version += 1
            disk = self.rates.disk
            self.policy.insert(page.key, len(page.blocks) * self.block_bytes, disk.latency_s,
                               disk.transfer_seconds(page.padded_length))
            self._entry_blocks += len(page.blocks)
            self._stats.inserted_bytes += page.length
            self._stats.admitted += 1
            return page

    def abort(self, page: HostPage) -> None:
        """Return the blocks of a page whose load failed."""
        with self._lock:
            self._free(page)

    def unpin_page(self, page: HostPage) -> None:
        """Undo one pin of ``page`` (after the copies out of it completed)."""
        with self._lock:
            if page.pins <= 0:
                raise ValueError(f"unpin of {page.key} which is not pinned")
            page.pins -= 1
            if not page.pins and self._entries.get(page.key) is not page:
                self._free(page)  # an unlisted page (stale or dropped) dies with its last reader

    def unpin_pages(self, pages: list[HostPage]) -> None:
        """``unpin_page`` of each of ``pages`` (a delivery's, once its copies completed) under one lock."""
        with self._lock:
            for page in pages:
                n = page.pins
                if n <= 0:
                    raise ValueError(f"unpin of {page.key} which is not pinned")
                page.pins = n - 1
                if n == 1 and not page.ready:  # (``ready``: listed among the entries)
                    self._free(page)

    def unpin(self, key: PageKey) -> None:
        with self._lock:
            page = self._entries.get(key)
            if page is None:
                raise ValueError(f"unpin of {key} which is not cached")
            self.unpin_page(page)

    # ---- the PageCache interface for callers that hand over bytes ----------------------------------
    def reserve(self, nbytes: int) -> bool:
        if nbytes < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        n = self.blocks_for(nbytes)
        with self._lock:
            if not self._make_room(n):
                return False
            self._reserved += n
            return True

    def release(self, nbytes: int) -> None:
        n = self.blocks_for(nbytes)
        with self._lock:
            if n > self._reserved:
                raise ValueError(f"releasing {n} reserved blocks but only {self._reserved} are reserved")
            self._reserved -= n

    def put(self, key: PageKey, value: Any, nbytes: int, pin: bool = False, reserved: bool = False) -> bool:
        """Copy the host bytes ``value`` (``nbytes`` of them) into the tier."""
        import zlib

        data = np.ascontiguousarray(value).reshape(-1).view(np.uint8)[:nbytes]
        padded = -(-int(nbytes) // ALIGN) * ALIGN
        page = self._acquire(key, nbytes, padded, zlib.crc32(data) & 0xFFFFFFFF, reserved)
        if page is None:
            return False
        done = 0
        for run in page.runs:
            n = min(run.shape[0], nbytes - done)
            run[:n] = data[done:done + n]
            done += n
        got = self.commit(page)
        if not pin:
            self.unpin_page(got)
        return True

    # ---- eviction --------------------------------------------------------------------------------
    def evict(self, nbytes: int) -> int:
        with self._lock:
            return self._evict(self.blocks_for(nbytes) if nbytes > 0 else 0) * self.block_bytes

    def clear(self) -> None:
        """Drop every page that is neither pinned nor kept. The free blocks are then handed out in
        address order again, so the pages loaded next lie in few runs: blocks given back in the
        order pages were committed (I/O threads finish out of order) split each page of the next
        cold scan into ~2 runs (a 460-page scan of 1.0-2.2 MB pages, 64 KiB blocks)."""
        with self._lock:
            for key in [k for k, p in self._entries.items() if not p.pins and not p.kept]:
                self._drop(key)
            self._pool.free.sort(reverse=True)  # (a stack: the lowest block is taken first)

    def release_memory(self) -> bool:
        """Drop every unpinned entry and, when no block is in use, give the pool's memory back; True
        if the memory was returned."""
        with self._lock:
            self.clear()
            if self._assigned or self._reserved:
                return False
            self._pool = _Pool(self.block_bytes)
            self.allocation_error = None
            return True

    def resize(self, limit_bytes: int) -> None:
        """Change the limit; shrinking evicts lowest-benefit unpinned entries down to it (the pool's
        chunks stay allocated until ``release_memory``)."""
        with self._lock:
            self._capacity = max(0, int(limit_bytes)) // self.block_bytes
            over = self._assigned + self._reserved - self._capacity
            if over > 0:
                self._evict(over)

    # ---- internals (lock held) ---------------------------------------------------------------------
    def _evictable(self, key: PageKey) -> bool:
        page = self._entries[key]
        return not page.pins and not page.kept

    def _make_room(self, n: int, key: PageKey | None = None, padded_length: int = 0) -> bool:
        """Room for ``n`` blocks; with ``key``, only if that page is worth more than its victims."""
        if n > self._capacity:
            return False
        over = self._assigned + self._reserved + n - self._capacity
        if over > 0:
            if key is None:
                victims = self.policy.victims(over * self.block_bytes, self._evictable)
                if victims is None:
                    return False
            else:
                # one pass: stops at the victim that tips the balance (a first read ranks nothing)
                disk = self.rates.disk
                victims, _ = self.policy.displace(key, disk.latency_s, disk.transfer_seconds(padded_length),
                                                  over * self.block_bytes, self._evictable)
                if victims is None:
                    self._stats.bypassed += 1
                    return False
            for victim in victims:
                self._evict_page(victim)
        short = n - (len(self._pool.free) - self._reserved)
        if short > 0:
            room = self._capacity - self._pool.total
            grow = min(room, max(short, self._chunk_blocks))
            if self.allocation_error is not None or grow < short:
                return False
            try:
                self._pool.grow(grow, self._allocate)
            except (MemoryError, RuntimeError, OSError) as e:  # CuPy's CUDA errors are RuntimeErrors
                # pinned memory is a limited system resource: stop growing, serve from what we have
                self.allocation_error = f"{type(e).__name__}: {e}"
                self._capacity = self._pool.total
                return self._make_room(n, key, padded_length)
        return True

    def _evict(self, blocks: int) -> int:
        """Evict lowest-benefit evictable pages until ``blocks`` are freed (all of them if they hold
        fewer); returns the blocks freed."""
        victims = self.policy.victims(blocks * self.block_bytes, self._evictable)
        if victims is None:
            victims = [k for k in self.policy.order() if self._evictable(k)]
        return sum(self._evict_page(v) for v in victims)

    def _evict_page(self, key: PageKey) -> int:
        page = self._entries[key]
        blocks = len(page.blocks)
        self._stats.evictions += 1
        self._stats.evicted_bytes += page.length
        self._drop(key)
        return blocks

    def _drop(self, key: PageKey) -> None:
        self._version += 1
        self.policy.remove(key)
        page = self._entries.pop(key)
        self._entry_blocks -= len(page.blocks)
        page.ready = False
        if not page.pins:
            self._free(page)

    def _free(self, page: HostPage) -> None:
        if page.blocks:
            self._pool.give(page.blocks)
            self._assigned -= len(page.blocks)
            page.blocks = []
            page.runs = []


_shared: HostPageCache | None = None
_shared_lock = threading.Lock()


def shared_host_cache(limit_bytes: int | str | None = None) -> HostPageCache | None:
    """The process-wide pinned host tier. ``limit_bytes`` None keeps the current limit (half the RAM
    when first created); a number resizes it; 0 means "no host tier" for the caller (None returned,
    the shared tier itself is kept for others)."""
    global _shared
    if isinstance(limit_bytes, str):
        from hetdb.config import parse_bytes

        limit_bytes = parse_bytes(limit_bytes)
    if limit_bytes is not None and int(limit_bytes) <= 0:
        return None
    with _shared_lock:
        if _shared is None:
            _shared = HostPageCache(default_limit_bytes() if limit_bytes is None else int(limit_bytes))
        elif limit_bytes is not None and int(limit_bytes) != _shared.capacity_bytes:
            _shared.resize(int(limit_bytes))
        return _shared


def existing_shared_host_cache() -> HostPageCache | None:
    """The process-wide tier if one was created (never creates it)."""
    return _shared


def clear_shared_host_cache(release_memory: bool = False) -> None:
    """Empty the process-wide tier (a "cold" start); optionally return its pinned memory too."""
    cache = _shared
    if cache is None:
        return
    cache.__dict__.pop("decoded_for_cpu", None)  # (pages co-processing's CPU workers decoded out of it)
    if release_memory:
        cache.release_memory()
    else:
        cache.clear()
