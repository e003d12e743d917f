"""GPU backend: CuPy arrays and CUDA C++ kernels compiled at run time with NVRTC.

Importing this package never imports CuPy or touches a GPU; ``GpuBackend`` (and the kernel modules
behind it) load on first use. Check ``gpu_available()`` before constructing one.
"""

from __future__ import annotations

from typing import Any

from hetdb.backend.gpu.device import device_info, gpu_available, measure_bandwidth

__all__ = ["GpuBackend", "gpu_available", "device_info", "measure_bandwidth"]


def __getattr__(name: str) -> Any:
    if name == "GpuBackend":
        from hetdb.backend.gpu.backend import GpuBackend

        return GpuBackend
    raise AttributeError(f"module 'hetdb.backend.gpu' has no attribute {name!r}")
