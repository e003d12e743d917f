"""Parallel concatenation of host arrays (backend/cpu/concat.py) against np.concatenate."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import concat as C
from hetdb.backend.cpu.keys import kernel_threads, set_kernel_threads


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64, np.float64, np.bool_])
def test_parallel_concatenate_equals_numpy(monkeypatch, dtype) -> None:
    rng = np.random.default_rng(5)
    sizes = [0, 1, 999, 4097, 0, 30_001, 7]
    parts = [rng.integers(0, 200, s).astype(dtype) for s in sizes]
    parts[3] = parts[3][::-1]  # a negatively strided piece
    monkeypatch.setattr(C, "PARALLEL_BYTES", 16)
    monkeypatch.setattr(C, "_CHUNK_BYTES", 64)
    calls = []
    copy = C._copy_parts
    monkeypatch.setattr(C, "_copy_parts", lambda *a: calls.append(1) or copy(*a))
    before = kernel_threads()
    set_kernel_threads(2)
    try:
        got = C.concatenate(parts)
    finally:
        set_kernel_threads(before)
    assert calls == [1], "one parallel copy for every piece"
    want = np.concatenate(parts)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_small_or_object_concatenations_stay_with_numpy() -> None:
    objs = [np.array([1, 2**70], dtype=object), np.array([3], dtype=object)]
    assert C.concatenate(objs).tolist() == [1, 2**70, 3]
    assert C.concatenate([np.arange(3), np.arange(2)]).tolist() == [0, 1, 2, 0, 1]
