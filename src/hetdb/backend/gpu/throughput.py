"""Throughput of the GPU data path (for tests, `hetdb info` and the benchmark): how fast the
PageStreamer moves a table's pages into device memory, per route (disk, OS page cache, pinned host
tier, whole-scan fill)."""

from __future__ import annotations

import time
from typing import Any

from hetdb.backend.gpu.stream import PageStreamer
from hetdb.cache.base import PageCache
from hetdb.cache.host_cache import HostPageCache


def stream_throughput(reader: Any, columns: list[str], budget: Any, cache: PageCache | None = None,
                      depth: int = 3, io_workers: int = 8, direct: bool = True,
                      host_cache: HostPageCache | None = None) -> dict[str, float]:
    """Stream ``columns`` of the whole table into device memory once (the consumer only waits for
    the data) and report effective GB/s: bytes delivered to the device / wall time."""
    import cupy

    start = time.perf_counter()
    with PageStreamer(reader, columns, budget=budget, cache=cache, host_cache=host_cache, depth=depth,
                      io_workers=io_workers, direct=direct) as streamer:
        for _rg, _batch in streamer:
            pass
        enqueued = time.perf_counter() - start  # the host side is done: the rest is the GPU catching up
        cupy.cuda.get_current_stream().synchronize()
        seconds = time.perf_counter() - start
        stats = streamer.stats
    out = stats.as_dict()
    out["seconds"] = seconds
    out["enqueue_seconds"] = enqueued
    out["gbps"] = stats.bytes_delivered / seconds / 1e9 if seconds > 0 else 0.0
    return out



def fill_throughput(reader: Any, columns: list[str], budget: Any, host_cache: HostPageCache,
                    cache: PageCache | None = None) -> dict[str, float]:
    """The warm path's copy rate: ``fill_cache`` of every page of ``columns`` (all in ``host_cache``)
    into a device cache (a new one over ``budget`` unless given), timed to the end of the copies;
    effective GB/s = bytes copied / wall time. The filled pages are dropped again unless ``cache``
    was given."""
    import cupy

    from hetdb.cache.device_cache import DevicePageCache

    own = cache is None
    cache = DevicePageCache(budget, share=1.0) if own else cache
    start = time.perf_counter()
    streamer = PageStreamer(reader, columns, budget=budget, cache=cache, host_cache=host_cache)
    try:
        filled = streamer.fill_cache()
        enqueued = time.perf_counter() - start
        cupy.cuda.get_current_stream().synchronize()
        seconds = time.perf_counter() - start
    finally:
        streamer.close()
    out = streamer.stats.as_dict()
    out.update(filled=filled, seconds=seconds, enqueue_seconds=enqueued,
               gbps=streamer.stats.bytes_h2d / seconds / 1e9 if seconds > 0 else 0.0)
    if own:
        cache.clear()
    return out
