"""The runtime join filter never rejects a key the build holds (bitmap and Bloom layouts), and
rejects most keys it does not hold."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import join as J
from hetdb.backend.cpu.join_filter import filter_of


@pytest.mark.parametrize("case", ["dense", "sparse", "multi_packed", "multi_float", "empty_probe"])
def test_no_false_negatives(case):
    rng = np.random.default_rng(3)
    n = 5000
    if case == "dense":
        build = [rng.integers(-100, 20_000, n)]
        probe = [rng.integers(-200, 25_000, 30_001)]
    elif case == "sparse":
        build = [rng.integers(0, 1 << 60, n)]
        probe = [np.concatenate([build[0][::3], rng.integers(0, 1 << 60, 20_000)])]
    elif case == "multi_packed":
        build = [rng.integers(0, 300, n), rng.integers(0, 50, n).astype(np.int32)]
        probe = [rng.integers(-5, 310, 20_000), rng.integers(0, 55, 20_000).astype(np.int32)]
    elif case == "multi_float":
        build = [rng.integers(0, 300, n), rng.standard_normal(n).round(2)]
        idx = rng.integers(0, n, 7000)
        probe = [np.concatenate([build[0][idx], rng.integers(0, 300, 9000)]),
                 np.concatenate([build[1][idx], rng.standard_normal(9000).round(2)])]
    else:
        build = [rng.integers(0, 1000, n)]
        probe = [np.zeros(0, np.int64)]
    table = J.join_build(build)
    hit = J.join_might_match(table, probe)
    truth = J.join_probe(table, probe, "mark")
    assert hit.shape == truth.shape and hit.dtype == np.bool_
    assert not np.any(truth & ~hit), "the filter rejected a key the build holds"
    if case != "empty_probe":
        assert truth.sum() > 0
        misses = ~truth
        # exact for the bitmap; a Bloom filter at 16 bits per key lets a few percent through
        assert (hit & misses).sum() <= 0.1 * misses.sum() + 1
    assert filter_of(table) is filter_of(table)  # built once per table


@pytest.mark.parametrize("span, ordered", [(20_000, True), (20_000, False), (1 << 40, False)])
def test_filter_built_on_several_kernel_threads_equals_one_thread(span, ordered):
    """Bitmaps (keys in order: a word's bits ORed together first; at random) and Bloom filters built
    with atomic ORs on several kernel threads hold the same bits as the one-thread build."""
    import numba

    from hetdb.backend.cpu.join_filter import build_filter
    from hetdb.backend.cpu.keys import kernel_threads, key_matrix, set_kernel_threads

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one Numba thread")
    rng = np.random.default_rng(span % 97 + ordered)
    keys = rng.integers(-500, span, 30_011)
    if ordered:
        keys = np.sort(keys)
    km = key_matrix([keys])
    before = kernel_threads()
    try:
        set_kernel_threads(1)
        one = build_filter(km)
        set_kernel_threads(2)
        many = build_filter(km)
    finally:
        set_kernel_threads(before)
    assert one.bitmap == many.bitmap == (span < 1 << 30)
    assert (one.lo, one.size, one.shift) == (many.lo, many.size, many.shift)
    assert np.array_equal(one.bits, many.bits) and one.bits.any()
