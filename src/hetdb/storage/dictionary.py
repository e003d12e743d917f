"""The shared per-column string dictionary built while a table is written.

Codes are stable as the dictionary grows (values get codes in first-appearance order), so pages written
earlier stay valid. A column stays dictionary-encoded while it has at most ``max_values`` distinct
values and (from the second page on) fewer distinct values than half the rows seen; once it exceeds either, that page and every
later page are written plain (a dictionary would cost more than it saves).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb import types as T
from hetdb.column import Column

MAX_DICT_VALUES = 1 << 16


class DictionaryBuilder:
    def __init__(self, max_values: int | None = None) -> None:
        self.max_values = MAX_DICT_VALUES if max_values is None else max_values
        self.index: dict[str, int] = {}
        self.values: list[str] = []
        self.active = True
        self.used = False  # at least one page was written with it
        self.rows_seen = 0

    def try_encode(self, arr: pa.Array) -> np.ndarray | None:
        """int32 codes for the page ``arr`` (NULL rows get code 0), or None when the column must be
        written plain from this page on."""
        rows = self.rows_seen + len(arr)
        self.rows_seen = rows
        if not self.active:
            return None
        # A prefix with too many distinct values proves the page has too many: this spares hashing
        # a whole page of unique strings (comments, names) only to write it plain.
        prefix = 2 * self.max_values + 1
        if len(arr) > prefix and len(pc.dictionary_encode(arr.slice(0, prefix)).dictionary) > self.max_values:
            self.active = False
            return None
        local = pc.dictionary_encode(arr)
        if len(local.dictionary) > self.max_values:
            self.active = False
            return None
        local_values = local.dictionary.to_pylist()
        new = [v for v in local_values if v not in self.index]
        distinct = len(self.values) + len(new)
        first_page = not self.used
        if distinct > self.max_values or (not first_page and 2 * distinct > rows):
            self.active = False
            return None
        for v in new:
            self.index[v] = len(self.values)
            self.values.append(v)
        self.used = True
        if not local_values:
            return np.zeros(len(arr), dtype=np.int32)
        remap = np.fromiter((self.index[v] for v in local_values), dtype=np.int32, count=len(local_values))
        idx = local.indices
        idx = idx.fill_null(0) if idx.null_count else idx
        return remap[idx.to_numpy(zero_copy_only=False)]

    def column(self) -> Column:
        """The dictionary as a plain string Column (no NULLs)."""
        return Column.from_arrow(pa.array(self.values, type=pa.large_string()), T.STRING)
