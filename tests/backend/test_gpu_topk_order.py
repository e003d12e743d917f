"""backend/gpu/topk.py's top-k (threshold on the first key's radix-sorted image, then a sort of the
rows at or under it) against a full lexicographic sort with the row number as last tie-breaker, on
NumPy (the same code runs on CuPy in GpuBackend.topk_indices): many ties at the threshold, a first
key with two values (a NULL flag), k past the row count, k of 0 and 1, small and large inputs."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.gpu.topk import FULL_SORT_ROWS, topk_order


def _full(images: list[np.ndarray], k: int) -> np.ndarray:
    n = images[0].shape[0]
    return np.lexsort(np.stack([np.arange(n), *reversed(images)]))[:k]


@pytest.mark.parametrize("n", [0, 1, 100, FULL_SORT_ROWS + 1, 5 * FULL_SORT_ROWS])
@pytest.mark.parametrize("k", [0, 1, 10, 100, 1000, 10 ** 7])
@pytest.mark.parametrize("shape", ["distinct", "ties", "flag_first", "all_equal"])
def test_topk_matches_a_full_sort(n, k, shape) -> None:
    rng = np.random.default_rng(n * 31 + k)
    if shape == "distinct":
        images = [rng.permutation(n).astype(np.int64) - n // 2]
    elif shape == "ties":
        images = [rng.integers(-50, 50, n), rng.integers(0, 3, n), rng.integers(-2**62, 2**62, n)]
    elif shape == "flag_first":
        images = [rng.integers(0, 2, n), rng.integers(-1000, 1000, n)]
    else:
        images = [np.full(n, 7, np.int64), rng.integers(0, 5, n)]
    images = [im.astype(np.int64) for im in images]
    got = topk_order(np, images, k)
    want = _full(images, k)
    assert got.dtype == np.int64 and len(got) == min(k, n)
    assert np.array_equal(got, want)
