"""Queueing a batched delivery's host->device copies (backend/gpu/batch.py): one cudaMemcpyAsync per
copy on the copy stream (the default), spread over more copy streams (COPY_STREAMS: the GPU's copy
engines each take one stream's copies), or as one cuMemcpyBatchAsync call of the driver (BATCH_CALL).
Either way the copies are ordered after what the copy stream holds before them, and what the caller
queues on it afterwards (its event of the delivery, the decode launches) follows all of them.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from collections.abc import Sequence
from typing import Any

_H2D = 1  # cudaMemcpyHostToDevice

# Copy streams a delivery's copies are spread over (round robin, the copy stream first; 1: the copy
# stream alone) and, with more than one, the bytes above which a copy is cut into that many pieces
# (one per stream) so that a few large copies still keep every stream busy. For A/B measurements
# (scripts/warm_timeline.py switches copystreams=N, copysplit=BYTES).
COPY_STREAMS = 1
SPLIT_BYTES = 8 << 20
# The copies as one cuMemcpyBatchAsync (CUDA >= 12.8 drivers; otherwise one call per copy). For A/B
# (warm_timeline switch copybatch=1).
BATCH_CALL = False

_helpers: dict[tuple[int, int], list[Any]] = {}
_lock = threading.Lock()


def queue_copies(copies: Sequence[tuple[int, int, int]], base: int, stream: Any) -> None:
    """Queue ``(source address, offset from base, bytes)`` host->device copies into device memory at
    ``base`` on ``stream`` (see the module docstring for how)."""
    import cupy

    if not copies:
        return
    if BATCH_CALL and len(copies) > 1:
        fn = _batch_call()
        if fn is not None and fn([base + dst for _, dst, _ in copies], [src for src, _, _ in copies],
                                 [n for _, _, n in copies], stream.ptr):
            return
    rt = cupy.cuda.runtime
    if COPY_STREAMS <= 1:
        for src, dst, n in copies:
            rt.memcpyAsync(base + dst, src, n, _H2D, stream.ptr)
        return
    streams = [stream] + _helper_streams(stream, COPY_STREAMS - 1)
    start = cupy.cuda.Event(disable_timing=True)
    start.record(stream)
    for helper in streams[1:]:
        helper.wait_event(start)
    k = 0
    for src, dst, n in _pieces(copies, len(streams)):
        rt.memcpyAsync(base + dst, src, n, _H2D, streams[k % len(streams)].ptr)
        k += 1
    for helper in streams[1:]:
        done = cupy.cuda.Event(disable_timing=True)
        done.record(helper)
        stream.wait_event(done)


def _pieces(copies: Sequence[tuple[int, int, int]], ways: int) -> list[tuple[int, int, int]]:
    """``copies`` with each one over SPLIT_BYTES cut into ``ways`` pieces (4 KiB multiples)."""
    out: list[tuple[int, int, int]] = []
    for src, dst, n in copies:
        if SPLIT_BYTES <= 0 or n <= SPLIT_BYTES or ways < 2:
            out.append((src, dst, n))
            continue
        step = -(-n // ways)
        step = -(-step // 4096) * 4096
        off = 0
        while off < n:
            k = min(step, n - off)
            out.append((src + off, dst + off, k))
            off += k
    return out


def _helper_streams(stream: Any, count: int) -> list[Any]:
    """``count`` streams that take a share of ``stream``'s copies (made once per stream and device)."""
    import cupy

    from hetdb.backend.gpu.memory import new_stream

    key = (cupy.cuda.Device().id, int(stream.ptr))
    with _lock:
        got = _helpers.setdefault(key, [])
        while len(got) < count:
            got.append(new_stream())
        return got[:count]


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

    def call(dsts: list[int], srcs: list[int], sizes: list[int], stream_ptr: int) -> bool:
        # stream order (CU_MEMCPY_SRC_ACCESS_ORDER_STREAM), host (CU_MEM_LOCATION_TYPE_HOST) to the
        # current device (location hints matter only for managed memory)
        attrs = _Attributes(1, _Location(2, 0), _Location(1, cupy.cuda.Device().id), 0)
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
        if rc:  # (nothing was queued: the caller copies one by one; the A/B switch is off from now on)
            global BATCH_CALL
            BATCH_CALL = False
            warnings.warn(f"cuMemcpyBatchAsync failed with CUresult {rc}: copies queued one by one", stacklevel=3)
            return False
        return True

    _batch = call
    return call
