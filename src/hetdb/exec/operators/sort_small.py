"""The order of a small batch held on the GPU, computed on the host.

A sort or top-N whose input is a few hundred rows (TPC-H q02: 100 candidates ranked by s_acctbal,
n_name, s_name, p_partkey) spends its time in launches and device->host round trips, not in
sorting: every string key factorized (its bytes to the host and the codes back), a device lexsort,
then a gather of every column. Here the key columns come to the host once (strings as bytes), the
CPU backend's sort (the same order: NULL placement by a bool key, DuckDB's byte-wise string order,
NaN above +inf) ranks them, and the caller gathers nothing when the rows already stand in order
(``is_prefix_order``): a top-N fed its candidates in rank order (exec/compiled_rows.py) then costs
no second gather of its strings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.exec.columns import to_plain
from hetdb.exec.wide import sort_key
from hetdb.plan.expr import SortKey

# At most this many rows are ordered on the host (a top-N's limit, a small ORDER BY)
SMALL_ORDER_ROWS = 4096


def host_order(ctx: Any, keys: tuple[SortKey, ...], batch: Any, k: int | None = None) -> np.ndarray | None:
    """Host int64 positions ordering ``batch`` (on the GPU) by ``keys`` stably, the first ``k`` of
    them when given; None when the batch is on the host, larger than SMALL_ORDER_ROWS or has a key
    this does not rank (values past 64 bits)."""
    be = ctx.backend
    if be.xp is np or batch.num_rows > SMALL_ORDER_ROWS or not keys:
        return None
    from hetdb.backend.cpu import sort as cpu_sort

    arrays: list[np.ndarray] = []
    desc: list[bool] = []
    for key in keys:
        col = ctx.evaluator.evaluate(key.expr, batch)
        if col.dtype.is_wide:
            return None
        valid = None if col.validity is None else np.asarray(be.to_host(col.validity), dtype=bool)
        if valid is not None:
            arrays.append(valid if key.nulls_first else ~valid)
            desc.append(False)
        if col.dtype.kind == "string":
            data = _string_ranks(be, col)
        else:
            data = np.asarray(be.to_host(col.data))
            if data.ndim != 1:
                return None
            data = sort_key(np, data)
        if data.dtype == bool:
            data = data.astype(np.int32)
        if valid is not None:  # (values under NULL are arbitrary: all NULLs equal)
            data = np.where(valid, data, np.zeros(1, dtype=data.dtype))
        arrays.append(data)
        desc.append(key.descending)
    if k is None:
        return cpu_sort.sort_indices(arrays, desc)
    return cpu_sort.topk_indices(arrays, desc, k)


def is_prefix_order(perm: np.ndarray) -> bool:
    """Whether ``perm`` is 0, 1, ..., len - 1 (the rows already stand in that order)."""
    return bool(np.array_equal(perm, np.arange(perm.shape[0], dtype=perm.dtype)))


def _string_ranks(be: Any, col: Any) -> np.ndarray:
    """Dense ranks of a small string column's values in byte-wise order (equal strings, equal ranks)."""
    plain = to_plain(be, col)
    offsets = np.asarray(be.to_host(plain.offsets), dtype=np.int64)
    end = int(offsets[-1]) if offsets.shape[0] else 0
    chars = np.asarray(be.to_host(plain.chars[:end])).tobytes() if end else b""
    values = [chars[offsets[i]:offsets[i + 1]] for i in range(offsets.shape[0] - 1)]
    rank = {v: r for r, v in enumerate(sorted(set(values)))}
    return np.fromiter((rank[v] for v in values), dtype=np.int64, count=len(values))
