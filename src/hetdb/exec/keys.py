"""Key preparation for hash joins and GROUP BY.

Kernels take key columns of int32/int64/float64/bool and never see NULLs or strings. Strings become
int64 ids from a ``StringKeyEncoder`` that one operator shares between its inputs: a dictionary
column maps its dictionary once (the first dictionary seen maps to its own codes, so the common case
of one shared dictionary costs no gather), plain strings are factorized per batch and their distinct
values mapped. Equal strings always get equal ids, whatever their encoding. On the GPU the ids come
from the device (backend/gpu/string_keys.py: the distinct strings and a hash table of their ids in
device memory), so no string goes to the host. A HUGEINT /
DECIMAL(38) join key becomes two int64 keys (its high and low 64 bits), so values past 64 bits join
exactly (``wide_key_parts``).
"""

from __future__ import annotations

import threading
from typing import Any

from hetdb import types as T
from hetdb.column import Column
from hetdb.exec.hostutil import int64_array, note_host_step, strings_to_pylist
from hetdb.exec.wide import is_object, key_value


class StringKeyEncoder:
    """Stable string -> id mapping for one operator (thread-safe)."""

    def __init__(self, backend):
        self.backend = backend
        self.values: list[str] = []
        self.index: dict[str, int] = {}
        # id(dictionary) -> (dictionary, ids | None[, GPU: mapped with add, strings known then])
        self._maps: dict[int, tuple] = {}
        self._device: Any = None                         # backend/gpu/string_keys.DeviceStringIds
        self._lock = threading.Lock()

    def _ids_of(self, strings: list[str], add: bool) -> list[int]:
        out = []
        for s in strings:
            i = self.index.get(s)
            if i is None:
                if add:
                    i = self.index[s] = len(self.values)
                    self.values.append(s)
                else:
                    i = -1
            out.append(i)
        return out

    def encode(self, col: Column, add: bool = True) -> Any:
        """int64 id per row (rows under NULL get an arbitrary id; -1 = unseen when ``add`` is off)."""
        xp = self.backend.xp
        if self.backend.name == "gpu":
            return self._encode_on_device(col, add)
        if col.dictionary is not None:
            d = col.dictionary
            with self._lock:
                hit = self._maps.get(id(d))
                if hit is None or hit[0] is not d:
                    note_host_step(self.backend, "string key dictionary mapped on the host")
                    strings = strings_to_pylist(self.backend, d.offsets, d.chars)
                    first = not self.values
                    ids = self._ids_of(strings, add)
                    identity = first and add and ids == list(range(len(ids)))
                    hit = (d, None if identity else self.backend.asarray(int64_array(ids)))
                    self._maps[id(d)] = hit
            codes = col.data.astype(xp.int64)
            if hit[1] is None or len(d) == 0:
                return codes
            return self.backend.gather(hit[1], codes)
        codes, uoff, uchars = self.backend.factorize_strings(col.offsets, col.chars)
        note_host_step(self.backend, "distinct string keys mapped on the host")
        strings = strings_to_pylist(self.backend, uoff, uchars)
        with self._lock:
            ids = self._ids_of(strings, add)
        if not ids:
            return xp.zeros(len(col), dtype=xp.int64)
        return self.backend.gather(self.backend.asarray(int64_array(ids)), codes.astype(xp.int64))

    def dictionary_ids(self, d: Column, add: bool = True) -> Any | None:
        """GPU: int64 id per string of the dictionary ``d`` (None: its codes are the ids)."""
        with self._lock:
            ids_on_device = self._ids_on_device()
            hit = self._maps.get(id(d))
            # a map made without ``add`` holds -1 for strings unseen then: valid until strings are added
            if hit is not None and hit[0] is d and (hit[2] or hit[3] == ids_on_device.count):
                return hit[1]
            first = ids_on_device.count == 0
            ids, new = ids_on_device.map(d.offsets, d.chars, add)
            identity = first and add and new == len(d)
            self._maps[id(d)] = (d, None if identity else ids, add, ids_on_device.count)
            return None if identity else ids

    def device_table(self) -> tuple:
        """GPU: the launch arguments of this encoder's table of strings (string_hash.cuh
        string_key_id: offsets, bytes, hashes, slots, slot mask), for kernels that look strings up."""
        with self._lock:
            return self._ids_on_device().table_args()

    def _ids_on_device(self) -> Any:
        if self._device is None:
            from hetdb.backend.gpu.string_keys import device_string_ids

            self._device = device_string_ids()
        return self._device

    def _encode_on_device(self, col: Column, add: bool) -> Any:
        xp = self.backend.xp
        if col.dictionary is None:
            with self._lock:
                return self._ids_on_device().map(col.offsets, col.chars, add)[0]
        ids = self.dictionary_ids(col.dictionary, add)
        codes = col.data.astype(xp.int64)
        if ids is None or len(col.dictionary) == 0:
            return codes
        return self.backend.gather(ids, codes)


def key_arrays(backend, cols: list[Column], encoders: list[StringKeyEncoder | None],
               add: bool = True) -> tuple[list[Any], Any]:
    """(kernel-ready key arrays, validity of the whole key: None = no NULL anywhere)."""
    xp = backend.xp
    arrays = []
    valid = None
    for col, enc in zip(cols, encoders):
        if col.dtype.kind == "string":
            arrays.append(enc.encode(col, add))
        elif col.dtype.is_wide:
            arrays.extend(wide_key_parts(xp, col.data))
        else:
            arrays.append(key_value(xp, col.data))
        if col.validity is not None:
            valid = col.validity if valid is None else xp.logical_and(valid, col.validity)
    return arrays, valid


def wide_key_parts(xp, data: Any) -> list[Any]:
    """A HUGEINT / DECIMAL(38) key column (int64 or, past 64 bits, object values) as its high and
    low 64 bits: equal values give equal pairs however each batch happens to hold them."""
    if not is_object(data):
        low = data.astype(xp.int64)
        return [(low < 0).astype(xp.int64) * -1, low]
    ints = [0 if v is None else int(v) for v in data.tolist()]
    return [int64_array([v >> 64 for v in ints]),
            int64_array([((v + 2**63) % 2**64) - 2**63 for v in ints])]


def encoders_for(backend, dtypes: list[T.DataType]) -> list[StringKeyEncoder | None]:
    return [StringKeyEncoder(backend) if t.kind == "string" else None for t in dtypes]
