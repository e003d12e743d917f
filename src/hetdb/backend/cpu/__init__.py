"""CPU backend: NumPy + Numba kernels implementing ``hetdb.backend.base.Backend``."""

from __future__ import annotations

import os

# How Numba's OpenMP threads wait between parallel kernels (read by libgomp when it loads, i.e. at the
# first parallel kernel; a value the user set wins). Spinning after every kernel took the cores the
# pipeline workers need on 2 shared cores (2-4x slower queries): there they sleep at once
# (OMP_WAIT_POLICY=PASSIVE) and every kernel's start wakes them. HETDB_OMP_SPINCOUNT=N lets them spin
# N rounds first (libgomp's GOMP_SPINCOUNT; PASSIVE then stays unset: with both, a kernel took ~1 ms on
# 2 cores), which keeps them awake through the ten or so kernels of a hash build's end
# (scripts/omp_wake_probe.py measures a kernel's start by the gap since the last one).


def omp_wait_settings(environ: dict) -> dict[str, str]:
    """The OpenMP variables to set for ``environ`` (none where the user set one)."""
    if "OMP_WAIT_POLICY" in environ or "GOMP_SPINCOUNT" in environ:
        return {}
    spin = environ.get("HETDB_OMP_SPINCOUNT", "")
    if spin.isdigit() and int(spin) > 0:
        return {"GOMP_SPINCOUNT": spin}
    return {"OMP_WAIT_POLICY": "PASSIVE"}


os.environ.update(omp_wait_settings(dict(os.environ)))

if os.environ.get("HETDB_HUGEPAGES") == "1":  # huge pages for Numba's large arrays (see hugepages.py)
    from hetdb.backend.cpu import hugepages

    hugepages.install()

from hetdb.backend.cpu.backend import CpuBackend  # noqa: E402

__all__ = ["CpuBackend"]
