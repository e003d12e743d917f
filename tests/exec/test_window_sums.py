"""Exact window frame sums (``operators/window_sums.py``) against Python ints: values that sum within
int64 in one prefix, values near 2**63 whose sums fit once split into 32-bit halves, sums past 64 bits
(object ints), NULLs, ROWS frames of several widths, on the compiled loops and the array kernels."""

from __future__ import annotations

import numpy as np
import pytest

from hetdb.backend.cpu import window as K
from hetdb.exec.operators.window_sums import frame_int_sums
from hetdb.exec.window_array import ArrayKernels


def _reference(x, valid, fs, fe) -> list[int]:
    vals = [int(v) if ok else 0 for v, ok in zip(x.tolist(), valid.tolist())]
    return [sum(vals[s:e]) for s, e in zip(fs.tolist(), fe.tolist())]


@pytest.mark.parametrize("kern", [K, ArrayKernels(np)], ids=["compiled", "array"])
@pytest.mark.parametrize("scale", [10**6, 2**62, -(2**63)], ids=["small", "near-2^63", "min-int64"])
def test_frame_int_sums_are_exact(kern, scale) -> None:
    rng = np.random.default_rng(5)
    n = 3_001
    part_start = rng.random(n) < 0.01
    part_start[0] = True
    ps, pe, _, _ = K.boundaries(part_start, part_start)
    x = (rng.random(n) * scale).astype(np.int64) if scale > 0 else np.full(n, scale, dtype=np.int64)
    valid = rng.random(n) < 0.9
    kinds = []
    for frame in [(0, 0, 2, 0), (1, 1, 2, 0), (0, 0, 4, 0)]:
        fs, fe = K.rows_frame(ps, pe, *frame)
        got = frame_int_sums(kern, np, x, valid, fs, fe)
        assert [int(v) for v in got.tolist()] == _reference(x, valid, fs, fe)
        kinds.append(got.dtype.kind)
    # int64 while every sum fits; Python ints once one does not (whole partitions of huge values)
    assert kinds == (["i", "i", "i"] if scale == 10**6 else ["O", "O", "O"] if scale < 0 else ["O", "i", "O"])
