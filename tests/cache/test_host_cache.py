"""HostPageCache bookkeeping: blocks carved from chunks, LRU within the limit, pins, the load protocol
(acquire / commit / abort), stale entries, resizing, the PageCache interface and thread safety.

The tier's one allocation function is injected: here plain 4096-aligned NumPy memory (the GPU run uses
CUDA pinned memory through the same code).
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass

import numpy as np
import pytest

from hetdb.cache import HostPageCache, PageKey
from hetdb.io import aligned_empty

BLOCK = 8192


class Allocations:
    """The injected allocator: real aligned host memory, recording what was asked for."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __call__(self, nbytes: int) -> np.ndarray:
        self.sizes.append(nbytes)
        return aligned_empty(nbytes)


@dataclass(frozen=True)
class Loc:
    length: int
    padded_length: int
    checksum: int


def key(rg: int, column: str = "a", path: str = "/db/tables/t/v1") -> PageKey:
    return PageKey(path, 1, column, rg)


def payload(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def load(cache: HostPageCache, k: PageKey, data: np.ndarray, pin: bool = False, looked_up: bool = False):
    """Load ``data`` as a page the way the streamer does: its look-up (a miss) counts an access (done
    here unless ``looked_up``), then acquire, fill the runs, commit."""
    padded = -(-data.shape[0] // 4096) * 4096
    if not looked_up:
        cache.policy.record(k)
    page = cache.acquire(k, data.shape[0], padded, zlib.crc32(data))
    if page is None:
        return None
    done = 0
    for run in page.runs:
        n = min(run.shape[0], data.shape[0] - done)
        run[:n] = data[done:done + n]
        done += n
    got = cache.commit(page)
    if not pin:
        cache.unpin_page(got)
    return got


def loc_of(data: np.ndarray) -> Loc:
    return Loc(data.shape[0], -(-data.shape[0] // 4096) * 4096, zlib.crc32(data))


def tier(limit_blocks: int, chunk_blocks: int = 4, alloc: Allocations | None = None) -> HostPageCache:
    return HostPageCache(limit_blocks * BLOCK, block_bytes=BLOCK, chunk_bytes=chunk_blocks * BLOCK,
                         allocate=alloc or Allocations())


def test_pages_round_trip_through_blocks_and_runs():
    alloc = Allocations()
    cache = tier(16, chunk_blocks=4, alloc=alloc)
    pages = {rg: payload(3 * BLOCK + 100 * rg + 5, rg) for rg in range(3)}
    for rg, data in pages.items():
        assert load(cache, key(rg), data) is not None
    compared = 0
    for rg, data in pages.items():
        page = cache.lookup(key(rg), loc_of(data))
        assert page is not None and page.ready
        assert page.tobytes() == data.tobytes()
        assert sum(r.shape[0] for r in page.runs) == page.padded_length
        assert all(r.ctypes.data % 4096 == 0 for r in page.runs)  # O_DIRECT-able, DMA-able
        compared += 1
    assert compared == 3
    # 3 pages of 4 blocks from chunks of 4 blocks: each page lies in one chunk, so it is one run
    assert alloc.sizes == [4 * BLOCK] * 3
    assert all(len(cache.get(key(rg)).runs) == 1 for rg in range(3))
    assert cache.used_bytes == 12 * BLOCK and cache.allocated_bytes == 12 * BLOCK
    s = cache.stats
    assert (s.hits, s.misses) == (6, 0) and s.inserted_bytes == sum(d.shape[0] for d in pages.values())


def test_page_on_scattered_blocks_has_several_runs():
    cache = tier(4, chunk_blocks=2)
    for rg in range(3):
        load(cache, key(rg), payload(BLOCK, rg))  # blocks 0, 1 (first chunk) and 2 (second chunk)
    data = payload(2 * BLOCK - 300, 9)
    cache.policy.record(key(9))  # read before: it comes back, so it may displace a page read once
    page = load(cache, key(9), data)  # evicts page 0: gets blocks 0 and 3, in two chunks
    assert page is not None and page.blocks == [0, 3] and len(page.runs) == 2
    assert page.tobytes() == data.tobytes()
    big = HostPageCache(16 * BLOCK, block_bytes=BLOCK, chunk_bytes=2 * BLOCK, allocate=Allocations())
    data = payload(5 * BLOCK - 300, 1)
    page = load(big, key(0), data)  # larger than a chunk: one chunk of its size, one run
    assert page is not None and len(page.runs) == 1 and page.tobytes() == data.tobytes()


def test_eviction_by_benefit_within_limit():
    cache = tier(8)
    for rg in range(4):
        assert load(cache, key(rg), payload(2 * BLOCK, rg)) is not None
    cache.get(key(0))  # page 0 is read twice: worth more than pages 1-3
    cache.get(key(2))
    cache.get(key(2))  # page 2 three times
    assert cache.eviction_order()[:2] == [key(1), key(3)]  # read once each: the oldest goes first
    assert load(cache, key(9), payload(2 * BLOCK, 9)) is None  # read once: not worth page 1
    assert cache.stats.bypassed == 1 and cache.stats.evictions == 0
    data = payload(2 * BLOCK, 9)
    assert load(cache, key(9), data) is not None  # its second read: now worth more than page 1
    assert set(cache.keys()) == {key(0), key(2), key(3), key(9)}
    assert cache.stats.evictions == 1 and cache.held_bytes == 8 * BLOCK
    assert cache.get(key(9)).tobytes() == data.tobytes()  # reused blocks hold the new page
    assert cache.allocated_bytes <= 8 * BLOCK
    assert load(cache, key(10), payload(9 * BLOCK, 3)) is None  # larger than the whole tier
    assert cache.stats.rejected == 2


def test_pinned_and_loading_pages_are_never_evicted():
    cache = tier(4)
    a = load(cache, key(0), payload(2 * BLOCK, 0), pin=True)
    loading = cache.acquire(key(1), 2 * BLOCK, 2 * BLOCK, 0)  # being read: holds its blocks
    assert a is not None and loading is not None
    assert cache.acquire(key(2), BLOCK, BLOCK, 0) is None
    assert cache.evict(10 * BLOCK) == 0
    cache.abort(loading)
    assert key(1) not in cache
    assert load(cache, key(2), payload(BLOCK, 2)) is not None
    cache.unpin_page(a)
    cache.policy.record(key(3))
    assert load(cache, key(3), payload(3 * BLOCK, 3)) is not None
    assert key(0) not in cache and key(3) in cache
    assert cache.pinned_bytes() == 0
    with pytest.raises(ValueError, match="not pinned"):
        cache.unpin_page(a)


def test_second_loader_gets_the_first_entry():
    cache = tier(8)
    data = payload(2 * BLOCK, 5)
    first = cache.acquire(key(0), data.shape[0], data.shape[0], zlib.crc32(data))
    second = cache.acquire(key(0), data.shape[0], data.shape[0], zlib.crc32(data))
    for page in (first, second):
        page.runs[0][:] = data
    assert cache.commit(first) is first
    assert cache.commit(second) is first  # the loser's blocks go back; it reads the winner's
    assert first.pins == 2 and second.blocks == []
    cache.unpin_page(first)
    cache.unpin_page(first)
    assert cache.held_bytes == 2 * BLOCK == cache.used_bytes


def test_stale_entry_is_a_miss_and_replaced():
    cache = tier(8)
    old, new = payload(BLOCK, 1), payload(BLOCK, 2)
    load(cache, key(0), old)
    assert cache.lookup(key(0), loc_of(new)) is None  # same path, different bytes: not served
    assert key(0) not in cache  # and dropped, since nobody read it
    load(cache, key(0), new)
    assert cache.lookup(key(0), loc_of(new)).tobytes() == new.tobytes()


def test_stale_entry_in_use_stays_until_unpinned():
    cache = tier(8)
    old, new = payload(BLOCK, 1), payload(BLOCK, 2)
    reader = load(cache, key(0), old, pin=True)
    assert cache.lookup(key(0), loc_of(new)) is None
    mine = load(cache, key(0), new, pin=True)
    assert mine is not reader and mine.tobytes() == new.tobytes()
    assert cache.get(key(0)) is reader  # the listed entry is still the one being read
    cache.unpin_page(mine)  # unlisted: freed at its last unpin
    assert cache.held_bytes == BLOCK
    cache.unpin_page(reader)
    assert cache.lookup(key(0), loc_of(new)) is None and len(cache) == 0
    assert cache.held_bytes == 0


def test_resize_clear_and_release_memory():
    alloc = Allocations()
    cache = tier(8, alloc=alloc)
    for rg in range(4):
        load(cache, key(rg), payload(2 * BLOCK, rg))
    cache.resize(4 * BLOCK)
    assert cache.capacity_bytes == 4 * BLOCK and cache.keys() == [key(2), key(3)]
    pinned = load(cache, key(2), payload(2 * BLOCK, 2))
    assert pinned is cache.get(key(2), pin=True)
    assert not cache.release_memory()  # a page is pinned: memory stays
    assert cache.keys() == [key(2)]
    cache.unpin(key(2))
    assert cache.release_memory()
    assert cache.allocated_bytes == 0 and len(cache) == 0
    assert load(cache, key(7), payload(BLOCK, 7)) is not None  # grows again on demand
    assert len(alloc.sizes) == 3


def test_page_cache_interface_reserve_put_release():
    cache = tier(4)
    assert cache.reserve(3 * BLOCK)
    assert not cache.reserve(2 * BLOCK)  # only one block left
    data = payload(3 * BLOCK - 10, 4)
    assert cache.put(key(0), data, data.shape[0], reserved=True)
    assert cache.get(key(0)).tobytes() == data.tobytes()
    assert cache.reserve(BLOCK)
    cache.release(BLOCK)
    with pytest.raises(ValueError):
        cache.release(BLOCK)
    assert cache.put(key(1), payload(BLOCK, 1), BLOCK, pin=True)
    assert not cache.put(key(2), payload(4 * BLOCK, 2), 4 * BLOCK)  # cannot evict the pinned page
    cache.unpin(key(1))
    cache.clear()
    assert len(cache) == 0 and cache.held_bytes == 0


def test_allocation_failure_stops_growth():
    def refuse_second(nbytes: int, calls: list[int] = []) -> np.ndarray:  # noqa: B006 - call counter
        calls.append(nbytes)
        if len(calls) > 1:
            raise MemoryError("no more pinned memory")
        return aligned_empty(nbytes)

    cache = HostPageCache(16 * BLOCK, block_bytes=BLOCK, chunk_bytes=4 * BLOCK, allocate=refuse_second)
    assert load(cache, key(0), payload(4 * BLOCK, 0)) is not None
    cache.policy.record(key(1))  # read before: worth displacing page 0
    assert load(cache, key(1), payload(BLOCK, 1)) is not None  # evicts key 0 within the first chunk
    assert "no more pinned memory" in cache.allocation_error
    assert cache.capacity_bytes == 4 * BLOCK and key(1) in cache


def test_concurrent_loaders_and_readers():
    cache = tier(32, chunk_blocks=8)
    pages = {rg: payload(BLOCK + 64 * rg, rg) for rg in range(24)}
    errors: list[str] = []
    checked = [0]
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(200):
            rg = int(rng.integers(0, len(pages)))
            data = pages[rg]
            page = cache.lookup(key(rg), loc_of(data), pin=True)
            if page is None:
                page = load(cache, key(rg), data, pin=True)
            if page is None:
                continue
            if page.tobytes() != data.tobytes():
                errors.append(f"page {rg} has wrong bytes")
            with lock:
                checked[0] += 1
            cache.unpin_page(page)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert checked[0] > 0
    assert cache.pinned_bytes() == 0 and cache.held_bytes == cache.used_bytes <= cache.capacity_bytes


def test_shared_tier_is_process_wide_and_resizable():
    from hetdb.cache.host_cache import clear_shared_host_cache, default_limit_bytes, shared_host_cache

    a = shared_host_cache()
    assert a is shared_host_cache() and a.capacity_bytes > 0
    assert shared_host_cache(0) is None  # a connection may opt out; the shared tier stays
    assert shared_host_cache() is a
    shared_host_cache("64MB")
    assert a.capacity_bytes == 64 << 20
    shared_host_cache(default_limit_bytes())
    clear_shared_host_cache(release_memory=True)
    assert len(a) == 0


def test_scan_larger_than_the_tier_passes_through():
    cache = tier(4)

    def read_hot() -> None:  # a working set of two pages
        for rg in (0, 1):
            if cache.lookup(key(rg, "hot")) is None:
                load(cache, key(rg, "hot"), payload(BLOCK, rg), looked_up=True)

    for _ in range(3):
        read_hot()
    loaded = []
    for rg in range(6):  # a one-off scan of 6 pages through a tier of 4
        if load(cache, key(rg), payload(BLOCK, rg)) is not None:
            loaded.append(rg)
    assert loaded == [0, 1]  # the free room; then the scan keeps its first pages, streams the rest
    assert key(0, "hot") in cache and key(1, "hot") in cache
    assert cache.stats.bypassed == 4 and cache.stats.evictions == 0
    read_hot()
    for rg in range(6):  # another one-off scan (another table) once the working set was read again
        load(cache, key(rg, "other"), payload(BLOCK, rg))
    assert key(0, "hot") in cache and key(1, "hot") in cache and cache.stats.evictions == 0


def test_kept_pages_are_never_evicted():
    cache = tier(4)
    load(cache, key(0), payload(2 * BLOCK, 0))
    cache.keep(key(0))
    assert cache.kept_bytes() == 2 * BLOCK == cache.pinned_bytes()
    for _ in range(5):  # hot pages that would displace anything not kept
        for rg in (1, 2):
            if cache.lookup(key(rg)) is None:
                load(cache, key(rg), payload(2 * BLOCK, rg), looked_up=True)
    assert cache.evict(100 * BLOCK) == 2 * BLOCK  # only the hot page that got in can go
    cache.clear()
    assert key(0) in cache and cache.entries() == [(key(0), 2 * BLOCK, True)]
    cache.resize(BLOCK)  # shrinking below a kept page keeps it
    assert key(0) in cache
    cache.unkeep(key(0))
    cache.clear()
    assert len(cache) == 0


def test_lookup_many_pins_all_or_nothing():
    cache = tier(limit_blocks=16)
    datas = [payload(5000, s) for s in range(3)]
    for i, d in enumerate(datas):
        load(cache, key(i), d)
    locs = [loc_of(d) for d in datas]
    got = cache.lookup_many([key(i) for i in range(3)], locs)
    assert got is not None and [p.tobytes() for p in got] == [d.tobytes() for d in datas]
    assert all(p.pins == 1 for p in got) and cache.stats.hits == 3
    for p in got:
        cache.unpin_page(p)
    # one missing (or stale) page: nothing pinned, nothing counted
    assert cache.lookup_many([key(0), key(9)], [locs[0], locs[0]]) is None
    assert cache.lookup_many([key(0), key(1)], [locs[0], locs[0]]) is None  # key(1) has other bytes
    assert cache.pinned_bytes() == 0 and cache.stats.hits == 3
    assert cache.keys()[-1] == key(2)


def test_lookup_many_with_the_locations_idents_checks_them_all_at_once():
    # (a scan's memoized group passes its locations' page_ident tuples: one comparison for the group)
    from hetdb.cache.host_cache import page_ident

    cache = tier(limit_blocks=16)
    datas = [payload(5000, s) for s in range(3)]
    for i, d in enumerate(datas):
        load(cache, key(i), d)
    locs = [loc_of(d) for d in datas]
    idents = [page_ident(loc) for loc in locs]
    got = cache.lookup_many([key(i) for i in range(3)], locs, idents=idents)
    assert got is not None and [p.ident for p in got] == idents and all(p.pins == 1 for p in got)
    cache.unpin_pages(got)
    stale = idents[:2] + [page_ident(locs[0])]  # key(2) holds other bytes than those asked for
    assert cache.lookup_many([key(i) for i in range(3)], locs, idents=stale) is None
    assert cache.pinned_bytes() == 0 and cache.stats.hits == 3


def test_lookup_many_of_a_stable_group_answers_again_only_while_no_entry_came_or_went():
    # (a scan's memoized group: keys and idents the same list objects every time)
    from hetdb.cache.host_cache import page_ident

    cache = tier(limit_blocks=16)
    datas = [payload(5000, s) for s in range(3)]
    for i, d in enumerate(datas):
        load(cache, key(i), d)
    keys = [key(i) for i in range(3)]
    locs = [loc_of(d) for d in datas]
    idents = [page_ident(loc) for loc in locs]
    first = cache.lookup_many(keys, locs, stable=True, idents=idents)
    cache.unpin_pages(first)
    again = cache.lookup_many(keys, locs, stable=True, idents=idents)
    assert again is first and all(p.pins == 1 for p in again) and cache.stats.hits == 6
    cache.unpin_pages(again)
    cache.clear()  # (every page dropped: the group is not found, nothing pinned or counted)
    assert cache.lookup_many(keys, locs, stable=True, idents=idents) is None
    assert cache.pinned_bytes() == 0 and cache.stats.hits == 6
    for i, d in enumerate(datas):  # (loaded again: new entries, found by their keys)
        load(cache, key(i), d)
    got = cache.lookup_many(keys, locs, stable=True, idents=idents)
    assert got is not None and all(a is not b for a, b in zip(got, first)) and [p.tobytes() for p in got] == [
        d.tobytes() for d in datas]
    cache.unpin_pages(got)
    assert cache.pinned_bytes() == 0


def test_lookup_many_of_a_stable_group_records_its_accesses_lazily():
    # a scan's memoized group (the same list every time) is recorded lazily, as one group
    # (BenefitPolicy.touch_group, applied at the next decision): the same hits and pins, and every
    # page has a reuse distance as after page-by-page records (amortised over the group's accesses)
    eager, lazy = tier(limit_blocks=16), tier(limit_blocks=16)
    datas = [payload(5000, s) for s in range(3)]
    keys = [key(i) for i in range(3)]
    for cache in (eager, lazy):
        for k, d in zip(keys, datas):
            load(cache, k, d)
    locs = [loc_of(d) for d in datas]
    for _ in range(3):
        for cache, stable in ((eager, False), (lazy, True)):
            got = cache.lookup_many(keys, locs, stable=stable)
            assert got is not None and all(p.pins == 1 for p in got)
            cache.unpin_pages(got)
    assert lazy.stats.hits == eager.stats.hits == 9 and lazy.pinned_bytes() == 0
    assert all(0 < lazy.policy.reuse_distance(k) <= eager.policy.reuse_distance(k) < float("inf") for k in keys)


def test_unpin_pages_frees_an_unlisted_page_with_its_last_pin():
    cache = tier(8)
    old, new = payload(BLOCK, 1), payload(BLOCK, 2)
    reader = load(cache, key(0), old, pin=True)
    mine = load(cache, key(0), new, pin=True)
    cache.unpin_pages([mine])  # unlisted: freed at its last unpin
    assert cache.held_bytes == BLOCK
    cache.unpin_pages([reader])  # listed: stays
    assert cache.held_bytes == BLOCK and cache.pinned_bytes() == 0 and cache.get(key(0)) is reader
    with pytest.raises(ValueError, match="not pinned"):
        cache.unpin_pages([reader])


def test_after_clear_pages_take_blocks_in_address_order_again():
    # pages committed out of order (as I/O threads finish) and cleared: the next pages, of other
    # sizes, must still lie in one run each (else each page of the next cold scan is ~2 runs)
    cache = HostPageCache(64 * BLOCK, block_bytes=BLOCK, chunk_bytes=64 * BLOCK, allocate=Allocations())
    first = [cache.acquire(key(rg), 3 * BLOCK - 100, 3 * BLOCK, 0) for rg in range(12)]
    for i in (5, 0, 11, 3, 8, 1, 10, 2, 7, 4, 9, 6):
        page = first[i]
        cache.commit(page)
        cache.unpin_page(page)
    cache.clear()
    assert len(cache) == 0
    second = [cache.acquire(key(rg, "b"), 5 * BLOCK, 5 * BLOCK, 0) for rg in range(12)]
    assert all(len(p.runs) == 1 for p in second)
    assert [p.blocks[0] for p in second] == [5 * i for i in range(12)]
    for p in second:
        cache.abort(p)
