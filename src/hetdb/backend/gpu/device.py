"""What GPU is there: availability (never raises), device facts, and measured transfer bandwidth."""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True only when CuPy imports and sees at least one CUDA device; never raises."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount()) >= 1
    except Exception:  # any failure (no CuPy, no driver, no device) means "no GPU"
        return False


def device_info(device: int = 0) -> dict[str, Any]:
    """Name, memory, compute capability and software versions of a device (requires a GPU)."""
    import cupy

    from hetdb.backend.gpu.compile import _nvrtc

    props = cupy.cuda.runtime.getDeviceProperties(device)
    with cupy.cuda.Device(device):
        free, total = cupy.cuda.runtime.memGetInfo()
    name = props["name"]
    major, minor = int(props["major"]), int(props["minor"])
    try:
        nvrtc_version = ".".join(str(v) for v in _nvrtc().getVersion())
    except Exception:  # version reporting must not make `hetdb info` fail
        nvrtc_version = "unknown"
    return {
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "device": device,
        "device_count": int(cupy.cuda.runtime.getDeviceCount()),
        "total_memory_bytes": int(total),
        "free_memory_bytes": int(free),
        "compute_capability": f"{major}.{minor}",
        "multiprocessors": int(props["multiProcessorCount"]),
        "cuda_runtime_version": int(cupy.cuda.runtime.runtimeGetVersion()),
        "nvrtc_version": nvrtc_version,
        "cupy_version": cupy.__version__,
    }


def measure_bandwidth(nbytes: int = 64 << 20, repeats: int = 5) -> dict[str, float]:
    """GB/s of host-to-device (pinned and pageable), device-to-host (pinned) and device-to-device
    copies of ``nbytes``; the best of ``repeats`` timed copies after one warm-up (about a second)."""
    import cupy
    import numpy as np

    from hetdb.backend.gpu.memory import pinned_empty

    pageable = np.ones(nbytes, dtype=np.uint8)
    pinned = pinned_empty(nbytes, np.uint8)
    pinned[:] = 1
    dev = cupy.empty(nbytes, dtype=np.uint8)
    dev2 = cupy.empty(nbytes, dtype=np.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)

    def best(copy) -> float:
        times = []
        for i in range(repeats + 1):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            copy()
            stop.record(stream)
            stop.synchronize()
            if i:  # the first copy is a warm-up
                times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        return nbytes / min(times) / 1e9

    with stream:
        result = {
            "h2d_pinned_gbps": best(lambda: dev.set(pinned, stream=stream)),
            "h2d_pageable_gbps": best(lambda: dev.set(pageable, stream=stream)),
            "d2h_pinned_gbps": best(lambda: dev.get(stream=stream, out=pinned)),
            "d2d_gbps": best(lambda: dev2.data.copy_from_device_async(dev.data, nbytes, stream)),
        }
    return result
