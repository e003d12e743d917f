"""The window operator's row sort on the CPU: a stable sort of packed int64 row codes (PARTITION BY
and ORDER BY keys in one non-negative integer below ``2**bits``).

One parallel most-significant-digit pass scatters the rows into buckets by the code's top bits (the
high part of the PARTITION BY key); each bucket, small enough to stay in cache, is then sorted on its
own by least-significant-digit passes over the remaining bits, the buckets in parallel. The rows move
through main memory once, where sorting the whole input by LSD digits moves them once per 11 bits
(four to five times for a customer key and a price), and the per-bucket work needs no shared state, so
it scales with the threads. Codes whose top bits put most rows into one bucket (skew) keep the LSD
sort over all rows.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu.keys import kernel_threads

_TOP_BITS = 11    # 2,048 buckets: each thread's counts and scatter targets stay in cache
_LOCAL_BITS = 8   # digits of the in-bucket passes (256 counts for a few thousand rows)
_INSERTION_ROWS = 24
# Below this many rows, or with fewer bits than two digits, the LSD sort over all rows is as fast.
_MSD_ROWS = 1 << 15


def sort_codes(code: np.ndarray, bits: int) -> np.ndarray:
    """Stable sort order (int64 row numbers) of ``code`` (non-negative int64 below ``2**bits``)."""
    n = code.shape[0]
    if n < _MSD_ROWS or bits <= _TOP_BITS:
        return K.radix_refine(code, bits, np.arange(n, dtype=np.int64))
    shift = bits - _TOP_BITS
    chunks = max(1, kernel_threads())
    counts = _top_counts(code, shift, chunks)
    if counts.sum(axis=0).max() > n // 2:  # skew: one bucket would sort most rows on one thread
        return K.radix_refine(code, bits, np.arange(n, dtype=np.int64))
    keys = np.empty(n, np.int64)
    order = np.empty(n, np.int64)
    _scatter(code, shift, counts, keys, order)
    _sort_buckets(keys, order, counts.sum(axis=0), shift)
    return order


@njit(cache=True, nogil=True, parallel=True)
def _top_counts(code, shift, chunks):
    n = code.shape[0]
    size = (n + chunks - 1) // chunks
    counts = np.zeros((chunks, 1 << _TOP_BITS), np.int64)
    for c in prange(chunks):
        for i in range(c * size, min(n, (c + 1) * size)):
            counts[c, code[i] >> shift] += 1
    return counts


@njit(cache=True, nogil=True, parallel=True)
def _scatter(code, shift, counts, keys, order):
    """Rows into their top-digit buckets, stably (chunk c's rows of a bucket after chunk c-1's)."""
    n = code.shape[0]
    chunks = counts.shape[0]
    size = (n + chunks - 1) // chunks
    offsets = np.empty_like(counts)
    start = 0
    for d in range(counts.shape[1]):
        for c in range(chunks):
            offsets[c, d] = start
            start += counts[c, d]
    for c in prange(chunks):
        for i in range(c * size, min(n, (c + 1) * size)):
            d = code[i] >> shift
            p = offsets[c, d]
            offsets[c, d] = p + 1
            keys[p] = code[i]
            order[p] = i


@njit(cache=True, nogil=True, parallel=True)
def _sort_buckets(keys, order, sizes, bits):
    """Each bucket's rows (``keys``/``order`` in bucket order) sorted stably by the low ``bits`` of
    their keys, the buckets in parallel."""
    starts = np.zeros(sizes.shape[0] + 1, np.int64)
    for d in range(sizes.shape[0]):
        starts[d + 1] = starts[d] + sizes[d]
    for d in prange(sizes.shape[0]):
        a = starts[d]
        b = starts[d + 1]
        if b - a <= _INSERTION_ROWS:
            for i in range(a + 1, b):
                k = keys[i]
                v = order[i]
                j = i
                while j > a and keys[j - 1] > k:
                    keys[j] = keys[j - 1]
                    order[j] = order[j - 1]
                    j -= 1
                keys[j] = k
                order[j] = v
        else:
            _lsd_bucket(keys, order, a, b, bits)


@njit(cache=True, nogil=True)
def _lsd_bucket(keys, order, a, b, bits):
    m = b - a
    src_k = keys[a:b].copy()
    src_i = order[a:b].copy()
    dst_k = np.empty(m, np.int64)
    dst_i = np.empty(m, np.int64)
    radix = 1 << _LOCAL_BITS
    mask = radix - 1
    counts = np.empty(radix, np.int64)
    shift = 0
    while shift < bits:
        counts[:] = 0
        for i in range(m):
            counts[(src_k[i] >> shift) & mask] += 1
        single = False
        start = 0
        for d in range(radix):
            cnt = counts[d]
            counts[d] = start
            single = single or cnt == m
            start += cnt
        if not single:  # a digit every row shares leaves the order as it is
            for i in range(m):
                d = (src_k[i] >> shift) & mask
                p = counts[d]
                counts[d] = p + 1
                dst_k[p] = src_k[i]
                dst_i[p] = src_i[i]
            src_k, dst_k = dst_k, src_k
            src_i, dst_i = dst_i, src_i
        shift += _LOCAL_BITS
    keys[a:b] = src_k
    order[a:b] = src_i


def pack_first(key, span, lo, base):
    """A new row code: ``base * span + (key - lo)`` (``base`` None: ``key - lo``), one parallel pass
    (where NumPy would first fill or copy the code on one thread). Outputs are allocated by NumPy
    (huge pages), not inside the kernels (Numba's allocator faults every 4 KiB page in on first
    touch)."""
    out = np.empty(key.shape[0], np.int64)
    if base is None:
        _offset(key, lo, out)
    else:
        _pack_into(key, span, lo, base, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _offset(key, lo, out):
    for i in prange(key.shape[0]):
        out[i] = key[i] - lo


@njit(cache=True, nogil=True, parallel=True)
def _pack_into(key, span, lo, base, out):
    for i in prange(key.shape[0]):
        out[i] = base[i] * span + (key[i] - lo)


def inverted(key):
    """``~key``: the int64 key whose ascending order is ``key``'s descending order."""
    out = np.empty(key.shape[0], np.int64)
    _invert(key, out)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _invert(key, out):
    for i in prange(key.shape[0]):
        out[i] = ~key[i]


@njit(cache=True, nogil=True, parallel=True)
def _first_descent(code, chunks):
    n = code.shape[0]
    size = (n + chunks - 1) // chunks
    found = np.zeros(chunks, np.bool_)
    for c in prange(chunks):
        for i in range(max(1, c * size), min(n, (c + 1) * size)):
            if code[i] < code[i - 1]:
                found[c] = True
                break
    return found.any()


def is_sorted(code: np.ndarray) -> bool:
    """Whether ``code`` never decreases; each thread's slice stops at its first descent (an unsorted
    key costs a few rows, not a pass)."""
    n = code.shape[0]
    return not _first_descent(code, max(1, min(kernel_threads() * 4, n // 4096)))



@njit(cache=True, nogil=True, parallel=True)
def _run_counts(part, chunks):
    """Per chunk of rows: how many runs of equal ``part`` start in it (prefix sums, from 0)."""
    n = part.shape[0]
    size = (n + chunks - 1) // chunks
    counts = np.zeros(chunks + 1, np.int64)
    for c in prange(chunks):
        k = 0
        for i in range(c * size, min(n, (c + 1) * size)):
            if i == 0 or part[i] != part[i - 1]:
                k += 1
        counts[c + 1] = k
    for c in range(chunks):
        counts[c + 1] += counts[c]
    return counts


@njit(cache=True, nogil=True, parallel=True)
def _fill_run_starts(part, counts, out):
    n = part.shape[0]
    chunks = counts.shape[0] - 1
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        k = counts[c]
        for i in range(c * size, min(n, (c + 1) * size)):
            if i == 0 or part[i] != part[i - 1]:
                out[k] = i
                k += 1
    out[counts[chunks]] = n


def _run_starts(part, chunks):
    """Start rows of the runs of equal ``part``, and ``n`` at the end: each chunk counts its starts,
    then writes them at its offset."""
    counts = _run_counts(part, chunks)
    out = np.empty(int(counts[-1]) + 1, np.int64)
    _fill_run_starts(part, counts, out)
    return out


def sort_within_runs(code: np.ndarray, part: np.ndarray) -> np.ndarray:
    """Stable sort order of ``code`` when ``part`` (the PARTITION BY part of it) is sorted already:
    each run of one partition is sorted on its own (insertion sort for short runs, merge sort else),
    the runs in parallel, as are finding them and numbering their rows."""
    n = code.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    starts = _run_starts(part, max(1, min(kernel_threads() * 4, n // 65536)))
    return _sort_within_runs(code, starts, np.empty(n, np.int64))


@njit(cache=True, nogil=True, parallel=True)
def _sort_within_runs(code, starts, order):
    for r in prange(starts.shape[0] - 1):
        a = starts[r]
        b = starts[r + 1]
        if b - a <= _INSERTION_ROWS:
            for i in range(a, b):
                c = code[i]
                j = i
                while j > a and code[order[j - 1]] > c:
                    order[j] = order[j - 1]
                    j -= 1
                order[j] = i
        else:
            sub = np.argsort(code[a:b], kind="mergesort")
            for i in range(b - a):
                order[a + i] = a + sub[i]
    return order
