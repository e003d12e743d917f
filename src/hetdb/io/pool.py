"""Concurrent reads of many page ranges (NVMe needs many requests in flight to reach its bandwidth)."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

import numpy as np

from hetdb.io.direct import Alloc, read_range


class PageRange(Protocol):
    """What io needs to know about a page: where its bytes are (storage.PageLocation satisfies it)."""

    path: str
    offset: int
    padded_length: int


_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(max_workers: int) -> ThreadPoolExecutor:
    # Pools are kept per size so repeated scans do not pay thread start-up on every call.
    with _pools_lock:
        pool = _pools.get(max_workers)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="hetdb-io")
            _pools[max_workers] = pool
        return pool


def read_pages(locations: list[PageRange], max_workers: int = 8, alloc: Alloc | None = None) -> list[np.ndarray]:
    """Read every location's padded range, concurrently; results in the order of ``locations``.

    ``alloc(nbytes)`` supplies each destination buffer (e.g. pinned host memory); by default an aligned
    NumPy array. The first failing read's exception is raised after all reads finished."""
    if not locations:
        return []
    if len(locations) == 1 or max_workers <= 1:
        return [read_range(loc.path, loc.offset, loc.padded_length, alloc=alloc) for loc in locations]
    pool = _pool(max_workers)
    futures = [pool.submit(read_range, loc.path, loc.offset, loc.padded_length, None, alloc)
               for loc in locations]
    results = []
    error: BaseException | None = None
    for f in futures:
        try:
            results.append(f.result())
        except BaseException as e:  # noqa: BLE001 - wait for all reads, then report the first failure
            error = error or e
    if error is not None:
        raise error
    return results


def submit_pages(locations: list[PageRange], max_workers: int = 8, alloc: Alloc | None = None) -> list[Future]:
    """Start reading every location on the shared pool (for prefetching); one Future per location,
    each resolving to what ``read_pages`` would return for it."""
    pool = _pool(max(1, max_workers))
    return [pool.submit(read_range, loc.path, loc.offset, loc.padded_length, None, alloc) for loc in locations]
