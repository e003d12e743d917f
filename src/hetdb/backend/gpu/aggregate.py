"""Grouped aggregates and COUNT(DISTINCT) on the GPU (kernels in aggregate.cu)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.gpu.compile import get_module, launch
from hetdb.backend.gpu.hashing import I64_MAX, cuda_type, group_ids

AGG_TILE = 256 * 4          # AGG_BLOCK * AGG_ITEMS in aggregate.cu
SHARED_GROUPS_MAX = 2048    # 16 KiB of 8-byte accumulators per block: pre-aggregate in shared memory
_OPS = {"sum": "OpSum", "count": "OpCount", "min": "OpMin", "max": "OpMax", "any": "OpFirstRow"}
_VALUE_TYPES = ("int", "long long", "double", "bool")
AGG_NAMES = tuple(
    [f"agg_tile<OpSum, {t}>" for t in ("int", "long long", "bool")]
    + ["agg_tile<OpSumF, double>", "agg_tile<OpCount, bool>", "agg_tile<OpFirstRow, bool>"]
    + [f"agg_tile<{op}, {t}>" for op in ("OpMin", "OpMax") for t in _VALUE_TYPES])
_I64_MIN = np.iinfo(np.int64).min


def _run(op: str, ctype: str, values: Any | None, group_ids: Any, num_groups: int, valid: Any | None,
         out: Any) -> None:
    import cupy

    n = int(group_ids.shape[0])
    if n == 0 or num_groups == 0:
        return
    fn = get_module("aggregate.cu", AGG_NAMES).function(f"agg_tile<{op}, {ctype}>")
    shared_groups = num_groups if num_groups <= SHARED_GROUPS_MAX else 0
    blocks = max(1, min(-(-n // AGG_TILE), 1024 if shared_groups else 65536))
    launch(fn, blocks, 256,
           (cupy.ascontiguousarray(values) if values is not None else np.uint64(0),
            cupy.ascontiguousarray(group_ids, dtype=cupy.int64),
            cupy.ascontiguousarray(valid, dtype=cupy.bool_) if valid is not None else np.uint64(0),
            np.int64(n), out, np.int64(num_groups), np.int32(shared_groups)),
           shared_mem=shared_groups * 8)


def count(group_ids: Any, num_groups: int, valid: Any | None) -> Any:
    import cupy

    out = cupy.zeros(num_groups, dtype=cupy.int64)
    _run("OpCount", "bool", None, group_ids, num_groups, valid, out)
    return out


def aggregate(op: str, values: Any | None, group_ids: Any, num_groups: int,
              valid: Any | None = None) -> tuple[Any, Any]:
    """See Backend.aggregate."""
    import cupy

    if op == "count_star":  # counts rows, NULL or not (as the CPU backend)
        return count(group_ids, num_groups, None), cupy.ones(num_groups, dtype=cupy.bool_)
    if op == "count":
        return count(group_ids, num_groups, valid), cupy.ones(num_groups, dtype=cupy.bool_)
    if op not in _OPS:
        raise ValueError(f"unknown aggregate {op!r}")
    counts = count(group_ids, num_groups, valid)
    has = counts > 0
    ctype = cuda_type(values)
    dtype = np.dtype(values.dtype)
    if op == "sum":
        if dtype == np.float64:
            out = cupy.zeros(num_groups, dtype=cupy.float64)
            _run("OpSumF", "double", values, group_ids, num_groups, valid, out)
        else:
            out = cupy.zeros(num_groups, dtype=cupy.int64)
            _run("OpSum", ctype, values, group_ids, num_groups, valid, out)
        return out, has
    if op == "any":
        first = cupy.full(num_groups, I64_MAX, dtype=cupy.int64)
        _run("OpFirstRow", "bool", None, group_ids, num_groups, valid, first)
        result = values[cupy.where(has, first, 0)] if values.shape[0] else \
            cupy.zeros(num_groups, dtype=values.dtype)
        return cupy.where(has, result, cupy.zeros(1, dtype=values.dtype)), has
    init = I64_MAX if op == "min" else _I64_MIN
    ordered = cupy.full(num_groups, init, dtype=cupy.int64)
    _run(_OPS[op], ctype, values, group_ids, num_groups, valid, ordered)
    ordered = cupy.where(has, ordered, 0)
    if dtype == np.float64:
        # Inverse of order_bits(double): non-negative images are the bits, negative ones flip magnitude.
        bits = cupy.where(ordered >= 0, ordered, ordered ^ I64_MAX)
        return bits.view(cupy.float64), has
    return ordered.astype(dtype), has


def count_distinct(values: Any, group_ids_: Any, num_groups: int, valid: Any | None = None) -> Any:
    """Distinct valid values per group: distinct (group, value) pairs, counted per group."""
    import cupy

    if valid is not None:
        rows = cupy.flatnonzero(valid)
        values, group_ids_ = values[rows], group_ids_[rows]
    if values.shape[0] == 0:
        return cupy.zeros(num_groups, dtype=cupy.int64)
    _, _, first_rows = group_ids([cupy.ascontiguousarray(group_ids_, dtype=cupy.int64), values])
    return cupy.bincount(group_ids_[first_rows], minlength=num_groups).astype(cupy.int64)
