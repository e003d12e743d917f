"""A stand-in ``cupy`` module for measuring the host side of the GPU data path on a machine without a GPU.

``install()`` puts a module named ``cupy`` into ``sys.modules`` whose arrays are NumPy arrays (with a
``.data.ptr``), whose streams and events do nothing and report work done, and whose host->device
copies are byte copies into those arrays (so a delivery's layout can be checked against the pages).
It lets ``PageStreamer`` and the delivery planner run their Python on the CPU, to time the work a
warm scan does per delivery and per page, and lets ``tests/backend/stream_early_stop_host.py``
check which host objects a stopped scan leaves alive. ``scripts/host_only_gpu.py`` (the whole GPU
engine's host work) builds on its streams, events and devices. Nothing in ``src/`` uses it, and it
says nothing about GPU time.
"""

from __future__ import annotations

import ctypes
import sys
import types

import numpy as np


class _Ptr:
    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def memset_async(self, value: int, size: int, stream=None) -> None:
        _count("MemoryPointer.memset_async")
        ctypes.memset(self.ptr, value, size)


class ndarray(np.ndarray):
    """A NumPy array that answers ``.data.ptr`` like a CuPy array."""

    @property
    def data(self):  # type: ignore[override]
        return _Ptr(int(self.ctypes.data))

    def get(self, stream=None):
        return np.asarray(self)

    def set(self, host, stream=None):
        self.view(np.ndarray)[...] = np.asarray(host).reshape(self.shape).view(self.dtype)


def _empty(shape, dtype=np.uint8, order="C"):
    return np.empty(shape, dtype=dtype).view(ndarray)


def _zeros(shape, dtype=np.float64):
    return np.zeros(shape, dtype=dtype).view(ndarray)


def _asarray(a, dtype=None):
    return np.ascontiguousarray(a, dtype=dtype).view(ndarray)


def _arange(*args, dtype=None):
    return np.arange(*args, dtype=dtype).view(ndarray)


def _ones(shape, dtype=np.float64):
    return np.ones(shape, dtype=dtype).view(ndarray)


def _concatenate(arrays):
    return np.concatenate([np.asarray(a) for a in arrays]).view(ndarray)


CALLS: dict[str, int] = {}  # stream/event waits and records by name (host_only_gpu.py counts more)


def _count(name: str) -> None:
    CALLS[name] = CALLS.get(name, 0) + 1


class Stream:
    """A stream whose work is always done; ``with stream:`` makes it the current one."""

    _current: Stream | None = None

    def __init__(self, non_blocking: bool = False, null: bool = False, ptr: int = 0, priority: int | None = None) -> None:
        self.ptr = 0
        self._prev: list = []

    def __enter__(self):
        self._prev.append(Stream._current)
        Stream._current = self
        return self

    def __exit__(self, *exc):
        Stream._current = self._prev.pop()

    def use(self):
        Stream._current = self
        return self

    def wait_event(self, event) -> None:
        pass

    def synchronize(self) -> None:
        _count("Stream.synchronize")

    def record(self, event=None):
        return event or Event()

    @property
    def done(self) -> bool:
        return True


_null = Stream(null=True)


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.done = True
        self.ptr = 0

    def record(self, stream=None) -> None:
        _count("Event.record")

    def synchronize(self) -> None:
        _count("Event.synchronize")


class Device:
    def __init__(self, device_id: int | None = None) -> None:
        self.id = 0 if device_id is None else device_id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def use(self):
        return self

    def synchronize(self) -> None:
        pass


def _get_current_stream(device=None):
    return Stream._current or _null


class _PinnedPool:
    def malloc(self, n: int):
        return bytearray(n)

    def n_free_blocks(self) -> int:
        return 0


COPY_BYTES = True  # False: copies are counted, not made (to time the Python alone)
copies = [0, 0]    # memcpyAsync calls, bytes


def _memcpy_async(dst: int, src: int, n: int, kind: int, stream: int) -> None:
    copies[0] += 1
    copies[1] += n
    if COPY_BYTES:
        ctypes.memmove(dst, src, n)


def install() -> types.ModuleType:
    """Make ``import cupy`` give the stand-in (idempotent)."""
    got = sys.modules.get("cupy")
    if got is not None and getattr(got, "HOST_ONLY", False):
        return got
    cupy = types.ModuleType("cupy")
    cupy.HOST_ONLY = True
    cupy.ndarray = ndarray
    cupy.empty = _empty
    cupy.zeros = _zeros
    cupy.asarray = _asarray
    cupy.arange = _arange
    cupy.ones = _ones
    cupy.concatenate = _concatenate
    for name in ("uint8", "int8", "int16", "int32", "int64", "uint32", "uint64", "float32", "float64", "bool_"):
        setattr(cupy, name, getattr(np, name))
    cuda = types.ModuleType("cupy.cuda")
    cuda.Stream, cuda.Event, cuda.Device = Stream, Event, Device
    cuda.get_current_stream = _get_current_stream
    cuda.PinnedMemoryPool = _PinnedPool
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.memcpyAsync = _memcpy_async
    cuda.runtime = runtime
    cupy.cuda = cuda
    sys.modules["cupy"] = cupy
    sys.modules["cupy.cuda"] = cuda
    sys.modules["cupy.cuda.runtime"] = runtime
    # a delivery's copies as the stand-in's memcpyAsync calls: on a machine with a CUDA driver,
    # backend/gpu/copies.py would find its batch call and hand it the stand-in's host addresses
    from hetdb.backend.gpu import copies

    copies.BATCH_CALL = False
    return cupy
