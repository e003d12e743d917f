"""The benefit policy on synthetic page-access traces, replayed through a DevicePageCache (NumPy
values, no GPU) and, for comparison, a plain LRU of the same capacity.

``python tests/cache/test_policy.py`` prints the hit ratios of both on every trace."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache, PageKey
from hetdb.cache.policy import BenefitPolicy

PAGE = 1000  # bytes per page in every trace


def k(column: str, rg: int) -> PageKey:
    return PageKey("t", 1, column, rg)


def working_set_with_scans(rounds: int = 20, hot: int = 40, scan: int = 200) -> list[PageKey]:
    """A working set of ``hot`` pages read every round; every fourth round also a one-off scan of
    ``scan`` other pages (a different table each time)."""
    out: list[PageKey] = []
    for r in range(rounds):
        out += [k("hot", i) for i in range(hot)]
        if r % 4 == 1:
            out += [k(f"scan{r}", i) for i in range(scan)]
    return out


def looping_scan(rounds: int = 10, pages: int = 120) -> list[PageKey]:
    """The same table scanned again and again; it is larger than the tier."""
    return [k("big", i) for _ in range(rounds) for i in range(pages)]


def zipf(n: int = 20000, pages: int = 500, a: float = 1.2, seed: int = 7) -> list[PageKey]:
    """Skewed random reads: a few pages are read very often, most rarely."""
    rng = np.random.default_rng(seed)
    ids = rng.zipf(a, n * 3)
    ids = ids[ids <= pages][:n]
    perm = rng.permutation(pages)  # hot pages are not the low page numbers
    return [k("z", int(perm[i - 1])) for i in ids]


def hot_and_cold_columns(rounds: int = 12, pages: int = 30) -> list[PageKey]:
    """Column 'hot' is read every round, column 'cold' every third round; both are ``pages`` pages."""
    out: list[PageKey] = []
    for r in range(rounds):
        out += [k("hot", i) for i in range(pages)]
        if r % 3 == 0:
            out += [k("cold", i) for i in range(pages)]
    return out


def replay(trace: list[PageKey], capacity_pages: int) -> tuple[float, DevicePageCache]:
    """Hit ratio of ``trace`` through a DevicePageCache holding ``capacity_pages`` pages, used as
    a scan uses it (look up; on a miss, put)."""
    cache = DevicePageCache(DeviceMemoryBudget(1 << 40), capacity_bytes=capacity_pages * PAGE)
    value = np.zeros(1, dtype=np.uint8)
    hits = 0
    for key in trace:
        if cache.get(key) is not None:
            hits += 1
        else:
            cache.put(key, value, PAGE)
    return hits / len(trace), cache


def replay_lru(trace: list[PageKey], capacity_pages: int) -> float:
    lru: OrderedDict = OrderedDict()
    hits = 0
    for key in trace:
        if key in lru:
            hits += 1
            lru.move_to_end(key)
            continue
        lru[key] = True
        if len(lru) > capacity_pages:
            lru.popitem(last=False)
    return hits / len(trace)


def query_switch(runs: int = 4, pages: int = 30) -> list[PageKey]:
    """A benchmark's hot mode: query 1 reads columns a, b ``runs`` times, then query 2 reads columns
    b, c ``runs`` times, then query 3 reads d, e; the tier holds one query's columns."""
    out: list[PageKey] = []
    for cols in (("a", "b"), ("b", "c"), ("d", "e")):
        for _ in range(runs):
            out += [k(c, i) for i in range(pages) for c in cols]
    return out


TRACES = {
    "working set 40 + one-off scans of 200, tier 60": (working_set_with_scans, 60),
    "looping scan of 120, tier 100": (looping_scan, 100),
    "zipf(1.2) over 500, tier 100": (zipf, 100),
    "hot + cold column of 30 each, tier 40": (hot_and_cold_columns, 40),
    "3 queries x 4 runs, 60 pages each, tier 64": (query_switch, 64),
}


def hit_ratios() -> dict[str, tuple[float, float]]:
    """{trace: (LRU hit ratio, benefit-policy hit ratio)}."""
    out = {}
    for name, (make, cap) in TRACES.items():
        trace = make()
        out[name] = (replay_lru(trace, cap), replay(trace, cap)[0])
    return out


def test_working_set_survives_one_off_scans_larger_than_the_tier():
    trace = working_set_with_scans()
    ratio, cache = replay(trace, 60)
    hot = {k("hot", i) for i in range(40)}
    assert hot <= set(cache.keys())  # all 40 hot pages resident at the end
    # every hot read after the first round hits: the scans passed through without evicting them
    assert ratio == (len([x for x in trace if x in hot]) - 40) / len(trace)
    assert cache.stats.bypassed > 0
    assert ratio > replay_lru(trace, 60)


def test_scan_larger_than_the_tier_keeps_part_of_itself():
    trace = looping_scan()
    ratio, cache = replay(trace, 100)
    assert replay_lru(trace, 100) == 0.0  # LRU evicts each page just before it is read again
    assert ratio == 100 * 9 / len(trace)  # the first 100 pages stay and hit on every later pass


def test_hot_column_beats_a_cold_column_of_the_same_size():
    trace = hot_and_cold_columns()
    _, cache = replay(trace, 40)
    held = cache.keys()
    assert sum(x.column == "hot" for x in held) == 30
    assert sum(x.column == "cold" for x in held) == 10


def test_skewed_reads_do_at_least_as_well_as_lru():
    trace = zipf()
    ratio, _ = replay(trace, 100)
    assert ratio >= replay_lru(trace, 100)


def test_pinned_entries_survive_every_trace():
    cache = DevicePageCache(DeviceMemoryBudget(1 << 40), capacity_bytes=50 * PAGE)
    value = np.zeros(1, dtype=np.uint8)
    for i in range(10):
        cache.get(k("pinned", i))
        assert cache.put(k("pinned", i), value, PAGE, pin=i % 2 == 0)
        if i % 2:
            cache.keep(k("pinned", i))
    for key in looping_scan(3, 200) + zipf(3000, 300):
        if cache.get(key) is None:
            cache.put(key, value, PAGE)
    assert all(k("pinned", i) in cache for i in range(10))
    assert cache.used_bytes <= 50 * PAGE


def test_benefit_counts_link_time_saved_per_byte_held():
    policy = BenefitPolicy()
    # the same page read equally often, once kept compressed (250 bytes) and once decoded (1000):
    # the compressed copy saves the same link time with a quarter of the bytes
    for key, held in (("compressed", 250), ("decoded", 1000)):
        policy.record(key)
        policy.insert(key, held, latency=1e-5, transfer=1e-4)
    for key in ("compressed", "decoded"):
        policy.record(key)
    assert policy.order() == ["decoded", "compressed"]
    # a page read sparsely (a tenth of it) saves less than one read whole
    for key in ("sparse", "whole"):
        policy.insert(key, 1000, latency=0.0, transfer=1e-3)
    for _ in range(3):
        policy.record("sparse", fraction=0.1)
        policy.record("whole", fraction=1.0)
    assert policy.order().index("sparse") < policy.order().index("whole")


def test_reuse_distance_is_smoothed_over_uses():
    policy = BenefitPolicy()
    assert policy.reuse_distance("p") == float("inf")  # not read twice yet
    policy.record("p")
    for _ in range(9):
        policy.record("q")
    policy.record("p")
    assert policy.reuse_distance("p") == 10
    policy.record("p")
    assert policy.reuse_distance("p") == 5.5  # the mean of the last distance and the one before


def test_a_new_working_set_replaces_the_old_one_at_its_second_read():
    trace = query_switch()
    cache = DevicePageCache(DeviceMemoryBudget(1 << 40), capacity_bytes=64 * PAGE)
    value = np.zeros(1, dtype=np.uint8)
    hits = [0] * 12
    for i, key in enumerate(trace):
        if cache.get(key) is not None:
            hits[i // 60] += 1
        else:
            cache.put(key, value, PAGE)
    # query 1: everything from its second run on; query 2: column b (shared) at once, 4 pages of c
    # that found free room in its first run, the rest of c from its third run (admitted at their
    # second read, displacing column a); query 3 likewise (LRU: one run earlier, but it thrashes on
    # scans larger than the tier)
    assert hits == [0, 60, 60, 60, 30, 34, 60, 60, 0, 0, 60, 60]
    assert sum(x.column in ("d", "e") for x in cache.keys()) == 60



def test_entries_in_use_leave_the_eviction_order_until_released():
    """A pinned entry (a scan reads it) is taken out of the policy's order, so victims are chosen
    without testing each one; a user's pin (keep) released while a scan still holds the entry does
    not make it evictable before the scan lets go."""
    budget = DeviceMemoryBudget(1 << 40)
    cache = DevicePageCache(budget, capacity_bytes=4 * PAGE)
    value = np.zeros(1, dtype=np.uint8)
    assert cache.put(k("a", 0), value, PAGE, pin=True)
    assert cache.put(k("a", 1), value, PAGE)
    cache.keep(k("a", 1))
    cache.pin(k("a", 1))
    cache.unkeep(k("a", 1))       # still pinned: stays out of the order
    for i in range(20):           # a scan far larger than the tier, read twice: admitted by benefit
        for _ in range(2):
            if cache.get(k("s", i)) is None:
                cache.put(k("s", i), value, PAGE)
    assert k("a", 0) in cache and k("a", 1) in cache
    assert cache.evict(10 * PAGE) == 2 * PAGE  # only the two scan pages that got in can go
    cache.unpin(k("a", 0))
    cache.unpin(k("a", 1))
    assert set(cache.eviction_order()) == {k("a", 0), k("a", 1)}
    assert cache.evict(10 * PAGE) == 2 * PAGE and len(cache) == 0


def test_a_first_read_is_refused_without_ranking_victims(monkeypatch):
    """A scan larger than a full tier: its pages (read for the first time) are refused at once; the
    tier ranks candidates only for a page with a history."""
    cache = DevicePageCache(DeviceMemoryBudget(1 << 40), capacity_bytes=10 * PAGE)
    value = np.zeros(1, dtype=np.uint8)
    for i in range(10):
        cache.get(k("hot", i))
        assert cache.put(k("hot", i), value, PAGE)
    ranked = []
    candidates = BenefitPolicy._candidates

    def counting(self, evictable):
        ranked.append(1)
        return candidates(self, evictable)

    monkeypatch.setattr(BenefitPolicy, "_candidates", counting)
    for i in range(50):
        assert cache.get(k("scan", i)) is None
        assert not cache.put(k("scan", i), value, PAGE)
    assert ranked == [] and cache.stats.bypassed == 50
    cache.get(k("scan", 0))  # read again: now it has a reuse distance and is judged
    cache.put(k("scan", 0), value, PAGE)
    assert ranked == [1]


if __name__ == "__main__":
    for name, (lru, policy) in hit_ratios().items():
        print(f"{name:50s} LRU {lru:6.1%}  benefit {policy:6.1%}")
