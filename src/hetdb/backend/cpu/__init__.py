"""CPU backend: NumPy + Numba kernels implementing ``hetdb.backend.base.Backend``."""

from __future__ import annotations

import os

# Numba's OpenMP threads otherwise spin after every parallel kernel, taking the cores that the
# pipeline workers need (measured on 2 shared cores: 2-4x slower queries). Read by libgomp when it
# loads, i.e. at the first parallel kernel; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

if os.environ.get("HETDB_HUGEPAGES") == "1":  # huge pages for Numba's large arrays (see hugepages.py)
    from hetdb.backend.cpu import hugepages

    hugepages.install()

from hetdb.backend.cpu.backend import CpuBackend  # noqa: E402

__all__ = ["CpuBackend"]
