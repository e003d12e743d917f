"""Memory reservations against ``host_memory_limit``.

Operators reserve bytes before they hold large state (hash tables, aggregation state, sort buffers).
A refused ``try_reserve`` tells the operator to partition and spill; ``reserve`` (for state that has
no spill path) raises ``OutOfMemoryError``. Every reservation is released when the query ends, and the
engine checks that the total is back to zero.
"""

from __future__ import annotations

import os
import threading

from hetdb.errors import OutOfMemoryError


def default_host_limit() -> int:
    """60% of physical memory (the documented default of ``host_memory_limit``)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return int(total * 0.6)


class MemoryManager:
    """Thread-safe byte accounting with a hard limit and a peak watermark."""

    def __init__(self, limit: int | None):
        self.limit = default_host_limit() if limit is None else int(limit)
        self._used = 0
        self._peak = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    @property
    def peak(self) -> int:
        return self._peak

    def try_reserve(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` if it fits under the limit; False (nothing reserved) if not."""
        nbytes = int(nbytes)
        with self._lock:
            if self._used + nbytes > self.limit:
                return False
            self._used += nbytes
            self._peak = max(self._peak, self._used)
            return True

    def reserve(self, nbytes: int, what: str) -> None:
        """Reserve or raise OutOfMemoryError naming ``what`` (for state that cannot spill)."""
        if not self.try_reserve(nbytes):
            raise OutOfMemoryError(
                f"{what} needs {nbytes:,} bytes but only {self.limit - self._used:,} of "
                f"host_memory_limit={self.limit:,} are free; raise host_memory_limit")

    def force_reserve(self, nbytes: int) -> None:
        """Account for bytes that must be held whatever the limit (results that have no spill path)."""
        with self._lock:
            self._used += int(nbytes)
            self._peak = max(self._peak, self._used)

    def release(self, nbytes: int) -> None:
        with self._lock:
            self._used -= int(nbytes)
            if self._used < 0:
                raise AssertionError(f"memory accounting went negative ({self._used})")


class Reservation:
    """The bytes one operator state holds; ``grow`` may be refused, ``close`` returns everything."""

    def __init__(self, manager: MemoryManager):
        self.manager = manager
        self.nbytes = 0
        self._lock = threading.Lock()

    def try_grow(self, nbytes: int) -> bool:
        if self.manager.try_reserve(nbytes):
            with self._lock:
                self.nbytes += int(nbytes)
            return True
        return False

    def force_grow(self, nbytes: int) -> None:
        self.manager.force_reserve(nbytes)
        with self._lock:
            self.nbytes += int(nbytes)

    def shrink(self, nbytes: int) -> None:
        nbytes = min(int(nbytes), self.nbytes)
        with self._lock:
            self.nbytes -= nbytes
        self.manager.release(nbytes)

    def close(self) -> None:
        self.shrink(self.nbytes)
