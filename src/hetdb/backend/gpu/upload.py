"""Small host->device uploads that do not wait behind a scan's queued copies.

The copy engine serves host->device copies in the order they were queued, whatever stream queued
them: a dimension scan's copies issued after an early fact scan's primed ones ended 14 ms late (H100,
SSB SF 20, exec/early_scan.py). A warm scan keeps many milliseconds of copies queued ahead of its
consumer (the early fact scan primes its deliveries while the dimension pipelines run; batched
deliveries go one ahead), and the small uploads made meanwhile queue behind all of them: a dense join
table or compacted group keys made on the host (codegen/dense_tables.py, groups.py), a paged
delivery's page table. What reads them then waits until the queue has drained (H100, SSB SF 20 warm,
s14: q2.1's fact pipeline took 19.6 ms with the small dimension builds made on the host, 12.5 ms with
them made on the device, which uploads nothing; q4.1's link sat idle 10 ms with them on the host).

So uploads of at most UPLOAD_MAX bytes are made by the SMs instead: the arrays are staged together in
pinned memory, and a kernel (kernels/upload.cu) on the current stream loads the staging in place over
the link (pinned memory is mapped into the device's address space under unified addressing) and
stores it in a device buffer. Its loads share the link with the copy engine's reads instead of
queueing behind them (H100: a 256 KiB upload behind 1 GiB of queued copies took 0.08 ms, as a copy
19.4 ms; scripts/copy_queue_probe.py). The staging is kept until an event after the kernel has passed.
Only while a scan's copies are in flight (``mode`` "auto": the streamer notes each delivery's copies,
``note_copies``); otherwise uploads are copies as before.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np

# bytes uploaded by the kernel at most (a dense join table of HOST_BUILD_SLOTS slots and its index
# arrays fit); larger uploads are copies: over an idle link the copy engine moves them faster than the
# SMs' loads do
UPLOAD_MAX = 8 << 20
_THREADS = 256
_MAX_BLOCKS = 1024

# "auto": by the kernel while host->device copies a scan queued are still in flight (``note_copies``),
# else as copies (over an idle link the copy engine serves them at once, and the H100's SSB SF 1 warm
# queries, whose copies are done within 2 ms, ran 0.4-0.9 ms slower with every upload a kernel);
# "on": always the kernel; "off": always copies (A/B)
mode = "auto"

_inflight: deque = deque()  # (event after the upload kernel, its pinned staging)
_lock = threading.Lock()
_queued: Any = None  # the event after the latest host->device copies a scan queued (note_copies)


def note_copies(event: Any) -> None:
    """A scan queued host->device copies on the copy engine, done when ``event`` has passed (the copy
    engine serves copies in the order they were queued: the latest one done, all are)."""
    global _queued
    _queued = event


def by_kernel(nbytes: int) -> bool:
    """Whether an upload of ``nbytes`` goes as the kernel (see ``mode``)."""
    if mode == "off" or nbytes > UPLOAD_MAX:
        return False
    if mode == "on":
        return True
    queued = _queued
    return queued is not None and not queued.done


def to_device(arrays: list[Any]) -> list[Any]:
    """Host arrays on the device: views of one device buffer, each at an 8-byte aligned offset, with
    its dtype and length (ordered on the current stream; see the module docstring)."""
    import cupy

    arrays = [np.ascontiguousarray(a) for a in arrays]
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-int(a.nbytes) // 8) * 8
    total = max(total, 8)
    if by_kernel(total):
        from hetdb.backend.gpu.memory import pinned_empty

        staging = pinned_empty(total, np.uint8)
        for a, off in zip(arrays, offsets):
            staging[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
        dev = upload_pinned(staging)
    else:
        host = np.zeros(total, dtype=np.uint8)
        for a, off in zip(arrays, offsets):
            host[off:off + a.nbytes] = a.reshape(-1).view(np.uint8)
        dev = cupy.asarray(host)
    return [dev[off:off + a.nbytes].view(a.dtype) for a, off in zip(arrays, offsets)]


def upload_pinned(staging: np.ndarray, stream: Any = None) -> Any:
    """A device copy (uint8, same bytes) of ``staging``, an array in pinned host memory, queued on
    ``stream`` (None: the current stream): by the upload kernel where ``by_kernel`` says so and it is a
    multiple of 8 bytes and 16-byte aligned (pinned pool blocks are), else a copy. ``staging`` may be reused at once: the
    kernel's reads are waited for before its memory goes back to the pool."""
    import cupy

    nbytes = int(staging.nbytes)
    stream = stream or cupy.cuda.get_current_stream()
    with stream:
        dev = cupy.empty(max(nbytes, 8), dtype=cupy.uint8)
        if nbytes == 0:
            return dev[:0]
        if not by_kernel(nbytes) or nbytes % 8 or staging.ctypes.data % 16 or dev.data.ptr % 16:
            dev[:nbytes].set(staging.reshape(-1).view(np.uint8), stream=stream)
            event = cupy.cuda.Event(disable_timing=True)
            event.record(stream)
        else:
            from hetdb.backend.gpu.compile import get_module, launch

            words = nbytes // 8
            fn = get_module("upload.cu").function("upload_words")
            launch(fn, max(1, min(_MAX_BLOCKS, -(-(words // 2) // _THREADS))), _THREADS,
                   (np.uint64(staging.ctypes.data), dev, np.int64(words)))
            event = cupy.cuda.Event(disable_timing=True)
            event.record(stream)
    _keep(event, staging)
    return dev[:nbytes]


def _keep(event: Any, staging: np.ndarray) -> None:
    """Hold ``staging`` until ``event`` has passed; drop what earlier uploads held and no longer need."""
    with _lock:
        while _inflight and _inflight[0][0].done:
            _inflight.popleft()
        _inflight.append((event, staging))
