"""Gathers of the window operator on the CPU (Numba, parallel): rows ``idx`` of a column where a
negative index means "no row" (lag/lead past the partition, an empty frame), taking the row's
default instead or NULL. One pass writes values and validity (the NumPy form took four)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_EMPTY_BOOL = np.zeros(0, np.bool_)


@njit(cache=True, nogil=True, parallel=True)
def _take_or(data, valid, idx, fill, fill_valid, out, ok):
    n = idx.shape[0]
    all_valid = valid.shape[0] == 0
    no_fill = fill.shape[0] == 0
    fill_all_valid = fill_valid.shape[0] == 0
    for i in prange(n):
        j = idx[i]
        if j >= 0:
            out[i] = data[j]
            ok[i] = all_valid or valid[j]
        elif no_fill:
            out[i] = data[0]  # a defined value under the NULL
            ok[i] = False
        else:
            out[i] = fill[i]
            ok[i] = fill_all_valid or fill_valid[i]


def take_or(data: np.ndarray, valid: np.ndarray | None, idx: np.ndarray, fill: np.ndarray | None = None,
            fill_valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(values, validity) of rows ``idx`` of ``data``/``valid`` (None: all valid); where ``idx`` is
    negative the row of ``fill``/``fill_valid`` (same dtype as ``data``), or NULL without ``fill``.
    ``data`` holds at least one row."""
    data = np.ascontiguousarray(data)
    # outputs allocated by NumPy (huge pages), not inside the kernel (4 KiB page faults)
    out = np.empty(idx.shape[0], data.dtype)
    ok = np.empty(idx.shape[0], np.bool_)
    _take_or(data, _EMPTY_BOOL if valid is None else np.ascontiguousarray(valid, dtype=np.bool_),
             np.ascontiguousarray(idx, dtype=np.int64),
             data[:0] if fill is None else np.ascontiguousarray(fill, dtype=data.dtype),
             _EMPTY_BOOL if fill_valid is None else np.ascontiguousarray(fill_valid, dtype=np.bool_), out, ok)
    return out, ok
