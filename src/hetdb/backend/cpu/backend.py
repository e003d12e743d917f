"""CpuBackend: the ``Backend`` protocol on host memory with NumPy and Numba kernels."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import njit, prange

from hetdb.backend.cpu import aggregate as _agg
from hetdb.backend.cpu import groupby as _groupby
from hetdb.backend.cpu import join as _join
from hetdb.backend.cpu import like as _like
from hetdb.backend.cpu import sort as _sort
from hetdb.backend.cpu import strings as _strings
from hetdb.backend.cpu.keys import hash_rows, kernel_threads, key_matrix, set_kernel_threads

# Below this many rows NumPy's single-threaded take beats starting the thread pool; with several kernel
# threads (the operators' work after a pipeline's workers: a join's payload copies in key order, 650k rows
# per column for TPC-H q09 at SF 2, took 12 ms of one thread with NumPy) from _PARALLEL_GATHER_ROWS_MT
# (a take of that many random rows takes about what waking sleeping kernel threads may: ~1 ms)
_PARALLEL_GATHER_ROWS = 1 << 20
_PARALLEL_GATHER_ROWS_MT = 1 << 18


@njit(cache=True, nogil=True, parallel=True)
def _gather(values, indices, out):
    n = values.shape[0]
    for i in prange(indices.shape[0]):
        j = indices[i]
        out[i] = values[j if j >= 0 else n - 1]


class CpuBackend:
    """Kernels of ``hetdb.backend.base.Backend`` for the host CPU (arrays are NumPy, no copies)."""

    name = "cpu"
    xp = np

    def set_kernel_threads(self, n: int | None) -> None:
        """Threads the calling thread's Numba kernels may use (None: all). Pipeline workers run
        morsels in parallel already; a parallel kernel inside each would oversubscribe the cores and
        every OpenMP barrier would then wait for a descheduled thread."""
        set_kernel_threads(numba.config.NUMBA_NUM_THREADS if n is None else n)

    # ---- movement -------------------------------------------------------------------------------
    def asarray(self, host_array: Any) -> np.ndarray:
        return np.asarray(host_array)

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    # ---- selection ------------------------------------------------------------------------------
    def nonzero(self, mask: Any) -> np.ndarray:
        return np.flatnonzero(np.asarray(mask, dtype=bool)).astype(np.int64, copy=False)

    def gather(self, values: Any, indices: Any) -> np.ndarray:
        values = np.asarray(values)
        indices = np.asarray(indices, dtype=np.int64)
        if values.shape[0] == 0:
            return np.zeros(indices.shape[0], values.dtype)
        n = indices.shape[0]
        if values.dtype.kind in "iufb" and (n >= _PARALLEL_GATHER_ROWS or (
                n >= _PARALLEL_GATHER_ROWS_MT and kernel_threads() > 1)):
            # the output allocated by NumPy (huge pages): Numba's allocator faults in every 4 KiB
            # page on first touch (measured 4x slower on 20M rows)
            out = np.empty(indices.shape[0], values.dtype)
            _gather(np.ascontiguousarray(values), indices, out)
            return out
        # Index -1 wraps to the last element: harmless, as the contract allows.
        return np.take(values, indices)

    # ---- hashing and joins ----------------------------------------------------------------------
    def hash_keys(self, keys: list[Any]) -> np.ndarray:
        return hash_rows(key_matrix(keys))

    def join_build(self, keys: list[Any]) -> _join.CpuJoinTable:
        return _join.join_build(keys)

    def join_probe(self, table: _join.CpuJoinTable, keys: list[Any], kind: str) -> Any:
        return _join.join_probe(table, keys, kind)

    def join_max_matches(self, table: _join.CpuJoinTable) -> int:
        """The most build rows one probe row can match (bounds a probe batch's output)."""
        return _join.join_max_matches(table)

    def join_match_counts(self, table: _join.CpuJoinTable, keys: list[Any]) -> np.ndarray:
        """Build rows matching each probe row (int64), before any pair is made."""
        return _join.join_match_counts(table, keys)

    def join_might_match(self, table: _join.CpuJoinTable, keys: list[Any]) -> np.ndarray:
        """Bool per probe row: False only where no build row can have the key (no false negatives)."""
        return _join.join_might_match(table, keys)

    # ---- grouping and aggregation ---------------------------------------------------------------
    def group_ids(self, keys: list[Any], num_rows: int | None = None) -> tuple[np.ndarray, int, np.ndarray]:
        """See ``Backend.group_ids``; with no keys, ``num_rows`` gives the row count."""
        return _groupby.group_ids(keys, num_rows)

    def aggregate(self, op: str, values: Any | None, group_ids: Any, num_groups: int,
                  valid: Any | None = None) -> tuple[np.ndarray, np.ndarray]:
        return _agg.aggregate(op, values, group_ids, num_groups, valid)

    def count_distinct(self, values: Any, group_ids: Any, num_groups: int,
                       valid: Any | None = None) -> np.ndarray:
        return _groupby.count_distinct(values, group_ids, num_groups, valid)

    # ---- ordering -------------------------------------------------------------------------------
    def sort_indices(self, keys: list[Any], descending: list[bool]) -> np.ndarray:
        return _sort.sort_indices(keys, descending)

    def topk_indices(self, keys: list[Any], descending: list[bool], k: int) -> np.ndarray:
        return _sort.topk_indices(keys, descending, k)

    # ---- strings --------------------------------------------------------------------------------
    def like(self, offsets: Any, chars: Any, pattern: str, case_insensitive: bool = False) -> np.ndarray:
        return _like.like(offsets, chars, pattern, case_insensitive)

    def compare_string_scalar(self, offsets: Any, chars: Any, literal: str, op: str) -> np.ndarray:
        return _strings.compare_string_scalar(offsets, chars, literal, op)

    def string_in(self, offsets: Any, chars: Any, literals: tuple[str, ...],
                  prefix_chars: int | None = None) -> np.ndarray:
        """See ``strings.string_in`` (CPU only: the evaluator falls back to one comparison per
        literal on a backend without it)."""
        return _strings.string_in(offsets, chars, literals, prefix_chars)

    def factorize_strings(self, offsets: Any, chars: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _strings.factorize_strings(offsets, chars)

    def substring(self, offsets: Any, chars: Any, start: int, length: int | None) -> tuple[np.ndarray, np.ndarray]:
        return _strings.substring(offsets, chars, start, length)

    def gather_strings(self, offsets: Any, chars: Any, indices: Any) -> tuple[np.ndarray, np.ndarray]:
        return _strings.gather_strings(offsets, chars, indices)
