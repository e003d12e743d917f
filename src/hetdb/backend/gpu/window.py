"""Window-operator kernels on the device (``kernels/window.cu``): the rows of each window partition
sorted on their own where the input is already grouped by the PARTITION BY keys and every partition
is small (``exec/window_array.ArrayKernels`` decides when; it falls back to one radix sort of all
rows otherwise)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu.compile import BLOCK, get_module, grid_for, launch

# Longest partition sorted by one thread's insertion sort (quadratic in it): beyond, a radix sort.
MAX_SEGMENT_ROWS = 64


def sort_within_segments(code: Any, heads: Any, n: int) -> Any:
    """Row numbers (int64, CuPy) ordering each segment's rows by ``code`` (int64), stably; segment s is
    rows ``heads[s]`` up to the next head (the last up to ``n``), each at most MAX_SEGMENT_ROWS long."""
    import cupy

    order = cupy.empty(n, dtype=cupy.int64)
    segments = int(heads.shape[0])
    if segments:
        launch(get_module("window.cu").function("window_sort_segments"), grid_for(segments), BLOCK,
               (cupy.ascontiguousarray(code, dtype=cupy.int64), cupy.ascontiguousarray(heads, dtype=cupy.int64),
                np.int64(segments), np.int64(n), order))
    return order
