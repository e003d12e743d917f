"""A hash join build's hash table made when first needed (on the GPU a fused kernel probes dense
tables of its own, so the hash table is often never made: ``BuildSide.table``), and the copy of a
build kept for later runs whose table is made on demand (``unmade_copy``, exec/kept_builds.py)."""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hetdb.column import Batch
    from hetdb.exec.memory import Reservation
    from hetdb.exec.operators.join_build import BuildSide


def hash_table(backend: Any, batch: Batch, keys: int, encoders: list,
               reservation: Reservation | None = None) -> tuple[Any, Any]:
    """(hash table, valid row index or None) over the build rows' ``keys`` key columns whose keys
    have no NULL. ``reservation``: the build's, which reserved HASH_BYTES_PER_ROW a row with the
    rows; it grows by what the table took past that (None: accounted elsewhere)."""
    from hetdb.exec.keys import key_arrays
    from hetdb.exec.operators.join_build import HASH_BYTES_PER_ROW, key_name

    table, valid_idx = None, None
    keycols = [batch.columns[key_name(i)] for i in range(keys)]
    arrays, valid = key_arrays(backend, keycols, encoders)
    if valid is not None:
        valid_idx = backend.nonzero(valid)
        arrays = [backend.gather(a, valid_idx) for a in arrays]
    rows = int(arrays[0].shape[0])
    if rows:
        table = backend.join_build(arrays)
        extra = int(getattr(table, "nbytes", HASH_BYTES_PER_ROW * rows)) - HASH_BYTES_PER_ROW * rows
        if extra > 0 and reservation is not None:
            reservation.force_grow(extra)
    return table, valid_idx


def unmade_copy(side: BuildSide, backend: Any, keys: int, on_made: Any = None) -> BuildSide | None:
    """A copy of ``side`` (kept for later queries) whose hash table is made when a probe first asks,
    with no reservation to grow (the keeper accounts for it), when ``side``'s has not been made
    yet; else None. ``on_made()`` is called once it has been made."""
    lazy = side.hash_table
    if not isinstance(lazy, _LazyTable) or lazy.made is not None:
        return None
    import dataclasses

    make = functools.partial(hash_table, backend, side.batch, keys, side.encoders)
    if on_made is not None:
        inner = make

        def make() -> tuple[Any, Any]:
            got = inner()
            on_made()
            return got
    return dataclasses.replace(side, hash_table=_LazyTable(make))


def made_arrays(side: BuildSide) -> list[Any]:
    """The arrays of ``side``'s hash table (and its valid-row index) once made, else none."""
    table, idx = side.hash_table, side.row_index
    if isinstance(table, _LazyTable):
        if table.made is None:
            return []
        table, idx = table.made
    out = [v for v in getattr(table, "__dict__", {}).values() if hasattr(v, "data") and hasattr(v, "shape")]
    for pair in (getattr(table, "clustered", None) or {}).values():  # (payload copies in key order)
        out += [a for a in pair if a is not None]
    if idx is not None:
        out.append(idx)
    return out


class _LazyTable:
    """A hash table to build when a probe first needs it: ``make()`` -> (table, valid_idx)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.made: tuple[Any, Any] | None = None
        self.lock = threading.Lock()
