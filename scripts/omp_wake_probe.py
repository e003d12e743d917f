"""What starting a parallel Numba kernel costs on every kernel thread, by the gap since the last one.

Usage: python scripts/omp_wake_probe.py [THREADS]   (default: every core; run it under the OMP_WAIT_POLICY /
GOMP_SPINCOUNT to compare: hetdb sets OMP_WAIT_POLICY=PASSIVE unless the environment has one)

A kernel after the operators' work between kernels (a hash build's ten or so kernels, with Python between
them) finds its threads either still spinning or asleep (PASSIVE: asleep at once, woken by the kernel's
start). Per gap between calls: the median wall of a kernel that does almost nothing (64 rows per thread).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
from numba import njit, prange

import hetdb.backend.cpu  # noqa: F401  (sets hetdb's OpenMP defaults, as a connection would)
from hetdb.backend.cpu.keys import set_kernel_threads


@njit(parallel=True, nogil=True)
def _touch(a):
    for i in prange(a.shape[0]):
        a[i] += 1


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count() or 1
    set_kernel_threads(threads)
    a = np.zeros(64 * threads, np.int64)
    _touch(a)
    print(f"threads {threads}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')!r}, "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')!r}")
    for gap in (0.0, 20e-6, 100e-6, 1e-3, 5e-3):
        walls = []
        for _ in range(40):
            if gap:
                end = time.perf_counter() + gap
                while time.perf_counter() < end:
                    pass
            t0 = time.perf_counter()
            _touch(a)
            walls.append(time.perf_counter() - t0)
        print(f"  gap {gap * 1e6:7.0f} us: kernel wall median {statistics.median(walls) * 1e6:8.1f} us, "
              f"max {max(walls) * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
