"""Dense group-key domains of fused grouped aggregation (pure Python + an array module: no GPU needed).

A fused kernel aggregates into one accumulator slot per possible group, so every group key must map
to a small integer range known before the first row: dictionary codes, integer columns whose zone
maps bound them, or build-side payloads whose values are known once the build has run. The combined
domain is the product of the key ranges (row-major, the last key varies fastest), so the slot of a
row is ``sum((key_k - lo_k) * stride_k)`` and a slot decodes back to its key values.

Build-side payload keys are *compacted* first: the distinct values of the (filtered) build rows get
ranks 0..d-1 and the kernel groups by rank, so a key whose few surviving values are scattered over a
large code range (SSB: 40 brands of one category among 1000 brand codes) still yields a domain small
enough for shared-memory pre-aggregation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_FUSED_GROUPS = 1 << 20
# A larger domain is aggregated densely too (global atomics, one slot per possible group) when it is
# at most DENSE_ROWS_FACTOR slots per scanned row, up to MAX_WIDE_GROUPS: filling and scanning the
# slots then costs less than hashing every row into a table of as many groups (TPC-H q18's 60M
# l_orderkey values over 60M rows, q11/q02's 2M ps_partkey over 8M, q13's 1.5M o_custkey over 15M).
MAX_WIDE_GROUPS = 1 << 26
DENSE_ROWS_FACTOR = 2


@dataclass(frozen=True)
class KeyDomain:
    """Inclusive range [lo, hi] of one group key as the kernel sees it (an empty key range is
    [0, -1]); ``values`` (an array, or None) maps rank -> value for compacted keys."""

    lo: int
    hi: int
    values: Any = None

    @property
    def size(self) -> int:
        return max(0, self.hi - self.lo + 1)

    def decode(self, xp: Any, slots: Any) -> Any:
        """Key values (int64, or the compacted values' dtype) of kernel key values ``slots``."""
        if self.values is None:
            return slots
        return self.values[slots.astype(xp.int64)]


def combined_groups(domains: Iterable[KeyDomain]) -> int:
    """Number of accumulator slots of the combined domain (1 without keys)."""
    total = 1
    for d in domains:
        total *= d.size
    return total


def dense_limit(rows: int | None) -> int:
    """The most dense groups a fused aggregation over ``rows`` scanned rows may have."""
    if rows is None:
        return MAX_FUSED_GROUPS
    return max(MAX_FUSED_GROUPS, min(MAX_WIDE_GROUPS, DENSE_ROWS_FACTOR * int(rows)))


def domain_refusal(domains: list[KeyDomain], limit: int = MAX_FUSED_GROUPS) -> str | None:
    """None when the combined domain is small enough to aggregate densely, else why not."""
    total = combined_groups(domains)
    if total > limit:
        sizes = " x ".join(str(d.size) for d in domains)
        return f"group-key domain {sizes} = {total} groups exceeds the fused limit of {limit}"
    return None


def zone_map_domain(zone_maps: Iterable[Any]) -> KeyDomain | None:
    """[min, max] of an integer column over pages' zone maps (objects with ``min``, ``max``,
    ``null_count``, ``num_rows``); None when a page holding values has no bounds."""
    lo = hi = None
    for z in zone_maps:
        if z.null_count >= z.num_rows:
            continue  # only NULLs: no value to place (such pages run operator at a time)
        if z.min is None or z.max is None or not isinstance(z.min, int) or not isinstance(z.max, int):
            return None
        lo = z.min if lo is None else min(lo, z.min)
        hi = z.max if hi is None else max(hi, z.max)
    if lo is None:
        return KeyDomain(0, -1)
    return KeyDomain(int(lo), int(hi))


# compact ranks at most this many device values on the host: one copy out, NumPy, one copy in,
# where the device's unique (a sort, scans, waits) took ~0.8 ms a key on the H100 (SSB SF 2)
HOST_COMPACT_ROWS = 1 << 16


def compact(xp: Any, values: Any, host_rows: int = -1) -> tuple[KeyDomain, Any]:
    """Ranks of ``values`` among their distinct values: (domain whose ``values`` decodes a rank,
    int32 rank per element); device values of integers, at most ``host_rows`` of them (default
    HOST_COMPACT_ROWS), are ranked on the host."""
    n = int(values.shape[0])
    if n == 0:
        return KeyDomain(0, -1, values[:0]), xp.zeros(0, dtype=xp.int32)
    if n <= (HOST_COMPACT_ROWS if host_rows < 0 else host_rows) and hasattr(values, "get") \
            and values.dtype.kind in "iu":
        from hetdb.backend.gpu.codegen.runtime import arrays_to_device

        uniq, inverse = compact_host(values.get())
        uniq, inverse = arrays_to_device([uniq, inverse])
        return KeyDomain(0, int(uniq.shape[0]) - 1, uniq), inverse
    uniq, inverse = xp.unique(values, return_inverse=True)
    return KeyDomain(0, int(uniq.shape[0]) - 1, uniq), inverse.reshape(-1).astype(xp.int32)


def compact_host(values: Any) -> tuple[Any, Any]:
    """(sorted distinct values, int32 rank of each value) of a host integer array, as ``unique``
    with ``return_inverse`` gives them: through a presence table when the values span at most four
    times as many slots as there are values, else a sort."""
    import numpy as np

    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 4 * values.shape[0] + 64 and hi < 1 << 63:
        from hetdb.backend.gpu.codegen.dense_host import rank_values

        # (one pass to mark, one to rank, one to look up: Numba; unsigned values as int64, whose
        # difference with ``lo`` stays an integer)
        signed = values if values.dtype.kind == "i" else values.astype(np.int64)
        inverse = np.empty(values.shape[0], dtype=np.int32)
        rank = rank_values(signed, lo, hi - lo + 1, inverse)
        return (np.flatnonzero(rank >= 0) + lo).astype(values.dtype), inverse
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.reshape(-1).astype(np.int32)


def lookup_rows(xp: Any, mask: Any) -> Any:
    """Dense-table rows of a dictionary lookup: code c maps to itself where ``mask[c]``, else -1
    (a probe into it keeps exactly the rows whose code satisfies the predicate)."""
    n = int(mask.shape[0])
    # (a select, not a masked assignment, whose nonzero waits for the device)
    return xp.where(mask, xp.arange(n, dtype=xp.int32), xp.int32(-1)).astype(xp.int32)
