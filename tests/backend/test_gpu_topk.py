"""GpuBackend.topk_indices (backend/gpu/topk.py on CuPy: threshold on the first key's radix-sorted
image, then a sort of the rows kept) against the backend's full sort_indices[:k] and the CPU backend,
on keys with ties, NaN, NULL flags and descending keys, above the size where it stops sorting all."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hetdb.backend.gpu import gpu_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

os.environ.setdefault("HETDB_CHECK_LAUNCHES", "1")


@pytest.mark.parametrize("k", [1, 7, 100, 2500])
def test_topk_equals_the_first_k_of_a_full_sort(k) -> None:
    import cupy

    from hetdb.backend.cpu import CpuBackend
    from hetdb.backend.gpu import GpuBackend
    from hetdb.backend.gpu.topk import FULL_SORT_ROWS

    rng = np.random.default_rng(k)
    n = 6 * FULL_SORT_ROWS + 3
    f = rng.normal(size=n)
    f[rng.random(n) < 0.01] = np.nan
    f[:50] = 3.0  # ties at the top
    f = np.round(f, 1) + 0.0  # (+ 0.0: no -0.0, which the backends need not order alike)
    host = [rng.random(n) < 0.9, f, rng.integers(-5, 5, n).astype(np.int32),
            rng.integers(-2**40, 2**40, n).astype(np.int64)]
    for desc in ([False, True, False, True], [True, False, True, False]):
        gpu, cpu = GpuBackend(), CpuBackend()
        keys = [cupy.asarray(a) for a in host]
        got = gpu.topk_indices(keys, desc, k).get()
        assert len(got) == k
        assert np.array_equal(got, gpu.sort_indices(keys, desc)[:k].get()), desc
        assert np.array_equal(got, np.asarray(cpu.topk_indices(host, desc, k))), desc  # (no -0.0 in f)
        # the first key alone (no NULL flag in front): the threshold path proper
        got1 = gpu.topk_indices(keys[1:], desc[1:], k).get()
        assert np.array_equal(got1, gpu.sort_indices(keys[1:], desc[1:])[:k].get()), desc
