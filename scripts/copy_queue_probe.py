"""Whether small transfers wait behind host->device copies queued on another stream (the copy engine's
queue), and whether an upload made by a kernel (backend/gpu/upload.py) does not.

    PYTHONPATH=src python scripts/copy_queue_probe.py [--queue-mb 1024] [--chunk-mb 64] [--small-kb 256]

For each small operation: its host ms to completion alone, then while ``--queue-mb`` of pinned
host->device copies (``--chunk-mb`` each) are queued on a non-blocking stream A (one stream, then the
same chunks alternating over two streams), with the queue's own ms to drain for scale:

    asarray   cupy.asarray of a pageable NumPy array on the current stream, then its sync
    upload    upload.to_device (the SMs read pinned staging), then the current stream's sync
    pinned-B  a pinned host->device copy on a third stream B, then B's sync
    get       a device->host copy (.get()) of a resident array
    kernel    a small kernel on the current stream, then its sync
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queue-mb", type=int, default=1024)
    ap.add_argument("--chunk-mb", type=int, default=64)
    ap.add_argument("--small-kb", type=int, default=256)
    args = ap.parse_args()
    import cupy

    from hetdb.backend.gpu import upload
    from hetdb.backend.gpu.memory import new_stream, pinned_empty

    qbytes, chunk = args.queue_mb << 20, args.chunk_mb << 20
    host = pinned_empty(qbytes, np.uint8)
    host[:] = 1
    dev = cupy.empty(qbytes, dtype=cupy.uint8)
    streams = [new_stream(), new_stream()]
    other = new_stream()
    small = np.arange((args.small_kb << 10) // 4, dtype=np.int32)
    small_pinned = pinned_empty(small.nbytes, np.uint8)
    small_pinned[:] = small.view(np.uint8)
    small_dev = cupy.asarray(small)
    target = cupy.empty(small.nbytes, dtype=cupy.uint8)
    rt = cupy.cuda.runtime
    cur = cupy.cuda.get_current_stream

    def op_asarray():
        cupy.asarray(small)
        cur().synchronize()

    def op_upload():
        upload.to_device([small])  # (mode "on": the probe's queue is not a scan's, note_copies saw none)
        cur().synchronize()

    upload.mode = "on"

    def op_pinned():
        rt.memcpyAsync(target.data.ptr, small_pinned.ctypes.data, small_pinned.nbytes, 1, other.ptr)
        other.synchronize()

    def op_get():
        small_dev.get()

    def op_kernel():
        (small_dev + 1)
        cur().synchronize()

    ops = [("asarray", op_asarray), ("upload", op_upload), ("pinned-B", op_pinned), ("get", op_get),
           ("kernel", op_kernel)]
    for _, fn in ops:  # compiles, pools
        fn()
    cupy.cuda.Device().synchronize()

    def queue(two: bool) -> cupy.cuda.Event:
        start = cupy.cuda.Event()
        start.record(streams[0])
        if two:
            streams[1].wait_event(start)
        for k, off in enumerate(range(0, qbytes, chunk)):
            s = streams[k % 2] if two else streams[0]
            rt.memcpyAsync(dev.data.ptr + off, host.ctypes.data + off, min(chunk, qbytes - off), 1, s.ptr)
        return start

    def drain(start) -> float:
        ends = []
        for s in streams:
            e = cupy.cuda.Event()
            e.record(s)
            ends.append(e)
        for e in ends:
            e.synchronize()
        return max(cupy.cuda.get_elapsed_time(start, e) for e in ends)

    for name, fn in ops:
        alone = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            alone.append((time.perf_counter() - t) * 1e3)
        line = f"{name:9s} alone {min(alone):7.3f} ms"
        for two in (False, True):
            start = queue(two)
            t = time.perf_counter()
            fn()
            took = (time.perf_counter() - t) * 1e3
            q = drain(start)
            line += f" | queue on {'2 streams' if two else '1 stream '} {took:7.3f} ms (queue drains in {q:6.2f} ms)"
        print(line, flush=True)
    print(f"queue {args.queue_mb} MiB in {args.chunk_mb} MiB copies; small {small.nbytes} B", flush=True)


if __name__ == "__main__":
    main()
