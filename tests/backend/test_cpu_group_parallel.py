"""Parallel group numbering (many rows, many groups, several kernel threads) gives exactly the serial
numbering: group ids in first-appearance order and each group's first row."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hetdb.backend.cpu import groupby as G


@pytest.mark.parametrize("ncols", [1, 2])
@pytest.mark.parametrize("domain", [200_000, 10**12, 5])
def test_parallel_group_ids_match_serial(monkeypatch, ncols, domain):
    if numba.get_num_threads() < 2:
        pytest.skip("the parallel numbering needs at least two Numba threads")
    rng = np.random.default_rng(7)
    n = 400_003
    keys = [rng.integers(0, domain, n)] + [rng.integers(-3, 3, n) for _ in range(ncols - 1)]
    serial_gid, serial_firsts = G.hash_group_ids(keys)  # 2 threads < the parallel threshold
    monkeypatch.setattr(G, "_PARALLEL_GROUP_ROWS", 1 << 16)
    monkeypatch.setattr(G, "_PARALLEL_GROUP_THREADS", 2)
    gid, firsts = G.hash_group_ids(keys)
    assert len(firsts) > 0
    assert np.array_equal(firsts, serial_firsts)
    assert np.array_equal(gid, serial_gid)
    # and both are right: same key <=> same group, firsts ascending
    assert np.all(np.diff(firsts) > 0)
    for k in keys:
        assert np.array_equal(k[firsts[gid]], k)
