"""Key normalization and hashing shared by the CPU join, group-by and distinct kernels.

Every key column is widened to the int64 "bits" that ``Backend.hash_keys`` defines (bool -> 0/1, ints
sign-extended, float64 -> IEEE bits with -0.0 -> 0.0 and every NaN -> the canonical quiet NaN). Equal
bits <=> equal SQL keys, so the kernels compare and hash one int64 matrix and compile once, whatever
the mix of key dtypes.
"""

from __future__ import annotations

import ctypes

import numba
import numpy as np
from numba import njit, prange
from numba.np.ufunc import parallel as _numba_parallel

from hetdb.backend.base import HASH_SEED
from hetdb.backend.cpu import tuning
from hetdb.errors import UnsupportedError

CANONICAL_NAN_BITS = np.int64(0x7FF8000000000000)
_SEED = np.uint64(HASH_SEED)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
# Rows per parallel chunk: large enough that scheduling is noise, small enough to balance 16 cores.
MIN_CHUNK_ROWS = 1 << 16


_thread_calls: list = []  # (getter, setter) of the threading layer, called with the GIL held


def _layer_calls() -> tuple | None:
    """Numba's per-thread getter and setter of the kernel thread count, as functions that keep the
    GIL: Numba wraps them with ctypes.CFUNCTYPE, which lets go of the GIL around a call that only
    reads a thread-local (each let-go is a chance to queue for the GIL again behind 15 workers)."""
    if _thread_calls:
        return _thread_calls[0]
    get = getattr(_numba_parallel, "_get_num_threads", None)
    set_ = getattr(_numba_parallel, "_set_num_threads", None)
    if not getattr(_numba_parallel, "_is_initialized", False) or get is None or set_ is None:
        return None
    calls = (ctypes.PYFUNCTYPE(ctypes.c_int)(ctypes.cast(get, ctypes.c_void_p).value),
             ctypes.PYFUNCTYPE(None, ctypes.c_int)(ctypes.cast(set_, ctypes.c_void_p).value))
    _thread_calls.append(calls)
    return calls


def kernel_threads() -> int:
    """``numba.get_num_threads()`` of the calling thread, without the lock the public function takes.

    Numba's getter and setter first take a process-wide multiprocessing lock (a semaphore) to check
    that the threading layer is up; pipeline workers ask several times per batch. Once the layer is
    up, its own per-thread getter answers (see ``_layer_calls``)."""
    calls = _layer_calls()
    return int(calls[0]()) if calls is not None else numba.get_num_threads()


def set_kernel_threads(n: int) -> None:
    """``numba.set_num_threads(n)`` for the calling thread (n clamped to the launched threads),
    without the process-wide lock once the threading layer is up (see ``kernel_threads``)."""
    n = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))
    calls = _layer_calls()
    if calls is not None:
        calls[1](n)
    else:
        numba.set_num_threads(n)


def num_chunks(n: int, min_rows: int = MIN_CHUNK_ROWS) -> int:
    """How many chunks to split ``n`` rows into for a prange over chunks."""
    threads = kernel_threads()
    if threads == 1:
        return 1  # one thread gains nothing from chunks, and per-chunk accumulators cost memory
    return max(1, min(4 * threads, (n + min_rows - 1) // min_rows))


@njit(cache=True, nogil=True, parallel=True)
def _float_bits(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape[0], np.int64)
    bits = x.view(np.int64)
    for i in prange(x.shape[0]):
        v = x[i]
        if v != v:
            out[i] = CANONICAL_NAN_BITS
        elif v == 0.0:
            out[i] = 0  # -0.0 and 0.0 are one key
        else:
            out[i] = bits[i]
    return out


def key_bits(column: np.ndarray) -> np.ndarray:
    """The int64 key bits of one column (a view when it already is int64)."""
    a = np.ascontiguousarray(column)
    kind = a.dtype.kind
    if kind == "f":
        return _float_bits(a.astype(np.float64, copy=False))
    if kind in "iub":
        return a.astype(np.int64, copy=False)
    raise UnsupportedError(f"key columns must be int32, int64, float64 or bool, not {a.dtype}")


# key matrices of at least this many rows are filled on every kernel thread (a hash build's or merge's
# keys after the workers: NumPy's conversions and copies ran on one thread, TPC-H q09's two-key build of
# 3.3M rows at SF 10 ~25 ms of one core per matrix)
# (backend/cpu/tuning.py: parallel_matrix_rows)


@njit(cache=True, nogil=True, parallel=True)
def _fill_row(out, j, a):
    for i in prange(a.shape[0]):
        out[j, i] = np.int64(a[i])


def _integer(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def key_matrix(keys: list[np.ndarray]) -> np.ndarray:
    """A (num_keys, num_rows) C-contiguous int64 matrix of key bits."""
    if not keys:
        raise UnsupportedError("a hash kernel needs at least one key column")
    n = int(np.asarray(keys[0]).shape[0])
    for k in keys:
        if np.asarray(k).shape[0] != n:
            raise ValueError("key columns have different lengths")
    parallel = n >= tuning.get("parallel_matrix_rows") and kernel_threads() > 1
    if len(keys) == 1:
        a = np.ascontiguousarray(keys[0])
        if not parallel or a.dtype == np.int64 or a.dtype.kind not in "iub":
            return key_bits(a).reshape(1, n)
    out = np.empty((len(keys), n), np.int64)
    for j, k in enumerate(keys):
        a = np.ascontiguousarray(k)
        if parallel and a.dtype.kind in "iub":
            _fill_row(out, j, _integer(a))
        else:
            out[j] = key_bits(a)
    return out


@njit(cache=True, nogil=True, inline="always")
def splitmix64(z: np.uint64) -> np.uint64:
    z = z + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def row_hash(keys: np.ndarray, i: int) -> np.uint64:
    h = _SEED
    for j in range(keys.shape[0]):
        h = splitmix64(h ^ np.uint64(keys[j, i]))
    return h


@njit(cache=True, nogil=True, parallel=True)
def _hash_rows_into(keys: np.ndarray, out: np.ndarray) -> None:
    for i in prange(keys.shape[1]):
        out[i] = row_hash(keys, i)


def hash_rows(keys: np.ndarray) -> np.ndarray:
    """uint64 composite hash per row of a key matrix (the documented splitmix64 chain). Large
    outputs of the CPU kernels are allocated by NumPy, which asks for huge pages where the kernel
    only gives them on request (Numba's allocations faulted 128 MiB in ~3x slower on the 2-core
    machine: 4 KiB pages)."""
    out = np.empty(keys.shape[1], np.uint64)
    _hash_rows_into(keys, out)
    return out


@njit(cache=True, nogil=True, inline="always")
def rows_equal(a: np.ndarray, i: int, b: np.ndarray, j: int) -> bool:
    for c in range(a.shape[0]):
        if a[c, i] != b[c, j]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def same_key(a: np.ndarray, i: int, b: np.ndarray, j: int) -> bool:
    """Row i of ``a`` and row j of ``b`` hold equal keys, GIVEN that their ``row_hash`` values are
    equal. One key column needs no comparison: its hash is splitmix64 of (seed ^ key), a bijection
    of int64, so equal hashes are equal keys; skipping the look-up of the stored row saves two
    cache misses per probe hit on large tables."""
    return a.shape[0] == 1 or rows_equal(a, i, b, j)


@njit(cache=True, nogil=True, inline="always")
def slot_of(h: np.uint64, shift: np.uint64) -> int:
    # Fibonacci hashing on top of the key hash: shuffles partition hash bits (taken from h by the
    # operators) so that rows of one partition still spread over the whole table.
    return np.int64((h * _GOLDEN) >> shift)


def table_capacity(n: int) -> tuple[int, np.uint64]:
    """Power-of-two slot count (load <= 0.5) and the shift that maps a hash to a slot."""
    bits = max(4, int(2 * max(n, 1) - 1).bit_length())
    return 1 << bits, np.uint64(64 - bits)
