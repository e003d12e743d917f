"""Per-group aggregates on the CPU (Numba).

Chunks of rows run in parallel, each into its own row of a (chunks x groups) accumulator, then the
chunk rows are combined; with many groups the accumulator would not fit in cache (or memory), so the
chunk count drops towards one. Float min/max follow DuckDB: NaN is greater than every number.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from hetdb.backend.cpu.keys import num_chunks
from hetdb.errors import UnsupportedError

AGGREGATE_OPS = ("sum", "count", "count_star", "min", "max", "any")
# Bound on chunks x groups accumulator cells (8 bytes each plus a count).
_MAX_CELLS = 1 << 22
_NO_VALID = np.ones(0, np.bool_)


def _chunks(n: int, num_groups: int) -> int:
    return max(1, min(num_chunks(n), _MAX_CELLS // max(num_groups, 1)))


@njit(cache=True, nogil=True, parallel=True)
def _sum(values, gid, ng, valid, has_valid, nchunks, zero):
    n = values.shape[0]
    acc = np.zeros((nchunks, ng), zero.dtype)
    cnt = np.zeros((nchunks, ng), np.int64)
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        for i in range(lo, hi):
            if has_valid and not valid[i]:
                continue
            g = gid[i]
            acc[c, g] += values[i]
            cnt[c, g] += 1
    out = acc[0].copy()
    total = cnt[0].copy()
    for g in prange(ng):  # (the chunks' rows combined per group, groups on every thread)
        for c in range(1, nchunks):
            out[g] += acc[c, g]
            total[g] += cnt[c, g]
    return out, total > 0


@njit(cache=True, nogil=True, parallel=True)
def _count(gid, ng, valid, has_valid, nchunks):
    n = gid.shape[0]
    cnt = np.zeros((nchunks, ng), np.int64)
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        for i in range(lo, hi):
            if has_valid and not valid[i]:
                continue
            cnt[c, gid[i]] += 1
    out = cnt[0].copy()
    for g in prange(ng):
        for c in range(1, nchunks):
            out[g] += cnt[c, g]
    return out


@njit(cache=True, nogil=True, inline="always")
def _better(a, b, want_max):
    """True when ``a`` should replace the current extreme ``b`` (NaN above every number)."""
    if want_max:
        if b != b:
            return False
        return a != a or a > b
    if a != a:
        return False
    return b != b or a < b


@njit(cache=True, nogil=True, parallel=True)
def _min_max(values, gid, ng, valid, has_valid, nchunks, want_max):
    n = values.shape[0]
    acc = np.zeros((nchunks, ng), values.dtype)
    seen = np.zeros((nchunks, ng), np.bool_)
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        for i in range(lo, hi):
            if has_valid and not valid[i]:
                continue
            g = gid[i]
            v = values[i]
            if not seen[c, g]:
                seen[c, g] = True
                acc[c, g] = v
            elif _better(v, acc[c, g], want_max):
                acc[c, g] = v
    out = acc[0].copy()
    ok = seen[0].copy()
    for g in prange(ng):
        for c in range(1, nchunks):
            if seen[c, g]:
                if not ok[g]:
                    ok[g] = True
                    out[g] = acc[c, g]
                elif _better(acc[c, g], out[g], want_max):
                    out[g] = acc[c, g]
    return out, ok


@njit(cache=True, nogil=True, parallel=True)
def _first_valid_row(gid, ng, valid, has_valid, nchunks):
    n = gid.shape[0]
    first = np.full((nchunks, ng), -1, np.int64)
    for c in prange(nchunks):
        lo = c * n // nchunks
        hi = (c + 1) * n // nchunks
        for i in range(lo, hi):
            if has_valid and not valid[i]:
                continue
            g = gid[i]
            if first[c, g] == -1:
                first[c, g] = i
    out = first[0].copy()
    for g in prange(ng):
        for c in range(1, nchunks):
            if out[g] == -1:
                out[g] = first[c, g]
    return out


def aggregate(op: str, values: np.ndarray | None, group_ids: np.ndarray, num_groups: int,
              valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(per-group result, group had a valid row); see ``Backend.aggregate``."""
    if op not in AGGREGATE_OPS:
        raise UnsupportedError(f"aggregate {op!r} is not supported (one of {', '.join(AGGREGATE_OPS)})")
    gid = np.ascontiguousarray(group_ids, dtype=np.int64)
    n = gid.shape[0]
    has_valid = valid is not None
    vmask = np.ascontiguousarray(valid, dtype=np.bool_) if has_valid else _NO_VALID
    chunks = _chunks(n, num_groups)
    if op == "count_star":
        return _count(gid, num_groups, _NO_VALID, False, chunks), np.ones(num_groups, np.bool_)
    if op == "count":
        return _count(gid, num_groups, vmask, has_valid, chunks), np.ones(num_groups, np.bool_)
    if values is None:
        raise ValueError(f"aggregate {op!r} needs values")
    vals = np.ascontiguousarray(values)
    if vals.dtype == np.bool_ and op != "any":
        vals = vals.astype(np.int64) if op == "sum" else vals.view(np.uint8)
    if op == "sum":
        if vals.dtype.kind == "f":
            return _sum(vals.astype(np.float64, copy=False), gid, num_groups, vmask, has_valid, chunks,
                        np.zeros(1, np.float64))
        return _sum(vals.astype(np.int64, copy=False), gid, num_groups, vmask, has_valid, chunks,
                    np.zeros(1, np.int64))
    if op == "min" or op == "max":
        out, ok = _min_max(vals, gid, num_groups, vmask, has_valid, chunks, op == "max")
        if np.asarray(values).dtype == np.bool_:
            out = out.view(np.bool_)
        return out, ok
    first = _first_valid_row(gid, num_groups, vmask, has_valid, chunks)
    ok = first >= 0
    out = np.zeros(num_groups, vals.dtype)
    out[ok] = vals[first[ok]]
    return out, ok
