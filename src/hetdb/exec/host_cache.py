"""The host page cache of a CPU connection: decoded, checksum-verified pages kept between queries.

On the CPU a "hot" query should read host memory, not the disk: scans read with O_DIRECT (no kernel
page cache), so without this cache every query would pay the disk and the checksums again. A page is
named by what it is: (version directory, column, row group). Committed versions are immutable, so a
cached page is never stale; pages of replaced versions simply age out.

What stays is decided by benefit (``cache/policy.py``): the disk read time a page saves per byte it
holds, times how often it is read; a page worth less than what it would displace is used once and
not kept, so a scan larger than the cache does not flush pages other queries keep reading. Kept pages
(``keep``: a user's ``con.pin(..., tier="host")`` on a CPU connection) are never evicted.

String dictionaries are cached too, one object per (version, column): every page of a column then
shares one dictionary object, which keeps dictionary-code comparisons and concatenations on codes.
"""

from __future__ import annotations

import threading
from typing import Any

from hetdb.cache.policy import BenefitPolicy
from hetdb.cache.rates import shared_rates
from hetdb.cache.router import Route, RouteCounts
from hetdb.column import Column
from hetdb.errors import OutOfMemoryError
from hetdb.exec.columns import column_nbytes

_DICTIONARY = -1  # row group slot of a column's dictionary in the cache key


def _dictionary_nbytes(d: Column) -> int:
    return int(d.offsets.nbytes) + int(d.chars.nbytes) if d.offsets is not None else column_nbytes(d)


def _stored_bytes(reader: Any, column: str, rg: int, default: int, padded: bool = True) -> int:
    """Bytes of the page on disk (padded: what a re-read takes; else its length) when the reader
    knows, else ``default``."""
    try:
        loc = reader.page_location(column, rg)
        return int(loc.padded_length if padded else loc.length)
    except (AttributeError, LookupError, TypeError, ValueError):
        return default


class DecodedPageCache:
    """Decoded host pages under a byte budget, placed by benefit; safe to share between worker
    threads. ``admitted``/``evicted``/``bypassed`` count the placement decisions taken."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit = max(0, int(limit_bytes))
        self.used = 0
        self.hits = 0
        self.misses = 0
        self.admitted = 0
        self.evicted = 0
        self.bypassed = 0
        self.policy = BenefitPolicy()
        self._entries: dict[tuple, list] = {}  # key -> [Column, bytes, kept]
        # key -> the page's stored length, for the byte counts of a hit (asking the reader for the
        # page's location took about 40% of a hit's time: workers hold the GIL for it)
        self._lengths: dict[tuple, int] = {}
        # key -> the page's integer values in a narrower dtype (None: they do not fit), for compiled
        # CPU loops (exec/compiled_cpu_narrow.py); their bytes count in ``used`` and go with the page
        self._narrow: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def _get(self, key: tuple) -> Column | None:
        with self._lock:
            self.policy.record(key)
            hit = self._entries.get(key)
            return None if hit is None else hit[0]

    def _evictable(self, key: tuple) -> bool:
        return not self._entries[key][2]

    def _put(self, key: tuple, col: Column, nbytes: int, link_bytes: int, keep: bool = False,
             counts: RouteCounts | None = None) -> tuple[Column, bool]:
        """Insert unless the key is there already (another worker won the race: use its object) or
        the policy judges the page worth less than what it would displace (then it is used once);
        (the Column to use, whether the cache holds it). ``counts`` gets the decisions taken."""
        if nbytes > self.limit // 4 and not keep:  # one huge page must not flush the whole cache
            self.bypassed += 1
            if counts is not None:
                counts.bypassed += 1
            return col, False
        with self._lock:
            old = self._entries.get(key)
            if old is not None:
                if keep and not old[2]:
                    old[2] = True
                    self.policy.keep(key)
                return old[0], True
            over = self.used + nbytes - self.limit
            if over > 0:
                victims = self.policy.victims(over, self._evictable)
                disk = shared_rates().disk
                if victims is None or (not keep and key[2] != _DICTIONARY and not self.policy.admit(
                        key, disk.latency_s, disk.transfer_seconds(link_bytes), victims)):
                    if keep:
                        raise OutOfMemoryError(
                            f"pinning needs {nbytes:,} more bytes of the CPU host page cache but only "
                            f"{self.limit - self.kept_bytes():,} of its {self.limit:,} bytes are not pinned "
                            "already; raise host_memory_limit (the cache is a quarter of it) or pin fewer columns")
                    self.bypassed += 1
                    if counts is not None:
                        counts.bypassed += 1
                    return col, False
                for victim in victims:
                    _, n, _ = self._entries.pop(victim)
                    self._lengths.pop(victim, None)
                    self.policy.remove(victim)
                    self.used -= n + self._drop_narrow(victim)
                    self.evicted += 1
                if counts is not None:
                    counts.evicted += len(victims)
            self._entries[key] = [col, nbytes, keep]
            disk = shared_rates().disk
            self.policy.insert(key, nbytes, disk.latency_s, disk.transfer_seconds(link_bytes))
            if keep:
                self.policy.keep(key)
            self.used += nbytes
            self.admitted += 1
            if counts is not None:
                counts.admitted += 1
            return col, True

    def read(self, reader: Any, column: str, rg: int, keep: bool = False,
             counts: RouteCounts | None = None) -> tuple[Column, Route]:
        """(page ``rg`` of ``column`` as a host Column, its path: HOST_CPU from the cache, else read
        from disk and kept (DISK_TO_HOST) or not (DISK_DIRECT)). ``keep``: also keep it (and its
        dictionary) until ``unkeep`` (OutOfMemoryError when it cannot fit). ``counts`` gets the
        path, the page's stored bytes and the cache decisions taken."""
        key = (reader.path, column, rg)
        col = self._get(key)
        if col is not None:
            self.hits += 1
            if keep:
                self._put(key, col, 0, 0, keep=True)
            if counts is not None:
                length = self._lengths.get(key)
                if length is None:
                    length = self._lengths[key] = _stored_bytes(reader, column, rg, column_nbytes(col), padded=False)
                counts.add(Route.HOST_CPU, length)
            return col, Route.HOST_CPU
        self.misses += 1
        col = reader.read(column, rg)
        if col.dictionary is not None:
            dkey = (reader.path, column, _DICTIONARY)
            d = self._get(dkey)
            if d is None or keep:
                nbytes = _dictionary_nbytes(col.dictionary)
                d, _ = self._put(dkey, col.dictionary if d is None else d, nbytes, nbytes, keep)
            if d is not col.dictionary:
                col = Column(col.dtype, data=col.data, validity=col.validity, dictionary=d)
        nbytes = column_nbytes(col)
        stored = _stored_bytes(reader, column, rg, nbytes)
        kept = False
        if self.limit:
            col, kept = self._put(key, col, nbytes, stored, keep, counts)
        elif keep:
            raise OutOfMemoryError("cannot pin: the CPU host page cache is off (host_memory_limit is 0)")
        route = Route.DISK_TO_HOST if kept else Route.DISK_DIRECT
        if counts is not None:
            counts.add(route, _stored_bytes(reader, column, rg, nbytes, padded=False))
        return col, route

    def admit(self, reader: Any, column: str, rg: int, col: Column) -> Column:
        """Keep ``col``, page ``rg`` of ``column`` decoded by the caller (its arrays its own), when the
        policy admits it; returns the Column to use (another worker's when it won the race)."""
        if not self.limit:
            return col
        nbytes = column_nbytes(col)
        return self._put((reader.path, column, rg), col, nbytes, _stored_bytes(reader, column, rg, nbytes))[0]

    def read_resident(self, keys: list[tuple]) -> list[Column] | None:
        """The pages of ``keys`` (``(reader.path, column, rg)``) when every one is cached, one access
        each recorded (lazily: pass the same list object for the same pages), else None (read them
        with ``read``). One lock and no per-page Python for a compiled CPU worker's morsel."""
        with self._lock:
            entries = self._entries
            out = []
            for key in keys:
                hit = entries.get(key)
                if hit is None:
                    return None
                out.append(hit[0])
            self.policy.touch_group(keys)
            self.hits += len(keys)
        return out

    def narrow(self, key: tuple, dtype: Any) -> Any:
        """The cached page ``key``'s values as ``dtype`` (a narrower integer type), made on first use
        and kept with the page while the cache has room for them; None when the page is not cached,
        its values do not fit ``dtype`` or the copy would not fit in the cache."""
        import numpy as np

        hit = self._narrow.get(key)
        if hit is not None or key in self._narrow:
            return hit
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0].data is None:
                return None
            if self.used + entry[0].data.shape[0] * np.dtype(dtype).itemsize > self.limit:
                return None  # (no room: not made, asked again next time)
        data = entry[0].data
        info = np.iinfo(dtype)
        made = None
        if data.dtype.kind == "i" and data.shape[0]:
            from hetdb.backend.cpu.groupby import int_ranges

            lo, hi = int_ranges([data])[0]  # (on every kernel thread)
            if info.min <= lo and hi <= info.max:
                made = data.astype(dtype)
        with self._lock:
            if key not in self._entries or key in self._narrow:
                return self._narrow.get(key)
            if made is not None and self.used + made.nbytes > self.limit:
                return None  # (no room: asked again next time)
            self._narrow[key] = made
            if made is not None:
                self.used += made.nbytes
        return made

    def _drop_narrow(self, key: tuple) -> int:
        """Forget the narrow copy of an evicted page (lock held); the bytes it held."""
        made = self._narrow.pop(key, None)
        return 0 if made is None else int(made.nbytes)

    def stored_length(self, reader: Any, column: str, rg: int) -> int:
        """The page's stored bytes, as ``read`` counts a hit's."""
        key = (reader.path, column, rg)
        length = self._lengths.get(key)
        if length is None:
            col = self._get_quiet(key)
            length = _stored_bytes(reader, column, rg, 0 if col is None else column_nbytes(col), padded=False)
            self._lengths[key] = length
        return length

    def _get_quiet(self, key: tuple) -> Column | None:
        with self._lock:
            hit = self._entries.get(key)
            return None if hit is None else hit[0]

    def unkeep(self, key: tuple) -> None:
        """Make a kept page (or dictionary) evictable again (no-op when it is not cached)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[2]:
                entry[2] = False
                self.policy.keep(key, False)

    def is_kept(self, key: tuple) -> bool:
        with self._lock:
            entry = self._entries.get(key)
            return entry is not None and entry[2]

    def kept_bytes(self) -> int:
        return sum(e[1] for e in self._entries.values() if e[2])

    def entries(self) -> list[tuple[tuple, int, bool]]:
        """(key, bytes, kept) of every cached page and dictionary."""
        with self._lock:
            return [(k, e[1], e[2]) for k, e in self._entries.items()]

    def clear(self) -> None:
        """Drop every page that is not kept."""
        with self._lock:
            for key in [k for k, e in self._entries.items() if not e[2]]:
                _, n, _ = self._entries.pop(key)
                self._lengths.pop(key, None)
                self.policy.remove(key)
                self.used -= n + self._drop_narrow(key)
