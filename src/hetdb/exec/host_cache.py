"""The host page cache of a CPU connection: decoded, checksum-verified pages kept between queries.

On the CPU a "hot" query should read host memory, not the disk: scans read with O_DIRECT (no kernel
page cache), so without this cache every query would pay the disk and the checksums again. A page is
named by what it is: (version directory, column, row group). Committed versions are immutable, so a
cached page is never stale; pages of replaced versions simply age out (least recently used first).

String dictionaries are cached too, one object per (version, column): every page of a column then
shares one dictionary object, which keeps dictionary-code comparisons and concatenations on codes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from hetdb.column import Column
from hetdb.exec.columns import column_nbytes

_DICTIONARY = -1  # row group slot of a column's dictionary in the cache key


def _dictionary_nbytes(d: Column) -> int:
    return int(d.offsets.nbytes) + int(d.chars.nbytes) if d.offsets is not None else column_nbytes(d)


class DecodedPageCache:
    """LRU of decoded host pages under a byte budget; safe to share between worker threads."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit = max(0, int(limit_bytes))
        self.used = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple, tuple[Column, int]] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, key: tuple) -> Column | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def _put(self, key: tuple, col: Column, nbytes: int) -> Column:
        """Insert unless the key is there already (another worker won the race: use its object)."""
        if nbytes > self.limit // 4:
            return col  # one huge page must not flush the whole cache
        with self._lock:
            old = self._entries.get(key)
            if old is not None:
                return old[0]
            self._entries[key] = (col, nbytes)
            self.used += nbytes
            while self.used > self.limit and self._entries:
                _, (_, n) = self._entries.popitem(last=False)
                self.used -= n
            return col

    def read(self, reader: Any, column: str, rg: int) -> tuple[Column, bool]:
        """(page ``rg`` of ``column`` as a host Column, whether it came from the cache)."""
        key = (reader.path, column, rg)
        col = self._get(key)
        if col is not None:
            self.hits += 1
            return col, True
        self.misses += 1
        col = reader.read(column, rg)
        if col.dictionary is not None:
            dkey = (reader.path, column, _DICTIONARY)
            d = self._get(dkey)
            if d is None:
                d = self._put(dkey, col.dictionary, _dictionary_nbytes(col.dictionary))
            if d is not col.dictionary:
                col = Column(col.dtype, data=col.data, validity=col.validity, dictionary=d)
        if self.limit:
            col = self._put(key, col, column_nbytes(col))
        return col, False

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.used = 0
