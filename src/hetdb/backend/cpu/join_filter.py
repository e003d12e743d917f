"""Approximate membership of probe keys in a join's build keys (a runtime join filter).

A scan below a selective inner/semi join tests its join key against the build side before it
gathers the other columns, so rows that cannot match are never copied. The filter never answers
"no" for a key the build holds (no false negatives); a "yes" may be wrong, the join decides.

Two layouts, chosen per build:
  * one integer key (or several packed into one code) whose range is small: a bitmap over
    [min, max], exact and one bit per possible key;
  * otherwise: a blocked Bloom filter over the row hash, one 64-bit word per block and three bits
    per key (about 16 bits per build row: a few percent false positives, one cache line per probe).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu import tuning
from hetdb.backend.cpu.atomics import atomic_or
from hetdb.backend.cpu.groupby import int_ranges
from hetdb.backend.cpu.keys import hash_rows, kernel_threads, key_matrix, num_chunks, set_kernel_threads

# A bitmap may use up to this many bits per build row (or this floor: 8 Mbit = 1 MiB is cheap).
# (128, not 64: TPC-H q21's and q04's builds keyed by l_orderkey, ~700k of 60M keys at SF 10, got a
# Bloom filter, hashed per row; the 7.5 MB bitmap is exact and lineitem, sorted by the key, reads it
# in order: 1 thread q21 1100 vs 1317-1345 ms, q04 226 vs 361-452 ms process CPU, same run)
_BITMAP_BITS_PER_ROW = 128
_BITMAP_MIN_BITS = 1 << 23
_BLOOM_BITS_PER_ROW = 16

_lock = threading.Lock()


@dataclass
class KeyFilter:
    bits: np.ndarray   # uint64 words
    bitmap: bool       # True: bit (key - lo) per key; False: blocked Bloom filter over the hash
    lo: int = 0
    size: int = 0      # bitmap: number of keys in [lo, lo + size)
    shift: int = 0     # bloom: block = hash >> shift


@njit(cache=True, nogil=True)
def _bitmap_build(key, lo, size):
    bits = np.zeros((size + 63) >> 6, np.uint64)
    for i in range(key.shape[0]):
        c = key[i] - lo
        bits[c >> 6] |= np.uint64(1) << np.uint64(c & 63)
    return bits


@njit(cache=True, nogil=True, parallel=True)
def _bitmap_fill(key, lo, bits, nchunks):
    """``_bitmap_build`` on every kernel thread into zeroed ``bits``: each chunk of keys ORs a word's
    bits together while its keys stay in that word and adds them with one atomic OR (threads may
    share a word; keys in order, as a build from lineitem by l_orderkey, make one per word, where an
    atomic per key made a chain of dependent atomics ~6x slower than one thread)."""
    n = key.shape[0]
    for c in prange(nchunks):
        cur = np.int64(-1)
        acc = np.uint64(0)
        for i in range(c * n // nchunks, (c + 1) * n // nchunks):
            k = np.int64(key[i]) - lo
            w = k >> 6
            if w != cur:
                if cur >= 0:
                    atomic_or(bits, cur, acc)
                cur = w
                acc = np.uint64(0)
            acc |= np.uint64(1) << np.uint64(k & 63)
        if cur >= 0:
            atomic_or(bits, cur, acc)


@njit(cache=True, nogil=True, parallel=True)
def _bitmap_test(bits, lo, size, key):
    n = key.shape[0]
    out = np.empty(n, np.bool_)
    for i in prange(n):
        c = np.int64(key[i]) - lo
        if c < 0 or c >= size:
            out[i] = False
        else:
            out[i] = (bits[c >> 6] >> np.uint64(c & 63)) & np.uint64(1) != 0
    return out


@njit(cache=True, nogil=True, inline="always")
def _bloom_mask(h):
    # three bit positions from hash bits the block index does not use (the low 18 bits)
    return ((np.uint64(1) << (h & np.uint64(63)))
            | (np.uint64(1) << ((h >> np.uint64(6)) & np.uint64(63)))
            | (np.uint64(1) << ((h >> np.uint64(12)) & np.uint64(63))))


@njit(cache=True, nogil=True)
def _bloom_build(hashes, nblocks_log2):
    bits = np.zeros(1 << nblocks_log2, np.uint64)
    shift = np.uint64(64 - nblocks_log2)
    for i in range(hashes.shape[0]):
        h = hashes[i]
        bits[np.int64(h >> shift)] |= _bloom_mask(h)
    return bits


@njit(cache=True, nogil=True, parallel=True)
def _bloom_fill(hashes, nblocks_log2, bits):
    """``_bloom_build`` on every kernel thread into zeroed ``bits`` (blocks shared: atomic ORs)."""
    shift = np.uint64(64 - nblocks_log2)
    for i in prange(hashes.shape[0]):
        h = hashes[i]
        atomic_or(bits, np.int64(h >> shift), _bloom_mask(h))


@njit(cache=True, nogil=True, parallel=True)
def _bloom_test(bits, nblocks_log2, hashes):
    n = hashes.shape[0]
    out = np.empty(n, np.bool_)
    shift = np.uint64(64 - nblocks_log2)
    for i in prange(n):
        h = hashes[i]
        m = _bloom_mask(h)
        out[i] = (bits[np.int64(h >> shift)] & m) == m
    return out


def build_filter(keys: np.ndarray) -> KeyFilter:
    """The filter over a (num_keys, num_rows) int64 key matrix (the join table's build keys)."""
    n = int(keys.shape[1])
    if keys.shape[0] == 1 and n:
        (lo, hi), = int_ranges([keys[0]])
        size = hi - lo + 1
        if size <= max(_BITMAP_MIN_BITS, _BITMAP_BITS_PER_ROW * n):
            if kernel_threads() > 1:  # (before a probe pipeline's workers: one thread's loop was serial time)
                bits = np.zeros((size + 63) >> 6, np.uint64)
                _bitmap_fill(keys[0], np.int64(lo), bits, num_chunks(n))
                return KeyFilter(bits, True, lo, size)
            return KeyFilter(_bitmap_build(keys[0], np.int64(lo), size), True, lo, size)
    log2 = max(6, int(max(1, n * _BLOOM_BITS_PER_ROW // 64) - 1).bit_length())
    log2 = min(log2, 46)  # keeps the three in-word bit positions clear of the block bits
    if kernel_threads() > 1:
        bits = np.zeros(1 << log2, np.uint64)
        _bloom_fill(hash_rows(keys), log2, bits)
        return KeyFilter(bits, False, shift=log2)
    return KeyFilter(_bloom_build(hash_rows(keys), log2), False, shift=log2)


def filter_of(table) -> KeyFilter:
    """The table's filter, built on first use and kept on the table (tables are shared by workers)."""
    f = getattr(table, "key_filter", None)
    if f is None:
        with _lock:
            f = getattr(table, "key_filter", None)
            if f is None:
                f = table.key_filter = _build_filter_sized(table.keys)
    return f


# a filter over fewer build keys is built on one kernel thread (waking 16 sleeping ones costs more)
# (backend/cpu/tuning.py: small_filter_keys)


def _build_filter_sized(keys: np.ndarray) -> KeyFilter:
    threads = kernel_threads()
    if threads == 1 or keys.shape[1] >= tuning.get("small_filter_keys"):
        return build_filter(keys)
    set_kernel_threads(1)
    try:
        return build_filter(keys)
    finally:
        set_kernel_threads(threads)


def might_match(f: KeyFilter, keys: list[np.ndarray]) -> np.ndarray:
    """Bool per probe row: False only where the key is certainly not among the build keys (keys
    already normalized and packed like the build's)."""
    if f.bitmap:
        key = np.ascontiguousarray(keys[0]) if len(keys) == 1 else None
        if key is None or key.dtype.kind not in "iu":
            key = key_matrix(keys)[0]  # int32 keys are tested as they are: no widened copy per batch
        return _bitmap_test(f.bits, np.int64(f.lo), np.int64(f.size), key)
    km = key_matrix(keys)
    return _bloom_test(f.bits, f.shift, hash_rows(km))
