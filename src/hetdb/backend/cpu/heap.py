"""Keep freed memory in the process between a query's allocations (glibc's malloc).

A CPU query allocates and frees arrays of many MiB per pipeline (join tables, gathered columns,
group tables). glibc gives every block above its mmap threshold (128 KiB, rising with what was
freed) back to the kernel when it is freed and trims the heap's free top past 128 KiB, so the next
query faults the same memory in again: the kernel zeroes each page (2 MiB ones where NumPy advised
huge pages) and, with many threads, unmapping shoots down TLBs on every core the process runs on.
On the 2-core machine at TPC-H SF 10, one thread: q07 took 11,413 page faults and 311 ms of system
time against 379 ms of user time; q09 847 ms of system time; with the thresholds below ~0.

With ``HETDB_KEEP_FREED_MEMORY=1`` (opt-in), ``keep_freed_memory`` raises the mmap threshold to glibc's largest (32 MiB: blocks up to it come
from the heap and go back to it) and the trim threshold to 1 GiB (the heap keeps its free top).
Blocks above 32 MiB are still mapped per allocation. The process's resident memory then stays near
its peak; ``host_memory_limit`` accounts what queries hold, not what the heap keeps.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20   # glibc refuses more (half its 64 MiB heap size)
TRIM_THRESHOLD = 1 << 30
DEFAULT_THRESHOLD = 128 << 10  # glibc's initial value of both
# "1": set the thresholds (off by default: at the checkpoint several queries were slower on 16
# threads in the run that had them on, e.g. TPC-H q14/q17 whose plans had not changed; not separated
# from the other changes yet, see scripts/cpu_switches_ab.py)
ENV = "HETDB_KEEP_FREED_MEMORY"

_lock = threading.Lock()
_done: bool | None = None


def keep_freed_memory() -> bool:
    """Set the thresholds once per process (Linux with glibc; elsewhere nothing). True when set."""
    global _done
    with _lock:
        if _done is None:
            _done = _set()
        return _done


def _set() -> bool:
    if os.environ.get(ENV, "0") != "1":
        return False
    return set_thresholds(MMAP_THRESHOLD, TRIM_THRESHOLD)


def set_thresholds(mmap_threshold: int, trim_threshold: int) -> bool:
    """glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (for A/B runs: ``DEFAULT_THRESHOLD`` for both is
    glibc's start; setting them ends its dynamic threshold). True when set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not libc.gnu_get_libc_version:  # (glibc only: other libcs' mallopt differs or does nothing)
            return False
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))
