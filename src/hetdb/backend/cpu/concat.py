"""Concatenation of host arrays on every kernel thread.

An operator's end (a hash build's rows, an aggregation's partial states) concatenates what the
workers made: ``np.concatenate`` copies on one thread while the others wait (TPC-H q10's customer
build at SF 10: ~200 MB of strings, most of the build's 49 ms after its 16 workers). Large
concatenations copy each piece in chunks on every kernel thread instead; small ones, and calls from
a pipeline worker (one kernel thread), stay with NumPy.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import kernel_threads

# concatenations of at least this many bytes copy on several threads
PARALLEL_BYTES = 1 << 22
_CHUNK_BYTES = 1 << 18  # bytes one thread copies at a time


@njit(cache=True, nogil=True, parallel=True)
def _copy_into(dst, at, src, chunk):
    n = src.shape[0]
    for c in prange((n + chunk - 1) // chunk):
        lo = c * chunk
        hi = min(n, lo + chunk)
        dst[at + lo:at + hi] = src[lo:hi]


def concatenate(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)`` of 1-d arrays of one dtype, copied on every kernel thread when large."""
    if len(parts) < 2:
        return np.concatenate(parts)
    dtype = parts[0].dtype
    total = sum(int(p.shape[0]) for p in parts)
    if dtype == np.dtype(object) or total * dtype.itemsize < PARALLEL_BYTES or kernel_threads() < 2 \
            or any(p.dtype != dtype or p.ndim != 1 for p in parts):
        return np.concatenate(parts)
    out = np.empty(total, dtype)
    chunk = max(1, _CHUNK_BYTES // dtype.itemsize)
    at = 0
    for p in parts:
        n = int(p.shape[0])
        if n:
            _copy_into(out, at, np.ascontiguousarray(p), chunk)
        at += n
    return out
