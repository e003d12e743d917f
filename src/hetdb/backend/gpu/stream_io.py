"""The copy stream of a device, host->device copies out of pinned runs, and buffered reads."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from hetdb.errors import CorruptDataError

_H2D = 1  # cudaMemcpyHostToDevice


_copy_streams: dict[int, Any] = {}
_copy_streams_lock = threading.Lock()


def copy_stream(device_id: int) -> Any:
    """The process's host-to-device copy stream of a device (non-blocking; created on first use)."""
    with _copy_streams_lock:
        stream = _copy_streams.get(device_id)
        if stream is None:
            import cupy

            from hetdb.backend.gpu.memory import new_stream

            with cupy.cuda.Device(device_id):
                stream = _copy_streams[device_id] = new_stream()
        return stream


def _copy_runs(raw: Any, runs: list[np.ndarray], length: int, stream: Any) -> None:
    """Queue async copies of the first ``length`` bytes of the pinned ``runs`` into device ``raw``."""
    import cupy

    dst, done = int(raw.data.ptr), 0
    for run in runs:
        n = min(int(run.shape[0]), length - done)
        if n <= 0:
            break
        cupy.cuda.runtime.memcpyAsync(dst + done, run.ctypes.data, n, _H2D, stream.ptr)
        done += n


def _read_buffered(path: str, offset: int, dest: np.ndarray) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        view, done = memoryview(dest), 0
        while done < dest.shape[0]:
            got = os.preadv(fd, [view[done:]], offset + done)
            if got == 0:
                raise CorruptDataError(f"file {path} is truncated at offset {offset + done}")
            done += got
    finally:
        os.close(fd)


