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
from hetdb.exec.hostutil import arrays_to_host
from hetdb.exec.wide import sort_key
from hetdb.plan.expr import SortKey

# At most this many rows are ordered on the host (a top-N's limit, a small ORDER BY)
SMALL_ORDER_ROWS = 4096
# A string key's byte buffer up to this size is copied whole (no wait for its last offset first)
MAX_CHARS_COPIED = 1 << 20


def host_order(ctx: Any, keys: tuple[SortKey, ...], batch: Any, k: int | None = None) -> np.ndarray | None:
    """Host int64 positions ordering ``batch`` (on the GPU) by ``keys`` stably, the first ``k`` of
    them when given; None when the batch is on the host, larger than SMALL_ORDER_ROWS or has a key
    this does not rank (values past 64 bits)."""
    be = ctx.backend
    if be.xp is np or batch.num_rows > SMALL_ORDER_ROWS or not keys:
        return None
    from hetdb.backend.cpu import sort as cpu_sort

    # every key's device arrays first, then one copy to the host for all of them (one wait for the
    # device instead of one per array)
    parts: list[tuple[SortKey, Any, list[Any]]] = []
    for key in keys:
        col = ctx.evaluator.evaluate(key.expr, batch)
        if col.dtype.is_wide:
            return None
        if col.dtype.kind == "string":
            col = to_plain(be, col)
            chars = col.chars
            if int(chars.nbytes) > MAX_CHARS_COPIED:  # (a slice of a large column: copy its rows' bytes only)
                chars = chars[:int(col.offsets[-1])]
            arrays = [col.offsets, chars]
        else:
            if col.data.ndim != 1:
                return None
            arrays = [col.data]
        parts.append((key, col, arrays + ([] if col.validity is None else [col.validity])))
    host = iter(arrays_to_host(be, [a for _, _, arrays in parts for a in arrays]))
    sort_arrays: list[np.ndarray] = []
    desc: list[bool] = []
    for key, col, arrays in parts:
        got = [next(host) for _ in arrays]
        valid = got[-1].astype(bool) if col.validity is not None else None
        if valid is not None:
            sort_arrays.append(valid if key.nulls_first else ~valid)
            desc.append(False)
        data = _string_ranks(got[0], got[1]) if col.dtype.kind == "string" else sort_key(np, got[0])
        if data.dtype == bool:
            data = data.astype(np.int32)
        if valid is not None:  # (values under NULL are arbitrary: all NULLs equal)
            data = np.where(valid, data, np.zeros(1, dtype=data.dtype))
        sort_arrays.append(data)
        desc.append(key.descending)
    if k is None:
        return cpu_sort.sort_indices(sort_arrays, desc)
    return cpu_sort.topk_indices(sort_arrays, desc, k)


def is_prefix_order(perm: np.ndarray) -> bool:
    """Whether ``perm`` is 0, 1, ..., len - 1 (the rows already stand in that order)."""
    return bool(np.array_equal(perm, np.arange(perm.shape[0], dtype=perm.dtype)))


def _string_ranks(offsets: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Dense ranks of strings (host offsets and bytes) in byte-wise order (equal strings, equal ranks)."""
    data = chars.tobytes()
    values = [data[offsets[i]:offsets[i + 1]] for i in range(offsets.shape[0] - 1)]
    rank = {v: r for r, v in enumerate(sorted(set(values)))}
    return np.fromiter((rank[v] for v in values), dtype=np.int64, count=len(values))
