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


def test_dictionary_string_keys_order_as_their_strings() -> None:
    """Dictionary strings are keyed by the byte-order rank of their dictionary entry (no string per
    row); the keys must order and compare exactly as those of the same strings stored plain."""
    import pyarrow as pa

    from hetdb import types as T
    from hetdb.backend.cpu.backend import CpuBackend
    from hetdb.column import Column
    from hetdb.exec.operators.window import _key

    rng = np.random.default_rng(4)
    words = ["b", "a", "", "ab", "b", "zz", "a\x00", "é"]  # duplicates and a NUL byte in the dictionary
    idx = rng.integers(0, len(words), 500)
    valid = rng.random(500) < 0.9
    values = pa.array([words[i] if v else None for i, v in zip(idx, valid)], type=pa.string())
    encoded = pa.DictionaryArray.from_arrays(pa.array(np.where(valid, idx, 0).astype(np.int32), mask=~valid),
                                             pa.array(words))
    plain = Column.from_arrow(values, T.STRING)
    dictionary = Column.from_arrow(encoded, T.STRING)
    assert dictionary.dictionary is not None and plain.dictionary is None
    backend = CpuBackend()
    kd, kp = _key(backend, dictionary), _key(backend, plain)
    m = valid
    assert m.sum() > 100
    assert np.array_equal(np.sign(kd[m][:, None] - kd[m][None, :]), np.sign(kp[m][:, None] - kp[m][None, :]))
