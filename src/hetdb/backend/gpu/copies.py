"""Queueing a batched delivery's host->device copies (backend/gpu/batch.py) on the copy stream: in
ascending order of their host addresses (SORTED), and as one cuMemcpyBatchAsync call of the driver
where it has one (BATCH_CALL; else one cudaMemcpyAsync per copy). Either way the copies follow what the
copy stream holds before them, and what the caller queues on it afterwards (its event of the
delivery, the decode launches) follows all of them.

Why (H100, SSB SF 20 warm, session 18 early checkpoint, scripts/warm_copy_probe.py): a warm q1.1's 62
copies (median 6 MB) replayed on the idle GPU in the order issued, column by column, ran at 50.5 GB/s,
the same sizes read from one fresh buffer in order at 54.6 (one 256 MiB copy: 55.2); sorted by host
address and merged where under 1 MiB apart 52.0; as one cuMemcpyBatchAsync 51.9. In the queries the
batch call moved the fact scan's bytes at 47.9 GB/s against 45.8 (q1.1) and 51.0 against 50.2 (q4.1).
Spreading the copies over two copy streams gained nothing (50.8 replayed, 45.8 in q1.1). Checkpoint 2
(another machine): replayed in the plan's order 53.3, sorted 53.6, batched 53.9 GB/s; in the queries
the same as main's copies (q1.1 49.8 against 49.4, q4.1 50.8 both): a small gain at best.
"""

from __future__ import annotations

import ctypes
import warnings
from collections.abc import Sequence
from typing import Any

_H2D = 1  # cudaMemcpyHostToDevice

# A delivery's copies in ascending order of their host addresses (the copy engine reads the host tier
# forward instead of column by column across it). False: in the plan's order (A/B: warm_timeline
# switch copysort=0).
SORTED = True
# The copies as one cuMemcpyBatchAsync (CUDA >= 12.8 drivers; otherwise one call per copy). False: one
# cudaMemcpyAsync per copy (A/B: warm_timeline switch copybatch=0).
BATCH_CALL = True


def queue_copies(copies: Sequence[tuple[int, int, int]], base: int, stream: Any) -> None:
    """Queue ``(source address, offset from base, bytes)`` host->device copies from page-locked host
    memory into device memory at ``base`` on ``stream`` (see the module docstring for how)."""
    import cupy

    if not copies:
        return
    if SORTED:
        copies = sorted(copies)
    if BATCH_CALL and len(copies) > 1:
        fn = _batch_call()
        if fn is not None and fn([base + dst for _, dst, _ in copies], [src for src, _, _ in copies],
                                 [n for _, _, n in copies], stream.ptr):
            return
    rt = cupy.cuda.runtime
    for src, dst, n in copies:
        rt.memcpyAsync(base + dst, src, n, _H2D, stream.ptr)


_batch: Any = None


def _batch_call() -> Any:
    """The driver's cuMemcpyBatchAsync as f(dsts, srcs, sizes, stream pointer) -> queued, or None when
    the driver lacks it (looked up once)."""
    global _batch
    if _batch is not None:
        return _batch or None
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        _batch = False
        return None
    fn, v2 = None, False
    # (CUDA 13's cuda.h names the _v2 entry point, without 12.8's failIdx argument, cuMemcpyBatchAsync)
    for name, is_v2 in (("cuMemcpyBatchAsync_v2", True), ("cuMemcpyBatchAsync", False)):
        fn = getattr(lib, name, None)
        if fn is not None:
            v2 = is_v2
            break
    if fn is None:
        _batch = False
        return None

    class _Location(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]

    class _Attributes(ctypes.Structure):
        _fields_ = [("srcAccessOrder", ctypes.c_int), ("srcLocHint", _Location), ("dstLocHint", _Location),
                    ("flags", ctypes.c_uint)]

    import cupy

    first = (ctypes.c_size_t * 1)(0)
    by_device: dict[int, Any] = {}  # device id -> its copies' attributes (made once: a call per delivery)

    def call(dsts: list[int], srcs: list[int], sizes: list[int], stream_ptr: int) -> bool:
        # stream order (CU_MEMCPY_SRC_ACCESS_ORDER_STREAM), host (CU_MEM_LOCATION_TYPE_HOST) to the
        # current device (location hints matter only for managed memory)
        device = cupy.cuda.runtime.getDevice()
        attrs = by_device.get(device)
        if attrs is None:
            attrs = by_device[device] = _Attributes(1, _Location(2, 0), _Location(1, device), 0)
        n = len(dsts)
        d = (ctypes.c_uint64 * n)(*dsts)
        s = (ctypes.c_uint64 * n)(*srcs)
        z = (ctypes.c_size_t * n)(*sizes)
        if v2:
            rc = fn(d, s, z, ctypes.c_size_t(n), ctypes.byref(attrs), first, ctypes.c_size_t(1),
                    ctypes.c_void_p(stream_ptr))
        else:
            failed = ctypes.c_size_t(0)
            rc = fn(d, s, z, ctypes.c_size_t(n), ctypes.byref(attrs), first, ctypes.c_size_t(1),
                    ctypes.byref(failed), ctypes.c_void_p(stream_ptr))
        if rc:  # (nothing was queued: the caller copies one by one, and so do later deliveries)
            global _batch
            _batch = False
            warnings.warn(f"cuMemcpyBatchAsync failed with CUresult {rc}: copies queued one by one", stacklevel=3)
            return False
        return True

    _batch = call
    return call
