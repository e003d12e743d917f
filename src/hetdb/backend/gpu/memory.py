"""GPU memory: pinned host staging buffers, streams, a device memory budget and pool usage.

Pinned (page-locked) host memory is what makes host-to-device copies asynchronous and fast (pageable
memory silently turns an async copy synchronous); page reads are staged in it. The device budget is a
plain counter that every large device allocation reserves against, so a query fails with a typed
``OutOfMemoryError`` (or spills) before CUDA itself runs out.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

import numpy as np

from hetdb.errors import GpuOutOfMemoryError


class PinnedHostPool:
    """NumPy arrays backed by pinned host memory from one CuPy ``PinnedMemoryPool`` (reused blocks)."""

    def __init__(self) -> None:
        import cupy

        self._pool = cupy.cuda.PinnedMemoryPool()

    def empty(self, shape: int | tuple[int, ...], dtype: Any = np.uint8) -> np.ndarray:
        """An uninitialised pinned array; the memory returns to the pool when the array is freed."""
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            return np.empty(shape, dtype)
        mem = self._pool.malloc(count * dtype.itemsize)
        # np.frombuffer keeps ``mem`` alive through the array's base: freeing the array frees the block.
        return np.frombuffer(mem, dtype=dtype, count=count).reshape(shape)

    def free_blocks(self) -> int:
        return int(self._pool.n_free_blocks())


_pinned: PinnedHostPool | None = None
_pinned_lock = threading.Lock()


def pinned_pool() -> PinnedHostPool:
    """The process-wide pinned pool (created on first use)."""
    global _pinned
    with _pinned_lock:
        if _pinned is None:
            _pinned = PinnedHostPool()
        return _pinned


def pinned_empty(shape: int | tuple[int, ...], dtype: Any = np.uint8) -> np.ndarray:
    return pinned_pool().empty(shape, dtype)


def host_view(address: int, nbytes: int, owner: Any) -> Any:
    """A uint8 CuPy array over ``nbytes`` of pinned host memory at ``address``, for kernels that read
    it in place over the link (zero-copy): with unified addressing, CUDA maps page-locked host memory
    into every device's address space at the same address. ``owner`` keeps the memory alive; the
    caller keeps it pinned (not evicted, not reused) until the kernels reading it have run."""
    import cupy

    mem = cupy.cuda.UnownedMemory(int(address), int(nbytes), owner, cupy.cuda.Device().id)
    return cupy.ndarray((int(nbytes),), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))


def new_stream(non_blocking: bool = True) -> Any:
    """A CUDA stream that does not synchronise with the legacy default stream."""
    import cupy

    return cupy.cuda.Stream(non_blocking=non_blocking)


def to_device_async(host: np.ndarray, stream: Any) -> Any:
    """Start copying ``host`` (pinned for a truly asynchronous copy) to a new device array on
    ``stream``; the caller keeps ``host`` alive and unchanged until the stream is synchronised."""
    import cupy

    with stream:
        out = cupy.empty(host.shape, dtype=host.dtype)
        out.set(host, stream=stream)
    return out


class DeviceMemoryBudget:
    """A thread-safe reservation counter for device memory (``gpu_memory_limit``)."""

    def __init__(self, limit_bytes: int):
        if limit_bytes < 0:
            raise ValueError("limit_bytes must be >= 0")
        self.limit_bytes = int(limit_bytes)
        self._used = 0
        self._peak = 0
        self._lock = threading.Lock()

    @property
    def used_bytes(self) -> int:
        return self._used

    @property
    def peak_bytes(self) -> int:
        return self._peak

    @property
    def available_bytes(self) -> int:
        return self.limit_bytes - self._used

    def try_reserve(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` if they fit; False (nothing reserved) if not."""
        if nbytes < 0:
            raise ValueError("cannot reserve a negative number of bytes")
        with self._lock:
            if self._used + nbytes > self.limit_bytes:
                return False
            self._used += nbytes
            self._peak = max(self._peak, self._used)
            return True

    def reserve(self, nbytes: int, what: str = "device memory") -> None:
        """Reserve ``nbytes`` or raise OutOfMemoryError naming what needed them."""
        if not self.try_reserve(nbytes):
            raise GpuOutOfMemoryError(
                f"{what} needs {_fmt(nbytes)} of GPU memory but only {_fmt(self.available_bytes)} of the "
                f"{_fmt(self.limit_bytes)} gpu_memory_limit is free; raise gpu_memory_limit or let the "
                "query run on the CPU (device='cpu')")

    def release(self, nbytes: int) -> None:
        with self._lock:
            if nbytes < 0 or nbytes > self._used:
                raise ValueError(f"releasing {nbytes} bytes but only {self._used} are reserved")
            self._used -= nbytes

    @contextmanager
    def reservation(self, nbytes: int, what: str = "device memory"):
        """Reserve for the duration of a ``with`` block."""
        self.reserve(nbytes, what)
        try:
            yield
        finally:
            self.release(nbytes)


def _fmt(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes} B"


def pool_usage() -> dict[str, int]:
    """Bytes held by CuPy's device pool (used = in live arrays, total = used + cached) and pinned pool."""
    import cupy

    pool = cupy.get_default_memory_pool()
    pinned = cupy.get_default_pinned_memory_pool()
    return {"device_used_bytes": int(pool.used_bytes()), "device_total_bytes": int(pool.total_bytes()),
            "pinned_free_blocks": int(pinned.n_free_blocks())}
