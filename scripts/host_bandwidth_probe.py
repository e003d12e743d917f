"""Host memory bandwidth against the pinned host->device DMA on this machine: what CPU+GPU
co-processing of a warm scan shares (the GPU's copies read the pinned host tier, the CPU workers'
loops read pages kept decoded in host memory).

    python3 scripts/host_bandwidth_probe.py [--mib 4096] [--threads 1,2,4,8,14,16] [--dma-gib 6]

Prints the machine (lscpu's sockets, cores, threads per core, NUMA nodes, caches), then
  read   GB/s of T threads each summing its own slice of one large pageable array (a Numba
         ``nogil`` loop over int32, as a scan loop reads its columns), alone, for each T
  pinned the same over pinned host memory (the host tier's kind), T = the largest
  dma    GB/s of 256 MiB pinned host->device copies queued back to back on one stream, alone
  both   the DMA's GB/s and the T readers' GB/s while both run at once, for each T (the readers
         loop over their slices until the queued copies are done; bytes read / that time)
So: whether T CPU threads reading memory slow the DMA down (the GPU's side of a co-processed scan)
and how much reading they still get beside it, in GB/s of host memory.
"""

from __future__ import annotations

import argparse
import subprocess
import threading
import time

import numpy as np


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "lscpu: not available"
    keep = ("Model name", "Socket(s)", "Core(s) per socket", "Thread(s) per core", "CPU(s)", "NUMA node",
            "L2 cache", "L3 cache", "CPU max MHz")
    lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith(keep)]
    try:
        mem = next(ln for ln in open("/proc/meminfo") if ln.startswith("MemTotal")).strip()
    except OSError:
        mem = ""
    return "; ".join(lines + [mem])


def _summer():
    import numba

    @numba.njit(nogil=True, cache=False)
    def total(a):  # (int32 summed into int64: a scan loop's load, one add per value)
        s = 0
        for i in range(a.shape[0]):
            s += a[i]
        return s

    return total


def read_rate(total, arr: np.ndarray, threads: int, passes: int = 3) -> float:
    """GB/s of ``threads`` threads each summing its slice of ``arr`` ``passes`` times."""
    parts = np.array_split(arr, threads)
    barrier = threading.Barrier(threads + 1)

    def work(part: np.ndarray) -> None:
        barrier.wait()
        for _ in range(passes):
            total(part)

    ts = [threading.Thread(target=work, args=(p,)) for p in parts]
    for t in ts:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    return arr.nbytes * passes / (time.perf_counter() - t0) / 1e9


def dma(copies: int, readers: int, total, arr: np.ndarray | None) -> tuple[float, float]:
    """(DMA GB/s, readers' GB/s) of ``copies`` 256 MiB pinned host->device copies queued on one stream
    while ``readers`` threads loop over their slices of ``arr`` until the copies are done."""
    import cupy

    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    n = 256 << 20
    src = dma.__dict__.get("src")
    if src is None:
        src = dma.src = pinned_empty(n, "uint8")
        src[:] = 1
        dma.dst = cupy.empty(n, dtype=cupy.uint8)
        dma.stream = new_stream()
    dst, stream = dma.dst, dma.stream
    done = threading.Event()
    read = [0] * readers
    parts = np.array_split(arr, readers) if readers else []
    barrier = threading.Barrier(readers + 1)

    def work(i: int, part: np.ndarray) -> None:
        chunks = np.array_split(part, max(1, part.nbytes // (8 << 20)))  # (8 MiB at a time: the end is seen)
        barrier.wait()
        while not done.is_set():
            for c in chunks:
                total(c)
                read[i] += c.nbytes
                if done.is_set():
                    break

    ts = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(parts)]
    for t in ts:
        t.start()
    barrier.wait()
    time.sleep(0.002)  # (the readers running before the copies start)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    rt = cupy.cuda.runtime
    read0 = sum(read)
    t0 = time.perf_counter()
    with stream:
        start.record(stream)
        for _ in range(copies):
            rt.memcpyAsync(dst.data.ptr, src.ctypes.data, n, rt.memcpyHostToDevice, stream.ptr)
        end.record(stream)
    end.synchronize()
    wall = time.perf_counter() - t0
    during = sum(read) - read0  # (what the readers read while the copies ran)
    done.set()
    for t in ts:
        t.join()
    gpu_s = cupy.cuda.get_elapsed_time(start, end) / 1e3
    return copies * n / gpu_s / 1e9, during / wall / 1e9 if readers else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=4096, help="pageable array read by the threads (MiB)")
    ap.add_argument("--threads", default="1,2,4,8,14,16")
    ap.add_argument("--dma-gib", type=float, default=6.0, help="bytes each DMA measurement copies (GiB)")
    ap.add_argument("--no-gpu", action="store_true")
    args = ap.parse_args()
    print(f"machine: {machine()}", flush=True)
    counts = [int(x) for x in args.threads.split(",") if x]
    total = _summer()
    arr = np.ones((args.mib << 20) // 4, dtype=np.int32)  # (written: its pages exist)
    total(arr[:1024])
    for t in counts:
        print(f"read   {t:2d} threads: {read_rate(total, arr, t):6.1f} GB/s (pageable, {args.mib} MiB)", flush=True)
    if args.no_gpu:
        return
    from hetdb.backend.gpu.memory import pinned_empty

    pinned = pinned_empty((min(args.mib, 2048) << 20) // 4, "int32")
    pinned[:] = 1
    t = max(counts)
    print(f"pinned {t:2d} threads: {read_rate(total, pinned, t):6.1f} GB/s (pinned, {pinned.nbytes >> 20} MiB)",
          flush=True)
    copies = max(4, int(args.dma_gib * 4))
    dma(2, 0, total, None)  # (warm-up)
    alone, _ = dma(copies, 0, total, None)
    print(f"dma    alone: {alone:6.1f} GB/s ({copies} x 256 MiB pinned host->device)", flush=True)
    for t in counts:
        rate, read = dma(copies, t, total, arr)
        print(f"both   {t:2d} threads: dma {rate:6.1f} GB/s ({rate / alone:.2f} of alone), readers {read:6.1f} GB/s, "
              f"sum {rate + read:6.1f} GB/s", flush=True)


if __name__ == "__main__":
    main()
