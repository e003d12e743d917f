"""GpuBackend: the Backend protocol (hetdb.backend.base) on CuPy arrays and NVRTC-compiled kernels."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu import aggregate as _agg
from hetdb.backend.gpu import hashing as _hash
from hetdb.backend.gpu import strings as _str
from hetdb.backend.gpu.topk import topk_order


class GpuBackend:
    """Kernels on the current CUDA device. Construct only where ``gpu_available()`` is True."""

    name = "gpu"

    def __init__(self) -> None:
        import cupy

        self.xp = cupy

    # ---- movement -------------------------------------------------------------------------------
    def asarray(self, host_array: Any) -> Any:
        if isinstance(host_array, np.ndarray) and host_array.dtype.kind in "biuf" and host_array.size:
            from hetdb.backend.gpu import upload

            if upload.by_kernel(host_array.nbytes):
                # by the SMs, beside a scan's copies queued on the copy engine (backend/gpu/upload.py)
                return upload.to_device([host_array])[0].reshape(host_array.shape)
        return self.xp.asarray(host_array)

    def to_host(self, array: Any) -> Any:
        return self.xp.asnumpy(array)

    # ---- selection ------------------------------------------------------------------------------
    def nonzero(self, mask: Any) -> Any:
        return self.xp.flatnonzero(mask).astype(self.xp.int64, copy=False)

    def gather(self, values: Any, indices: Any) -> Any:
        if values.shape[0] == 0:  # only -1 indices can point into an empty column
            return self.xp.zeros(indices.shape[0], dtype=values.dtype)
        # Negative indices wrap (like NumPy), so -1 reads the last value: harmless, as promised.
        return self.xp.take(values, indices)

    # ---- hashing and joins ----------------------------------------------------------------------
    def hash_keys(self, keys: list[Any]) -> Any:
        return _hash.hash_normalized(_hash.normalize_keys(keys))

    def join_build(self, keys: list[Any]) -> Any:
        return _hash.join_build(keys)

    def join_probe(self, table: Any, keys: list[Any], kind: str) -> Any:
        return _hash.join_probe(table, keys, kind)

    # ---- grouping and aggregation ---------------------------------------------------------------
    def group_ids(self, keys: list[Any], num_rows: int | None = None) -> tuple[Any, int, Any]:
        """See Backend.group_ids; with no keys, ``num_rows`` says how many rows form the one group."""
        return _hash.group_ids(keys, num_rows)

    def aggregate(self, op: str, values: Any | None, group_ids: Any, num_groups: int,
                  valid: Any | None = None) -> tuple[Any, Any]:
        return _agg.aggregate(op, values, group_ids, num_groups, valid)

    def count_distinct(self, values: Any, group_ids: Any, num_groups: int,
                       valid: Any | None = None) -> Any:
        return _agg.count_distinct(values, group_ids, num_groups, valid)

    # ---- ordering -------------------------------------------------------------------------------
    def sort_indices(self, keys: list[Any], descending: list[bool]) -> Any:
        xp = self.xp
        if not keys:
            raise ValueError("sort needs at least one key")
        n = int(keys[0].shape[0])
        if n == 0:
            return xp.empty(0, dtype=xp.int64)
        # Order-preserving int64 images of every key; the row number as the last tie-breaker makes the
        # result stable whatever sort algorithm lexsort uses. lexsort's primary key is its last row.
        images = _hash.sort_keys(keys, descending)
        stacked = xp.stack([xp.arange(n, dtype=xp.int64), *reversed(images)])
        return xp.lexsort(stacked).astype(xp.int64, copy=False)

    def topk_indices(self, keys: list[Any], descending: list[bool], k: int) -> Any:
        if not keys:
            raise ValueError("top-k needs at least one key")
        return topk_order(self.xp, _hash.sort_keys(keys, descending), k)

    # ---- strings --------------------------------------------------------------------------------
    def like(self, offsets: Any, chars: Any, pattern: str, case_insensitive: bool = False) -> Any:
        return _str.like(offsets, chars, pattern, case_insensitive)

    def compare_string_scalar(self, offsets: Any, chars: Any, literal: str, op: str) -> Any:
        return _str.compare_string_scalar(offsets, chars, literal, op)

    def factorize_strings(self, offsets: Any, chars: Any) -> tuple[Any, Any, Any]:
        return _str.factorize_strings(offsets, chars)

    def substring(self, offsets: Any, chars: Any, start: int, length: int | None) -> tuple[Any, Any]:
        return _str.substring(offsets, chars, start, length)

    def gather_strings(self, offsets: Any, chars: Any, indices: Any) -> tuple[Any, Any]:
        return _str.gather_strings(offsets, chars, indices)


__all__ = ["GpuBackend"]
