"""Stable lexicographic sort and top-k on the CPU.

Each key becomes an int64 whose signed order is the SQL order: floats map to their IEEE bits made
monotone (-0.0 == 0.0, NaN above +inf), and a descending key is bitwise-negated (``~x`` reverses
the order without the overflow of ``-x``). When the keys' combined range fits, they are packed into one
code together with the row number, so a single unstable sort of distinct values yields the stable
permutation; otherwise ``np.lexsort`` (stable) sorts the normalized keys.

The sort of packed codes runs on every kernel thread when there are many: a sample of the codes gives
one splitter per thread, each chunk of rows counts and scatters its codes into the splitters' ranges
(a stable partition), and each thread sorts one range in place; ranges are disjoint and ordered, so
their concatenation is the sorted array, with no merge step.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.groupby import SMALL_ROWS, int_ranges
from hetdb.backend.cpu.keys import kernel_threads

_SIGN = np.int64(-0x8000000000000000)
# Below this many codes one thread's sort beats partitioning them first.
PARALLEL_SORT_ROWS = 1 << 18
_SAMPLES_PER_RANGE = 64


@njit(cache=True, nogil=True, parallel=True)
def _float_order_key(x, descending):
    out = np.empty(x.shape[0], np.int64)
    bits = x.view(np.int64)
    for i in prange(x.shape[0]):
        v = x[i]
        if v != v:
            b = np.int64(0x7FF8000000000000)
        elif v == 0.0:
            b = np.int64(0)
        else:
            b = bits[i]
        # Negative floats: reverse their magnitude order; positive ones already order as int64.
        k = (b ^ np.int64(0x7FFFFFFFFFFFFFFF)) if b < 0 else b
        out[i] = ~k if descending else k
    return out


def order_key(column: np.ndarray, descending: bool) -> np.ndarray:
    """int64 key whose ascending signed order is the requested order of ``column``."""
    a = np.ascontiguousarray(column)
    if a.dtype.kind == "f":
        return _float_order_key(a.astype(np.float64, copy=False), descending)
    k = a.astype(np.int64, copy=False)
    return ~k if descending else k


@njit(cache=True, nogil=True, parallel=True)
def _pack(keys, mins, strides, idx_bits, rows):
    n = rows.shape[0]
    out = np.empty(n, np.int64)
    for i in prange(n):
        r = rows[i]
        c = 0
        for j in range(keys.shape[0]):
            c += (keys[j, r] - mins[j]) * strides[j]
        out[i] = (c << idx_bits) | np.int64(i)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _partitioned_sort(a, nparts):
    """``np.sort(a)`` of int64 values, partitioned by sampled splitters over ``nparts`` threads."""
    n = a.shape[0]
    if n == 0:
        return a.copy()
    step = max(1, n // (nparts * _SAMPLES_PER_RANGE))
    sample = np.sort(a[::step])
    splitters = np.empty(nparts - 1, np.int64)
    for p in range(nparts - 1):
        splitters[p] = sample[(p + 1) * sample.shape[0] // nparts]
    hist = np.zeros((nparts, nparts), np.int64)
    for c in prange(nparts):
        for i in range(c * n // nparts, (c + 1) * n // nparts):
            hist[c, np.searchsorted(splitters, a[i], side="right")] += 1
    starts = np.empty(nparts + 1, np.int64)
    pos = np.empty((nparts, nparts), np.int64)
    total = 0
    for p in range(nparts):
        starts[p] = total
        for c in range(nparts):
            pos[c, p] = total
            total += hist[c, p]
    starts[nparts] = total
    out = np.empty(n, np.int64)
    for c in prange(nparts):
        for i in range(c * n // nparts, (c + 1) * n // nparts):
            p = np.searchsorted(splitters, a[i], side="right")
            out[pos[c, p]] = a[i]
            pos[c, p] += 1
    for p in prange(nparts):
        out[starts[p]:starts[p + 1]].sort()
    return out


def sort_int64(a: np.ndarray) -> np.ndarray:
    """Sorted copy of an int64 array, on the calling thread's kernel threads when it is large."""
    threads = kernel_threads()
    if threads == 1 or a.shape[0] < PARALLEL_SORT_ROWS:
        return np.sort(a)
    return _partitioned_sort(a, 2 * threads)


def _packed_order(okeys: list[np.ndarray], rows: np.ndarray) -> np.ndarray | None:
    """Stable order of ``rows`` (positions into ``rows``) by packing keys and position into one int64;
    None when they do not fit in 63 bits."""
    n = rows.shape[0]
    ranges = int_ranges([k[rows] for k in okeys]) if n else None
    if ranges is None:
        return None
    sizes = [hi - lo + 1 for lo, hi in ranges]
    total = 1
    for s in sizes:
        total *= s
    idx_bits = max(1, int(n - 1).bit_length())
    if (total - 1).bit_length() + idx_bits > 63:
        return None
    strides = np.empty(len(okeys), np.int64)
    acc = 1
    for j in range(len(okeys) - 1, -1, -1):
        strides[j] = acc
        acc *= sizes[j]
    mins = np.array([lo for lo, _ in ranges], np.int64)
    if n < SMALL_ROWS:  # (a parallel Numba region costs more than these few NumPy passes)
        codes = ((np.stack([k[rows] for k in okeys]) - mins[:, None]) * strides[:, None]).sum(axis=0)
        packed = np.sort((codes << np.int64(idx_bits)) | np.arange(n, dtype=np.int64))
    else:
        packed = sort_int64(_pack(np.stack(okeys), mins, strides, np.int64(idx_bits), rows))
    return packed & np.int64((1 << idx_bits) - 1)


# at most this many rows are ordered by np.lexsort straight away: packing the keys costs more (a hot
# GPU query's 280 groups by two keys: 18 us packed, 3 us lexsort; both stable, the same order)
LEXSORT_ROWS = 1 << 10


def _sorted_positions(okeys: list[np.ndarray], rows: np.ndarray) -> np.ndarray:
    if rows.shape[0] <= LEXSORT_ROWS:
        return np.lexsort([k[rows] for k in reversed(okeys)]).astype(np.int64, copy=False)
    order = _packed_order(okeys, rows)
    if order is not None:
        return order
    if len(okeys) == 1:
        return np.argsort(okeys[0][rows], kind="stable").astype(np.int64, copy=False)
    # np.lexsort sorts by the last key first.
    return np.lexsort([k[rows] for k in reversed(okeys)]).astype(np.int64, copy=False)


def sort_indices(keys: list[np.ndarray], descending: list[bool]) -> np.ndarray:
    """Stable lexicographic sort permutation (int64); see ``Backend.sort_indices``."""
    if not keys:
        raise ValueError("sort_indices needs at least one key")
    n = int(np.asarray(keys[0]).shape[0])
    if n == 0:
        return np.zeros(0, np.int64)
    okeys = [order_key(k, d) for k, d in zip(keys, descending, strict=True)]
    return _sorted_positions(okeys, np.arange(n, dtype=np.int64))


def topk_indices(keys: list[np.ndarray], descending: list[bool], k: int) -> np.ndarray:
    """``sort_indices(keys, descending)[:k]`` without sorting every row."""
    if not keys:
        raise ValueError("topk_indices needs at least one key")
    n = int(np.asarray(keys[0]).shape[0])
    k = max(0, min(int(k), n))
    if k == 0:
        return np.zeros(0, np.int64)
    okeys = [order_key(c, d) for c, d in zip(keys, descending, strict=True)]
    if 4 * k >= n:
        return _sorted_positions(okeys, np.arange(n, dtype=np.int64))[:k]
    # Every row of the true top k has a first key <= the k-th smallest first key; taking all rows up to
    # and including that value (ties too) in row order keeps the stable tie order exact.
    first = okeys[0]
    kth = np.partition(first, k - 1)[k - 1]
    rows = np.flatnonzero(first <= kth).astype(np.int64, copy=False)
    return rows[_sorted_positions(okeys, rows)[:k]]
