"""String key ids on the device (kernels in string_keys.cu): the GPU side of exec/keys.StringKeyEncoder.

Equal strings get equal ids, whatever batch, dictionary or encoding they come from: the distinct
strings seen so far are kept on the device (offsets, chars, a 64-bit hash each; id = position) with
an open-addressing table of their ids. Mapping a column's strings (a dictionary's values, or plain
strings row by row) is two launches: hash the strings, then find each one's slot, comparing hashes,
lengths and bytes; with ``add`` a string not seen yet claims an empty slot, and the claimed ones are
numbered in row order (``strkey_renumber``) and appended to the store, so ids stay dense (0..count-1)
and the first dictionary seen maps to its own codes. No string is copied to the host.

The array operations go through ``xp`` and the launches through a ``kernels`` object, so the same
logic runs the CUDA kernels on CuPy arrays, or (tests/backend/test_gpu_string_keys_host_run.py) the
kernel source built as a host library on NumPy arrays.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

MIN_SLOTS = 1024


class StringKeyKernels(Protocol):
    """The launches of string_keys.cu (each over every row of its arrays) and a string gather."""

    def hash(self, offsets: Any, chars: Any, n: int, out: Any) -> None: ...

    def map(self, offsets: Any, chars: Any, hashes: Any, n: int, store_offsets: Any, store_chars: Any,
            store_hashes: Any, base: int, slots: Any, add: bool, out: Any, claim_slot: Any) -> None: ...

    def renumber(self, ids: Any, claim_slot: Any, rank: Any, n: int, base: int, slots: Any) -> None: ...

    def reinsert(self, hashes: Any, n: int, slots: Any) -> None: ...

    def gather_strings(self, offsets: Any, chars: Any, indices: Any) -> tuple[Any, Any]: ...


class DeviceStringIds:
    """Distinct strings and their ids, on the device of ``xp``."""

    def __init__(self, xp: Any, kernels: StringKeyKernels) -> None:
        self.xp = xp
        self.kernels = kernels
        self.count = 0
        self._offsets = xp.zeros(MIN_SLOTS + 1, dtype=xp.int64)  # grown by doubling; [:count + 1] used
        self._chars = xp.zeros(MIN_SLOTS, dtype=xp.uint8)
        self._hashes = xp.zeros(MIN_SLOTS, dtype=xp.uint64)
        self._slots = xp.full(MIN_SLOTS, -1, dtype=xp.int64)

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self._offsets, self._chars, self._hashes, self._slots))

    def table_args(self) -> tuple:
        """(offsets, chars, hashes, slots, slot mask) as a kernel reads the table (string_hash.cuh
        string_key_id): valid until the next ``map`` with ``add``."""
        return (self._offsets, self._chars, self._hashes, self._slots, np.int64(self._slots.shape[0] - 1))

    def map(self, offsets: Any, chars: Any, add: bool) -> tuple[Any, int]:
        """(int64 id per string of (offsets, chars), number of strings added). Without ``add`` a string
        not seen yet gets -1. When nothing was stored before and every string is new, the ids are
        0..n-1 in row order."""
        xp = self.xp
        n = int(offsets.shape[0]) - 1
        if n <= 0:
            return xp.zeros(0, dtype=xp.int64), 0
        if not add and self.count == 0:
            return xp.full(n, -1, dtype=xp.int64), 0
        if add:
            self._reserve_slots(self.count + n)
        offsets = xp.ascontiguousarray(offsets, dtype=xp.int64)
        chars = chars if chars.shape[0] else xp.zeros(1, dtype=xp.uint8)
        hashes = xp.empty(n, dtype=xp.uint64)
        self.kernels.hash(offsets, chars, n, hashes)
        ids = xp.empty(n, dtype=xp.int64)
        claim = xp.empty(n, dtype=xp.int64)
        self.kernels.map(offsets, chars, hashes, n, self._offsets, self._chars, self._hashes, self.count,
                         self._slots, add, ids, claim)
        if not add:
            return ids, 0
        claimed = (claim >= 0).astype(xp.int64)
        rank = xp.cumsum(claimed) - claimed
        new = int(rank[-1] + claimed[-1])
        if new:
            self.kernels.renumber(ids, claim, rank, n, self.count, self._slots)
            rows = xp.nonzero(claimed)[0]
            new_offsets, new_chars = self.kernels.gather_strings(offsets, chars, rows)
            self._append(new_offsets, new_chars, hashes[rows], new)
        return ids, new

    def _append(self, offsets: Any, chars: Any, hashes: Any, new: int) -> None:
        xp = self.xp
        used = int(self._offsets[self.count])  # the store's char count
        total = self.count + new
        size = int(chars.shape[0])
        if total + 1 > self._offsets.shape[0]:
            self._offsets = _grown(xp, self._offsets, total + 1, self.count + 1)
            self._hashes = _grown(xp, self._hashes, total, self.count)
        if used + size > self._chars.shape[0]:
            self._chars = _grown(xp, self._chars, used + size, used)
        self._offsets[self.count + 1:total + 1] = offsets[1:] + used
        self._hashes[self.count:total] = hashes
        if size:
            self._chars[used:used + size] = chars
        self.count = total

    def _reserve_slots(self, ids: int) -> None:
        """At least twice as many slots as ``ids`` (linear probing always finds an empty one)."""
        size = int(self._slots.shape[0])
        if 2 * ids <= size:
            return
        while 2 * ids > size:
            size *= 2
        self._slots = self.xp.full(size, -1, dtype=self.xp.int64)
        if self.count:
            self.kernels.reinsert(self._hashes, self.count, self._slots)


def _grown(xp: Any, array: Any, need: int, keep: int) -> Any:
    size = int(array.shape[0])
    while size < need:
        size *= 2
    out = xp.zeros(size, dtype=array.dtype)
    out[:keep] = array[:keep]
    return out


class CudaStringKeyKernels:
    """StringKeyKernels on CuPy arrays: the CUDA kernels of string_keys.cu."""

    def __init__(self) -> None:
        from hetdb.backend.gpu.compile import get_module

        self._mod = get_module("string_keys.cu")

    def _launch(self, name: str, n: int, args: tuple) -> None:
        from hetdb.backend.gpu.compile import BLOCK, grid_for, launch

        launch(self._mod.function(name), grid_for(n), BLOCK, args)

    def hash(self, offsets, chars, n, out) -> None:
        self._launch("strkey_hash", n, (offsets, chars, np.int64(n), out))

    def map(self, offsets, chars, hashes, n, store_offsets, store_chars, store_hashes, base, slots, add,
            out, claim_slot) -> None:
        self._launch("strkey_map", n, (offsets, chars, hashes, np.int64(n), store_offsets, store_chars,
                                       store_hashes, np.int64(base), slots, np.int64(slots.shape[0] - 1),
                                       np.int32(bool(add)), out, claim_slot))

    def renumber(self, ids, claim_slot, rank, n, base, slots) -> None:
        self._launch("strkey_renumber", n, (ids, claim_slot, rank, np.int64(n), np.int64(base), slots))

    def reinsert(self, hashes, n, slots) -> None:
        self._launch("strkey_reinsert", n, (hashes, np.int64(n), slots, np.int64(slots.shape[0] - 1)))

    def gather_strings(self, offsets, chars, indices):
        from hetdb.backend.gpu.strings import gather_strings

        return gather_strings(offsets, chars, indices)


def device_string_ids() -> DeviceStringIds:
    """A DeviceStringIds on the current CUDA device."""
    import cupy

    return DeviceStringIds(cupy, CudaStringKeyKernels())
