"""CPU backend: NumPy + Numba kernels implementing ``hetdb.backend.base.Backend``."""

from __future__ import annotations

from hetdb.backend.cpu.backend import CpuBackend

__all__ = ["CpuBackend"]
