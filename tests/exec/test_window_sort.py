"""The window operator's CPU sort that uses order already in its input (``_presorted_permutation``):
equal to a stable lexicographic sort whether the rows are sorted already, sorted by their PARTITION
BY keys only, sorted by a trailing key only, or not at all, with packed (<= 63 bits) and wide keys."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.exec.operators.window import _presorted_permutation


def _stable(arrays, desc, n):
    keys = [(-a if d else a) for a, d in zip(arrays, desc)]
    return np.lexsort([np.arange(n), *reversed(keys)])


CASES = {
    "sorted": (True, True, True),
    "partition-sorted": (True, False, False),
    "trailing-key-sorted": (False, False, True),
    "unsorted": (False, False, False),
}


@pytest.mark.parametrize("wide", [False, True], ids=["packed", "wide"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("desc_last", [False, True])
def test_presorted_permutation_is_a_stable_sort(case, wide, desc_last) -> None:
    rng = np.random.default_rng(len(case) + wide)
    n = 3_001
    part_sorted, order_sorted, last_sorted = CASES[case]
    part = rng.integers(0, 40, n)
    order = rng.integers(0, 2**40 if wide else 50, n)
    last = rng.integers(0, 2**30 if wide else 1000, n)
    if part_sorted:
        part = np.sort(part)
    if order_sorted:
        order = np.concatenate([np.sort(order[part == p]) for p in np.unique(part)])
    if last_sorted:
        last = np.sort(last)
    arrays, desc = [part, order, last], [False, False, desc_last]
    perm = _presorted_permutation(arrays, desc, n, 1)
    want = _stable(arrays, desc, n)
    got = np.arange(n) if perm is None else perm
    assert np.array_equal(got, want), case
    if case == "sorted" and not desc_last:  # the input order is the answer: no sort, no gathers
        assert perm is None
