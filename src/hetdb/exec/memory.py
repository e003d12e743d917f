"""Memory reservations against ``host_memory_limit``.

Operators reserve bytes before they hold large state (hash tables, aggregation state, sort buffers).
A refused ``try_reserve`` tells the operator to partition and spill; ``reserve`` (for state that has
no spill path) raises ``OutOfMemoryError``. Every reservation is released when the query ends, and the
engine checks that the total is back to zero.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

from hetdb.errors import OutOfMemoryError


def _libc_trim() -> object | None:
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc: nothing to trim
    fn.argtypes = [ctypes.c_size_t]
    return fn


_MALLOC_TRIM = _libc_trim()


def release_free_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim, every arena).

    NumPy temporaries below glibc's (dynamic, up to 32 MiB) mmap threshold come from the heap; once
    freed they stay in the process's RSS until trimmed. An operator calls this when it has just freed
    much (states spilled, a partition finished), so that RSS follows what the limit accounts."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def default_host_limit() -> int:
    """60% of physical memory (the documented default of ``host_memory_limit``)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return int(total * 0.6)


class MemoryManager:
    """Thread-safe byte accounting with a hard limit and a peak watermark (host memory). Subclasses
    (the GPU's, in exec/device.py) change where granted bytes come from through ``_acquire`` /
    ``_force`` / ``_give_back`` and the refusal message; the bookkeeping stays here."""

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

    def reset_peak(self) -> None:
        with self._lock:
            self._peak = self._used

    def _acquire(self, nbytes: int) -> bool:
        """Take ``nbytes`` from whatever backs this manager (called under the lock, within limit)."""
        return True

    def _force(self, nbytes: int) -> None:
        """Account ``nbytes`` that must be held whatever the limit (called under the lock)."""

    def _give_back(self, nbytes: int) -> None:
        """Return ``nbytes`` to whatever backs this manager (called under the lock)."""

    def _refusal(self, nbytes: int, what: str) -> str:
        return (f"{what} needs {nbytes:,} bytes but only {self.limit - self._used:,} of "
                f"host_memory_limit={self.limit:,} are free; raise host_memory_limit")

    def try_reserve(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` if it fits under the limit; False (nothing reserved) if not."""
        nbytes = int(nbytes)
        with self._lock:
            if self._used + nbytes > self.limit or not self._acquire(nbytes):
                return False
            self._used += nbytes
            self._peak = max(self._peak, self._used)
            return True

    def reserve(self, nbytes: int, what: str) -> None:
        """Reserve or raise OutOfMemoryError naming ``what`` (for state that cannot spill)."""
        if not self.try_reserve(nbytes):
            raise OutOfMemoryError(self._refusal(int(nbytes), what))

    def force_reserve(self, nbytes: int) -> None:
        """Account for bytes that must be held whatever the limit (results that have no spill path)."""
        nbytes = int(nbytes)
        with self._lock:
            self._force(nbytes)
            self._used += nbytes
            self._peak = max(self._peak, self._used)

    def release(self, nbytes: int) -> None:
        nbytes = int(nbytes)
        with self._lock:
            if nbytes > self._used:
                raise AssertionError(f"memory accounting went negative ({self._used - nbytes})")
            self._give_back(nbytes)
            self._used -= nbytes


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
