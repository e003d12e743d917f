"""CPU backend: NumPy + Numba kernels implementing ``hetdb.backend.base.Backend``."""

from __future__ import annotations

import os

# Numba's OpenMP threads otherwise spin after every parallel kernel, taking the cores that the
# pipeline workers need (measured on 2 shared cores: 2-4x slower queries). Read by libgomp when it
# loads, i.e. at the first parallel kernel; a value the user set wins. HETDB_OMP_SPINCOUNT=N instead
# lets them spin N rounds before they sleep (libgomp's GOMP_SPINCOUNT; PASSIVE must then stay unset:
# with both, a kernel took ~1 ms on 2 cores): asleep, every parallel kernel's start wakes them
# (scripts/omp_wake_probe.py measures what that costs), and a hash build runs ten or so in a row.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    if os.environ.get("HETDB_OMP_SPINCOUNT"):
        os.environ["GOMP_SPINCOUNT"] = os.environ["HETDB_OMP_SPINCOUNT"]
    else:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

if os.environ.get("HETDB_HUGEPAGES") == "1":  # huge pages for Numba's large arrays (see hugepages.py)
    from hetdb.backend.cpu import hugepages

    hugepages.install()

from hetdb.backend.cpu.backend import CpuBackend  # noqa: E402

__all__ = ["CpuBackend"]
