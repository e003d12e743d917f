"""The lock-free kernel thread count agrees with Numba's public getter, per calling thread."""

from __future__ import annotations

import threading

import numba
import numpy as np

from hetdb.backend.cpu import CpuBackend
from hetdb.backend.cpu.keys import hash_rows, kernel_threads, set_kernel_threads


def test_kernel_threads_match_numba_per_thread():
    hash_rows(np.ones((1, 4), np.int64))  # a parallel kernel brings the threading layer up
    most = numba.config.NUMBA_NUM_THREADS
    seen = {}

    def worker(name, n):
        set_kernel_threads(n)
        seen[name] = (kernel_threads(), numba.get_num_threads())

    threads = [threading.Thread(target=worker, args=("one", 1)),
               threading.Thread(target=worker, args=("many", 10 * most))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"one": (1, 1), "many": (most, most)}
    CpuBackend().set_kernel_threads(None)
    assert kernel_threads() == numba.get_num_threads() == most
