"""kernels/window.cu *run* without a GPU: built as a host shared library with g++ (CUDA built-ins
shimmed: one thread runs every segment of the grid-stride loop) and checked against NumPy's stable
lexsort: each segment's rows ordered by code with ties in row order, segments of one row, segments
of the longest length the operator sends (backend/gpu/window.MAX_SEGMENT_ROWS), negative codes,
one segment, and no rows."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from hetdb.backend.gpu.compile import load_source
from hetdb.backend.gpu.window import MAX_SEGMENT_ROWS

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

SHIM = r"""
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__
struct Dim3 { unsigned x; };
static Dim3 threadIdx = {0}, blockIdx = {0}, gridDim = {1}, blockDim = {1};
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> ctypes.CDLL:
    d = tmp_path_factory.mktemp("window-host")
    src, so = d / "window_host.cpp", d / "libwindow.so"
    src.write_text(SHIM + load_source("window.cu"))
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-w", "-shared", "-fPIC", "-o", str(so), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    return ctypes.CDLL(str(so))


def _sort(lib, code: np.ndarray, heads: np.ndarray) -> np.ndarray:
    n = code.shape[0]
    order = np.full(n, -1, np.int64)
    p = ctypes.c_void_p
    lib.window_sort_segments(code.ctypes.data_as(p), heads.ctypes.data_as(p), ctypes.c_int64(heads.shape[0]),
                             ctypes.c_int64(n), order.ctypes.data_as(p))
    return order


def test_segments_sorted_stably_like_lexsort(lib) -> None:
    rng = np.random.default_rng(5)
    checked = 0
    for n, longest, spread in [(0, 1, 1), (1, 1, 1), (7, 7, 3), (5_000, 6, 4), (3_001, MAX_SEGMENT_ROWS, 1_000),
                               (2_000, MAX_SEGMENT_ROWS, 2), (MAX_SEGMENT_ROWS, MAX_SEGMENT_ROWS, 10)]:
        sizes = rng.integers(1, longest + 1, max(n, 1))
        seg = np.repeat(np.arange(sizes.shape[0]), sizes)[:n]
        heads = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]]) if n else np.zeros(0, np.int64)
        code = rng.integers(-spread, spread, n).astype(np.int64)
        got = _sort(lib, code, heads.astype(np.int64))
        assert np.array_equal(got, np.lexsort([np.arange(n), code, seg])), (n, longest, spread)
        checked += 1
    assert checked == 7
