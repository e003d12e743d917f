"""BenefitPolicy.displace memoises the first victim's worth per (clock, residents) state: on random
traces of accesses, insertions, removals, pins and admissions its verdicts must be exactly those of
the unmemoised ranking (reached by passing an ``evictable`` test, which bypasses the memo)."""

from __future__ import annotations

import random

from hetdb.cache.policy import BenefitPolicy


def _step(policies, rng, keys, resident, busy) -> int:
    """One random operation on every policy alike; returns the number of admission verdicts compared."""
    op = rng.random()
    key = rng.choice(keys)
    if op < 0.35:
        for p in policies:
            p.record(key)
        return 0
    if op < 0.45 and key not in resident:
        held, first = rng.choice([1, 2, 4, 8]), rng.choice([None, 50])
        for p in policies:
            p.insert(key, held, 1e-5, held * 1e-4, first)
        resident.add(key)
        return 0
    if op < 0.5 and key in resident:
        for p in policies:
            p.remove(key)
        resident.discard(key)
        busy.discard(key)
        return 0
    if op < 0.55 and key in resident:
        flag = key not in busy
        for p in policies:
            p.busy(key, flag)
        (busy.add if flag else busy.discard)(key)
        return 0
    nbytes = rng.choice([1, 2, 4, 16])
    first = rng.choice([None, 10, 1000])
    lost = rng.choice([0.0, 0.0, 1e-7])
    memo, plain = policies
    a = memo.displace(key, 1e-5, nbytes * 1e-4, nbytes, None, lost, first)
    b = plain.displace(key, 1e-5, nbytes * 1e-4, nbytes, lambda k: True, lost, first)
    assert a == b, (key, nbytes, first, lost)
    return 1


def test_memoised_admissions_decide_as_the_full_ranking():
    rng = random.Random(4)
    compared = 0
    for _trial in range(20):
        keys = [f"k{i}" for i in range(rng.choice([5, 20, 60]))]
        policies = (BenefitPolicy(), BenefitPolicy())
        resident, busy = set(), set()
        for _ in range(600):
            compared += _step(policies, rng, keys, resident, busy)
            # the same admission asked twice in a row (a batch's pages between two accesses)
            if rng.random() < 0.2:
                key = rng.choice(keys)
                memo, plain = policies
                for _ in range(2):
                    assert memo.displace(key, 1e-5, 4e-4, 4, None) == plain.displace(key, 1e-5, 4e-4, 4,
                                                                                     lambda k: True)
                    compared += 1
    assert compared > 2000
