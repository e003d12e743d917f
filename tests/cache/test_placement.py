"""Decoded-or-compressed placement (cache/placement.py) on synthetic traces, without a GPU: what fits
decoded is decoded, the room goes to decode time saved per extra byte weighted by reads, the choice
never overflows the cache, follows a change of working set and does not flip back and forth within a
steady mix; and the device cache's eviction of entries in an unwanted form."""

from __future__ import annotations

import random

import numpy as np

from hetdb.backend.gpu.memory import DeviceMemoryBudget
from hetdb.cache import DevicePageCache, PageKey
from hetdb.cache.placement import MIN_WEIGHT, ColumnForm, DecodedPlacement, column_cost

MIB = 1 << 20
# SSB SF 20 lineorder (s14 m1/ratios-ssb20.txt: MiB decoded 457.8 each, stored) and its codecs
SSB = {"lo_custkey": (83.5, "rle"), "lo_partkey": (287.9, "for"), "lo_suppkey": (230.7, "for"),
       "lo_orderdate": (69.8, "rle"), "lo_quantity": (87.6, "for"), "lo_extendedprice": (345.1, "for"),
       "lo_discount": (59.0, "for"), "lo_revenue": (345.1, "for"), "lo_supplycost": (214.8, "dict")}
QUERIES = {"q1": ("lo_orderdate", "lo_quantity", "lo_discount", "lo_extendedprice"),
           "q2": ("lo_orderdate", "lo_partkey", "lo_suppkey", "lo_revenue"),
           "q3": ("lo_custkey", "lo_suppkey", "lo_orderdate", "lo_revenue"),
           "q4": ("lo_custkey", "lo_suppkey", "lo_partkey", "lo_orderdate", "lo_revenue", "lo_supplycost")}


def ssb_forms() -> list[ColumnForm]:
    return [ColumnForm(name, int(stored * MIB), int(457.8 * MIB), column_cost({codec: 1}))
            for name, (stored, codec) in SSB.items()]


def fits(p: DecodedPlacement, forms: list[ColumnForm], decoded: frozenset, capacity: int) -> bool:
    """Whether the live columns in their chosen forms fit in ``capacity`` (beside the stored bytes
    of the live columns, which are there either way: nothing is decoded when those alone overflow)."""
    stored = sum(f.stored for f in forms if p.weight(f.key) >= MIN_WEIGHT)
    return sum(f.extra for f in forms if f.key in decoded) <= max(0, capacity - stored)


def run(p: DecodedPlacement, forms: list[ColumnForm], capacity: int, trace: list[str]) -> list[frozenset]:
    """The choice after each query of ``trace`` (query names of QUERIES); each one fits."""
    out = []
    for q in trace:
        p.record(QUERIES[q])
        out.append(p.choose(forms, capacity))
        assert fits(p, forms, out[-1], capacity), (q, len(out))
    return out


def test_everything_read_is_decoded_when_it_fits():
    p = DecodedPlacement()
    forms = ssb_forms()
    got = run(p, forms, 8 << 30, ["q1", "q2", "q3", "q4"])
    assert got[0] == frozenset(QUERIES["q1"])  # the first query: its columns only
    assert got[-1] == frozenset(SSB)
    assert run(DecodedPlacement(), forms, 0, ["q1", "q4"])[-1] == frozenset()  # no room at all


def test_room_goes_to_decode_time_saved_per_extra_byte():
    forms = ssb_forms()
    capacity = int(3333 * MIB)  # the cache at a 50% budget of SSB SF 20 (0.8 x 4.37 GB)
    p = DecodedPlacement()
    chosen = run(p, forms, capacity, ["q1", "q2", "q3", "q4"] * 3)[-1]
    # rle columns read by most queries, and FOR columns that barely shrink (little extra to hold)
    assert {"lo_orderdate", "lo_custkey", "lo_revenue", "lo_suppkey"} <= chosen
    # what stays compressed is worth least per extra byte among the columns read
    left = [f for f in forms if f.key not in chosen]
    taken = [f for f in forms if f.key in chosen]
    assert left and max(p.benefit(f) / f.extra for f in left) <= min(p.benefit(f) / f.extra for f in taken)
    # and could not have been added: no left-out column fits the room that is left
    room = (capacity - sum(f.stored for f in forms)) * 0.95 - sum(f.extra for f in taken)
    assert all(f.extra > room for f in left)


def test_the_cheaper_to_hold_of_two_equally_read_columns_wins():
    shrinks = ColumnForm("for_1.33", 345, 458, column_cost({"for": 1}))   # 113 extra bytes
    packs = ColumnForm("for_7.8", 59, 458, column_cost({"for": 1}))       # 399 extra bytes
    p = DecodedPlacement()
    p.record([shrinks.key, packs.key])
    assert p.choose([shrinks, packs], 345 + 59 + 300) == frozenset({"for_1.33"})
    # a column read often beats a cheaper one read once, long ago
    p = DecodedPlacement()
    p.record([shrinks.key])
    for _ in range(20):
        p.record([packs.key])
    assert p.choose([shrinks, packs], 345 + 59 + 420) == frozenset({"for_7.8"})


def test_plain_and_constant_columns_are_never_chosen():
    p = DecodedPlacement()
    forms = [ColumnForm("plain", 100, 100, column_cost({"plain": 3})),
             ColumnForm("const", 1, 100, column_cost({"const": 1})),
             ColumnForm("mixed", 50, 100, column_cost({"plain": 1, "rle": 1}))]
    p.record(f.key for f in forms)
    assert p.choose(forms, 10_000) == frozenset({"mixed"})
    assert forms[2].cost == column_cost({"rle": 1}) / 2


def test_a_new_working_set_takes_over_and_a_steady_mix_does_not_flip():
    forms = ssb_forms()
    capacity = int(3333 * MIB)
    p = DecodedPlacement()
    got = run(p, forms, capacity, ["q1"] * 10 + ["q3"] * 10)
    assert "lo_custkey" not in got[9] and "lo_custkey" in got[-1]  # q3's rle key once q3 is what runs
    assert "lo_quantity" in got[9]
    # a round-robin of the four query shapes: after a settling round the choice stays put
    p = DecodedPlacement()
    got = run(p, forms, capacity, ["q1", "q2", "q3", "q4"] * 25)
    assert len(set(got[8:])) == 1 and p.changes <= 6


def test_random_traces_never_overflow_the_cache():
    rng = random.Random(11)
    forms = ssb_forms()
    for capacity in (int(1500 * MIB), int(2500 * MIB), int(3333 * MIB)):
        p = DecodedPlacement()
        for _ in range(300):
            run(p, forms, capacity, [rng.choice(sorted(QUERIES))])


def _page(nbytes: int) -> np.ndarray:
    return np.zeros(nbytes, dtype=np.uint8)


class _Encoded:
    """Stands for an EncodedColumn: what the cache's matcher looks at is ``device_page``."""

    def __init__(self) -> None:
        self.device_page = object()


def test_the_cache_evicts_entries_in_an_unwanted_form_only():
    budget = DeviceMemoryBudget(10_000)
    cache = DevicePageCache(budget, share=1.0)
    keys = {(c, rg): PageKey("t", 1, c, rg) for c in ("a", "b") for rg in range(3)}
    for (_, rg), k in keys.items():
        assert cache.put(k, _Encoded() if rg < 2 else _page(100), 100)
    cache.pin(keys[("a", 0)])
    cache.keep(keys[("a", 1)])
    generation = cache.generation
    freed = cache.evict_matching(lambda key, value: key.column == "a" and getattr(value, "device_page", None))
    assert freed == 0 and cache.generation == generation  # pinned, kept, or already decoded
    cache.unpin(keys[("a", 0)])
    assert cache.evict_matching(lambda key, value: key.column == "a"
                                and getattr(value, "device_page", None) is not None) == 100
    assert keys[("a", 0)] not in cache and keys[("a", 1)] in cache and keys[("a", 2)] in cache
    assert all(keys[("b", rg)] in cache for rg in range(3))
    assert cache.generation > generation and budget.used_bytes == cache.used_bytes == 500


def test_a_column_no_longer_read_gives_way_to_one_read_now():
    """A new query shape's column takes the room of decoded columns the recent queries no longer
    read (their loss is small against its gain), at its first run: SSB's phases q1 .. q4 as
    ``hetdb bench`` runs them (warm-up + 3 runs per query)."""
    forms = ssb_forms()
    p = DecodedPlacement()
    got = run(p, forms, int(3333 * MIB), ["q1"] * 12 + ["q2"] * 12 + ["q3"] * 16 + ["q4"])
    assert {"lo_custkey", "lo_supplycost"} <= got[-1] and "lo_quantity" not in got[-1]
    assert got[-1] >= frozenset(QUERIES["q4"])
