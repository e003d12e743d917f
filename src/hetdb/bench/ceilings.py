"""The machine's ceilings: the fastest a query could possibly move bytes.

Measured before a benchmark so every query's effective throughput can be judged as a fraction of
the relevant ceiling: disk read (O_DIRECT, large blocks, several threads, nothing cached), host memory
copy, and where a GPU is present host->device (pinned and pageable), device->host and device memory
copy (measured by hetdb.backend.gpu.device). Rates are bytes per second.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

MiB = 1 << 20
# A benchmark with a cold run (the disk ceiling judges it) measures on 1 GiB (256 MiB until session 18):
# on the H100 machine's virtual disk a 256 MiB file read in 0.1-0.2 s per block size gave 2.60, 1.59
# and 2.01 GB/s (1, 4, 8 MiB blocks) in one run and 1.79 in another, while a 1 GiB file gave 1.62-1.81
# GB/s in six of seven threads x block settings: the best of three short, noisy reads overstated the
# disk (the cold queries' own reads ran at 1.6-2.3 GB/s). Hot and warm runs keep the quick 256 MiB.
DEFAULT_DISK_TEST_BYTES = 1024 * MiB
QUICK_DISK_TEST_BYTES = 256 * MiB


def disk_test_bytes(modes: list[str], given: int | None = None) -> int:
    """Bytes of the disk ceiling's test file: ``given``, else 1 GiB for a benchmark with a cold run
    and 256 MiB without one."""
    if given:
        return int(given)
    return DEFAULT_DISK_TEST_BYTES if "cold" in modes else QUICK_DISK_TEST_BYTES
BLOCK_SIZES = (1 * MiB, 4 * MiB, 8 * MiB)


def measure_ceilings(directory: str, disk_test_bytes: int = DEFAULT_DISK_TEST_BYTES,
                     threads: int | None = None, gpu: bool = True) -> dict[str, Any]:
    """Measure every ceiling; the disk one on a temporary file in ``directory`` (put it on the disk that
    holds the database). Each entry has ``bytes_per_s`` (or None with ``error``) and how it was measured."""
    threads = threads or min(8, max(2, os.cpu_count() or 1))
    out: dict[str, Any] = {
        "disk_read": _guard(lambda: measure_disk_read(directory, disk_test_bytes, threads)),
        "host_memcpy": _guard(lambda: measure_host_memcpy()),
    }
    out["gpu"] = _guard(measure_gpu) if gpu else {"available": False, "reason": "not asked for"}
    return out


def _guard(fn) -> dict[str, Any]:
    # A ceiling that cannot be measured (odd filesystem, no permission) must not stop the benchmark.
    try:
        return fn()
    except (OSError, RuntimeError, ValueError) as e:
        return {"bytes_per_s": None, "error": f"{type(e).__name__}: {e}"}


def measure_disk_read(directory: str, size: int = DEFAULT_DISK_TEST_BYTES, threads: int = 4,
                      block_sizes: tuple[int, ...] = BLOCK_SIZES) -> dict[str, Any]:
    """Cold sequential read rate of a fresh file in ``directory``: written, fsynced, evicted from the
    page cache, then read with O_DIRECT (buffered when the filesystem refuses O_DIRECT) by ``threads``
    threads in large blocks. The best block size wins."""
    os.makedirs(directory, exist_ok=True)
    size = max(max(block_sizes) * threads, size - size % max(block_sizes))
    fd, path = tempfile.mkstemp(prefix=".hetdb-disk-ceiling-", dir=directory)
    try:
        _write_random_file(fd, size)
        results = {}
        method = "O_DIRECT"
        for block in block_sizes:
            _evict(path)
            try:
                seconds = _timed_parallel_read(path, size, block, threads, direct=True)
            except OSError:
                method = "buffered after posix_fadvise(DONTNEED)"
                _evict(path)
                seconds = _timed_parallel_read(path, size, block, threads, direct=False)
            results[block] = size / seconds
        best = max(results, key=results.get)
        return {"bytes_per_s": results[best], "method": method, "threads": threads,
                "block_bytes": best, "file_bytes": size, "directory": os.path.abspath(directory),
                "by_block_bytes": {str(b): r for b, r in results.items()}}
    finally:
        os.close(fd)
        os.unlink(path)


def _write_random_file(fd: int, size: int) -> None:
    # Random contents so that no layer (filesystem, SSD controller) can compress or dedupe them.
    block = np.random.default_rng(7).integers(0, 256, size=8 * MiB, dtype=np.uint8).tobytes()
    written = 0
    while written < size:
        written += os.write(fd, block[: min(len(block), size - written)])
    os.fsync(fd)


def _evict(path: str) -> None:
    """Drop the file's clean pages from the OS page cache (no root needed for one's own file)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _timed_parallel_read(path: str, size: int, block: int, threads: int, direct: bool) -> float:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECT", 0) if direct else 0)
    if direct and not getattr(os, "O_DIRECT", 0):
        raise OSError("O_DIRECT is not available on this platform")
    fd = os.open(path, flags)
    try:
        nblocks = size // block
        # Threads take interleaved blocks so each keeps a large request in flight at all times.
        def worker(t: int) -> int:
            buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs
            try:
                total = 0
                for b in range(t, nblocks, threads):
                    n = os.preadv(fd, [buf], b * block)
                    if n <= 0:
                        raise OSError(f"short read at block {b} of {path}")
                    total += n
                return total
            finally:
                buf.close()

        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            total = sum(pool.map(worker, range(threads)))
        seconds = time.perf_counter() - start
        if total != nblocks * block:
            raise OSError(f"read {total} bytes of {nblocks * block} from {path}")
        return seconds
    finally:
        os.close(fd)


def measure_host_memcpy(size: int = 256 * MiB, repeats: int = 5, threads: int | None = None) -> dict[str, Any]:
    """Host memory copy rate (bytes copied per second), single-threaded and with ``threads`` threads;
    the better one is ``bytes_per_s``."""
    threads = threads or max(1, min(16, os.cpu_count() or 1))
    src = np.ones(size // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # touch the pages once so page faults are not timed
    single = _best_rate(lambda: np.copyto(dst, src), size, repeats)
    chunks = [(a, b) for a, b in zip(np.linspace(0, src.size, threads + 1, dtype=np.int64)[:-1],
                                      np.linspace(0, src.size, threads + 1, dtype=np.int64)[1:])]
    with ThreadPoolExecutor(threads) as pool:
        def parallel() -> None:
            # NumPy releases the GIL for plain copies, so the chunks copy concurrently.
            list(pool.map(lambda ab: np.copyto(dst[ab[0]:ab[1]], src[ab[0]:ab[1]]), chunks))
        multi = _best_rate(parallel, size, repeats)
    return {"bytes_per_s": max(single, multi), "single_thread_bytes_per_s": single,
            "multi_thread_bytes_per_s": multi, "threads": threads, "array_bytes": size,
            "method": f"numpy.copyto, best of {repeats}"}


def _best_rate(fn, nbytes: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return nbytes / best


def measure_gpu() -> dict[str, Any]:
    """GPU transfer and device-memory ceilings from hetdb.backend.gpu.device, when a GPU is visible."""
    try:
        from hetdb.backend.gpu.device import gpu_available, measure_bandwidth
    except ImportError as e:
        return {"available": False, "reason": f"GPU support not importable: {e}"}
    if not gpu_available():
        return {"available": False, "reason": "no GPU visible"}
    measured = measure_bandwidth()
    return {"available": True, **(measured if isinstance(measured, dict) else {"measured": measured})}


# The GPU module reports rates under its own names; the harness looks them up by meaning.
_GPU_ALIASES = {
    "h2d_pinned": ("h2d_pinned", "host_to_device_pinned", "pinned_h2d", "h2d_pinned_bytes_per_s"),
    "h2d_pageable": ("h2d_pageable", "host_to_device_pageable", "pageable_h2d",
                     "h2d_pageable_bytes_per_s"),
    "d2h": ("d2h", "d2h_pinned", "device_to_host", "device_to_host_pinned", "d2h_bytes_per_s"),
    "d2d": ("d2d", "device_copy", "device_memcpy", "device_to_device", "d2d_bytes_per_s"),
}


def gpu_rate(ceilings: dict[str, Any], what: str) -> float | None:
    """A GPU rate in bytes/s by meaning: 'h2d_pinned', 'h2d_pageable', 'd2h' or 'd2d' (None if unknown).
    Values given in GB/s (keys ending in _gbps or _gb_s) are converted."""
    gpu = ceilings.get("gpu") or {}
    if not gpu.get("available"):
        return None
    for key in _GPU_ALIASES[what]:
        for name, scale in ((key, 1.0), (key + "_gbps", 1e9), (key + "_gb_s", 1e9)):
            value = gpu.get(name)
            if isinstance(value, dict):
                value = value.get("bytes_per_s")
            if isinstance(value, int | float) and value > 0:
                return float(value) * scale
    return None


def named_ceilings(ceilings: dict[str, Any]) -> dict[str, float]:
    """Every known ceiling as {label: bytes/s}, for reports and plots."""
    out = {}
    for label, value in (("disk read", (ceilings.get("disk_read") or {}).get("bytes_per_s")),
                         ("host memcpy", (ceilings.get("host_memcpy") or {}).get("bytes_per_s")),
                         ("H2D pinned", gpu_rate(ceilings, "h2d_pinned")),
                         ("H2D pageable", gpu_rate(ceilings, "h2d_pageable")),
                         ("D2H", gpu_rate(ceilings, "d2h")),
                         ("GPU memory (read+write)", _times2(gpu_rate(ceilings, "d2d")))):
        if value:
            out[label] = float(value)
    return out


def _times2(copy_rate: float | None) -> float | None:
    # A device-to-device copy of N bytes reads N and writes N: memory moves 2N per copy.
    return None if copy_rate is None else 2 * copy_rate


def relevant_ceiling(ceilings: dict[str, Any], device: str, mode: str) -> tuple[str, float | None]:
    """The ceiling a query's bytes had to pass through in ``mode`` on ``device``: (label, bytes/s).

    cold: the disk; warm on the GPU: host->device over PCIe (pinned); hot on the GPU: device memory;
    hot or warm on the CPU: host memory bandwidth.
    """
    named = named_ceilings(ceilings)
    if mode == "cold":
        label = "disk read"
    elif device == "gpu":
        label = "GPU memory (read+write)" if mode == "hot" else "H2D pinned"
    else:
        label = "host memcpy"
    return label, named.get(label)
