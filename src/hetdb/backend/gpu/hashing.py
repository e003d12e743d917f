"""Hashing, hash joins and group numbering on the GPU (kernels in hash.cu and hash_table.cu).

Keys are first normalised to one int64 bit pattern per value (``bits()`` of base.py: equal SQL keys,
equal bits), stored column-major as a (num_keys, n) matrix; hashing and key comparison then work on
those bits alone, whatever the key dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.backend.gpu.compile import BLOCK, get_module, grid_for, launch
from hetdb.errors import UnsupportedError

# numpy dtype -> CUDA type in template name expressions
CUDA_TYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
              np.dtype(np.float64): "double", np.dtype(np.bool_): "bool"}
_TYPES = tuple(CUDA_TYPES.values())
HASH_NAMES = tuple(f"normalize_key<{t}>" for t in _TYPES) + tuple(f"sort_key<{t}>" for t in _TYPES)
I64_MAX = np.iinfo(np.int64).max
_PROBE_TILE = 256 * 4  # HT_BLOCK * HT_ITEMS in hash_table.cu


def cuda_type(arr: Any) -> str:
    try:
        return CUDA_TYPES[np.dtype(arr.dtype)]
    except KeyError:
        raise UnsupportedError(f"GPU kernels do not take keys of dtype {arr.dtype} "
                               "(supported: int32, int64, float64, bool)") from None


def _hash_module():
    return get_module("hash.cu", HASH_NAMES)


def _table_module():
    return get_module("hash_table.cu")


def normalize_keys(keys: list[Any]) -> Any:
    """(num_keys, n) int64 matrix of bits(key) per column."""
    import cupy

    if not keys:
        raise ValueError("at least one key column is needed")
    n = int(keys[0].shape[0])
    out = cupy.empty((len(keys), n), dtype=cupy.int64)
    if n == 0:
        return out
    fn_mod = _hash_module()
    for c, k in enumerate(keys):
        k = cupy.ascontiguousarray(k)
        launch(fn_mod.function(f"normalize_key<{cuda_type(k)}>"), grid_for(n), BLOCK,
               (k, out[c], np.int64(n)))
    return out


def hash_normalized(norm: Any) -> Any:
    import cupy

    num_keys, n = norm.shape
    out = cupy.empty(n, dtype=cupy.uint64)
    if n:
        launch(_hash_module().function("hash_rows"), grid_for(n), BLOCK,
               (norm, np.int32(num_keys), np.int64(n), out))
    return out


def sort_keys(keys: list[Any], descending: list[bool]) -> list[Any]:
    """Signed order-preserving int64 image of each key (descending ones reversed)."""
    import cupy

    mod = _hash_module()
    out = []
    for k, desc in zip(keys, descending):
        k = cupy.ascontiguousarray(k)
        n = int(k.shape[0])
        o = cupy.empty(n, dtype=cupy.int64)
        if n:
            launch(mod.function(f"sort_key<{cuda_type(k)}>"), grid_for(n), BLOCK,
                   (k, o, np.int64(n), np.int32(1 if desc else 0)))
        out.append(o)
    return out


def _capacity(n: int) -> int:
    # Load factor <= 0.5 keeps linear-probing chains short.
    return 1 << max(4, int(2 * max(n, 1) - 1).bit_length())


def insert_rows(norm: Any, hashes: Any, want_first: bool) -> tuple[Any, Any, Any | None]:
    """Find-or-insert every row: (slots, row_slot, slot_first or None)."""
    import cupy

    num_keys, n = norm.shape
    cap = _capacity(n)
    slots = cupy.full(cap, -1, dtype=cupy.int64)
    row_slot = cupy.empty(n, dtype=cupy.int64)
    slot_first = cupy.full(cap, I64_MAX, dtype=cupy.int64) if want_first else None
    if n:
        launch(_table_module().function("table_insert"), grid_for(n), BLOCK,
               (norm, np.int32(num_keys), np.int64(n), hashes, slots, np.uint64(cap - 1), row_slot,
                slot_first if slot_first is not None else np.uint64(0)))
    return slots, row_slot, slot_first


@dataclass
class GpuJoinTable:
    """Build side of a hash join: slots -> a CSR of build rows (ascending) per distinct key."""

    num_rows: int
    keys: Any         # (num_keys, num_rows) normalised build keys
    hashes: Any       # uint64 per build row
    slots: Any        # int64[cap]: representative build row or -1
    row_slot: Any     # int64 per build row
    slot_start: Any   # int64[cap]
    slot_count: Any   # int64[cap]
    slot_rows: Any    # int64[num_rows]: build rows grouped by slot, ascending inside a slot
    dtypes: tuple

    @property
    def capacity(self) -> int:
        return int(self.slots.shape[0])

    def max_matches(self) -> int:
        """The most build rows one key has (read back once per table)."""
        got = self.__dict__.get("_max_matches")
        if got is None:
            got = self.__dict__["_max_matches"] = int(self.slot_count.max()) if self.num_rows else 0
        return got


def join_build(keys: list[Any]) -> GpuJoinTable:
    import cupy

    norm = normalize_keys(keys)
    hashes = hash_normalized(norm)
    slots, row_slot, _ = insert_rows(norm, hashes, want_first=False)
    n, cap = int(norm.shape[1]), int(slots.shape[0])
    if n and cap * n < I64_MAX:
        # One sort of slot * n + row orders rows by slot, then by row (no stability assumption); the
        # sorted slots' bounds give each slot's first row and count (no bincount: it reads the
        # slots' min and max back to the host)
        order = cupy.sort(row_slot * n + cupy.arange(n, dtype=cupy.int64))
        slot_rows = order % n
        bounds = cupy.searchsorted(order // n, cupy.arange(cap + 1, dtype=cupy.int64)).astype(cupy.int64, copy=False)
        slot_start = bounds[:-1]
        slot_count = bounds[1:] - slot_start
    else:
        slot_count = cupy.bincount(row_slot, minlength=cap).astype(cupy.int64) if n else \
            cupy.zeros(cap, dtype=cupy.int64)
        slot_start = cupy.cumsum(slot_count) - slot_count
        slot_rows = cupy.lexsort(cupy.stack([cupy.arange(n, dtype=cupy.int64), row_slot])) if n else \
            cupy.empty(0, dtype=cupy.int64)
    return GpuJoinTable(n, norm, hashes, slots, row_slot, slot_start, slot_count,
                        slot_rows.astype(cupy.int64, copy=False), tuple(np.dtype(k.dtype) for k in keys))


def probe_slots(table: GpuJoinTable, keys: list[Any]) -> Any:
    """Slot of each probe row's key in ``table`` or -1."""
    import cupy

    if len(keys) != len(table.dtypes):
        raise ValueError(f"join probe got {len(keys)} key columns, the build side has {len(table.dtypes)}")
    norm = normalize_keys(keys)
    hashes = hash_normalized(norm)
    num_keys, n = norm.shape
    match = cupy.empty(n, dtype=cupy.int64)
    if n:
        launch(_table_module().function("table_probe"), grid_for(n, _PROBE_TILE, 4096), 256,
               (norm, np.int64(n), hashes, table.keys, np.int64(table.num_rows), table.hashes,
                table.slots, np.uint64(table.capacity - 1), np.int32(num_keys), match))
    return match


def join_probe(table: GpuJoinTable, keys: list[Any], kind: str) -> Any:
    import cupy

    match = probe_slots(table, keys)
    n = int(match.shape[0])
    hit = match >= 0
    if kind == "mark":
        return hit
    if kind == "semi":
        return cupy.flatnonzero(hit).astype(cupy.int64)
    if kind == "anti":
        return cupy.flatnonzero(~hit).astype(cupy.int64)
    if kind == "build_matched":
        slot_hit = cupy.zeros(table.capacity, dtype=cupy.bool_)
        slot_hit[match[hit]] = True
        return slot_hit[table.row_slot]
    if kind not in ("inner", "left"):
        raise ValueError(f"unknown join kind {kind!r}")
    counts = cupy.where(hit, table.slot_count[cupy.maximum(match, 0)], 0)
    if kind == "left":
        counts = cupy.maximum(counts, 1)
    ends = cupy.cumsum(counts)
    total = int(ends[-1]) if n else 0
    out_probe = cupy.empty(total, dtype=cupy.int64)
    out_build = cupy.empty(total, dtype=cupy.int64)
    if total:
        launch(_table_module().function("join_fill"), grid_for(n), BLOCK,
               (match, np.int64(n), table.slot_start, table.slot_count, table.slot_rows,
                ends - counts, np.int32(1 if kind == "left" else 0), out_probe, out_build))
    return out_probe, out_build


def group_ids(keys: list[Any], num_rows: int | None = None) -> tuple[Any, int, Any]:
    """(group id per row, number of groups, first row per group), groups in first-appearance order."""
    import cupy

    if not keys:
        n = int(num_rows or 0)
        if n == 0:
            return cupy.empty(0, dtype=cupy.int64), 0, cupy.empty(0, dtype=cupy.int64)
        return cupy.zeros(n, dtype=cupy.int64), 1, cupy.zeros(1, dtype=cupy.int64)
    norm = normalize_keys(keys)
    n = int(norm.shape[1])
    if n == 0:
        return cupy.empty(0, dtype=cupy.int64), 0, cupy.empty(0, dtype=cupy.int64)
    hashes = hash_normalized(norm)
    slots, row_slot, slot_first = insert_rows(norm, hashes, want_first=True)
    # Provisional ids are slots; renumber them by their smallest row = first appearance (as the CPU).
    occupied = cupy.flatnonzero(slot_first != I64_MAX)
    firsts = slot_first[occupied]
    order = cupy.argsort(firsts)
    num_groups = int(occupied.shape[0])
    slot_gid = cupy.empty(slots.shape[0], dtype=cupy.int64)
    slot_gid[occupied[order]] = cupy.arange(num_groups, dtype=cupy.int64)
    return slot_gid[row_slot], num_groups, firsts[order]
