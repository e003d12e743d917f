"""Carrying out a ``DeliveryPlan`` (batch_plan.py) on the GPU: one device allocation, the host->device
copies of every page section of the delivery (coalesced where pages lie back to back), and at most
one launch of each batched kernel (kernels/batch_decode.cu) for all the delivery's columns. The
caller queues it all on the copy stream; nothing here waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hetdb.backend.gpu.batch_plan import DeliveryPlan, Launch, coalesce, coalesce_linked, source_pieces
from hetdb.backend.gpu.compile import check_launches_enabled, get_module, synchronize
from hetdb.backend.gpu.copies import queue_copies
from hetdb.backend.gpu.memory import pinned_empty

_H2D = 1  # cudaMemcpyHostToDevice
_THREADS = 256
_TILE = 256 * 4      # BATCH_DECODE_THREADS * BATCH_DECODE_ITEMS
_MAX_GRID_X = 4096   # blocks per page (kernels loop grid-stride past it)
# A plan's last copies are kept with it and reused for the same sources (``_plan_copies``). False: made
# again every delivery (A/B: warm_timeline switch keepcopies=0).
KEEP_COPIES = True


def _launch(fn: Any, launch: Launch, per_block: int, base: int, extra: int = 0) -> None:
    gx = max(1, min(_MAX_GRID_X, -(-(launch.most + extra) // per_block)))
    fn((gx, launch.pages), (_THREADS,), (np.uint64(base), np.uint64(base + 8 * launch.start)))
    if check_launches_enabled():
        synchronize()


def run_delivery(plan: DeliveryPlan, sources: Sequence[Sequence[Sequence[tuple[int, int]]]],
                 dtypes: Sequence[np.dtype | None], stream: Any,
                 staged: list[np.ndarray] | None = None, launch_stream: Any = None,
                 regions: Sequence[Sequence[Sequence[Any] | None]] | None = None,
                 views: bool = True) -> tuple[Any, list[dict[str, Any]] | None]:
    """Queue ``plan`` on ``stream`` (the current stream too: the caller enters it). ``sources[c][p]``:
    the pinned host (address, bytes) runs holding page ``p`` of column ``c`` in order; ``dtypes[c]``:
    the value dtype of a fixed-width column (None for plain strings). Returns the device buffer (keep
    it until the consumer is done) and per column its device arrays by name (data, validity,
    offsets, chars, encoded; only those it has) — for a paged plan per column a list of those, one
    per page. At most three launches, whatever the columns. ``staged``: where the pinned copy of
    the plan's descriptor goes (the caller keeps it until the copies have run); None: it is copied
    from pageable memory, which the driver may stage by waiting for the stream's earlier work.
    ``launch_stream``: the kernels go there, after an event of the copies (the consumer's stream:
    the copy stream then moves the next delivery while this one is decoded); None: on ``stream``.
    ``regions[c][p]``: per run of ``sources[c][p]`` the host memory region (allocation) it lies in,
    or None: the copies of the plan's linked pages (``DeliveryPlan.linked``) that lie in one region
    as far apart as the plan put them go as one copy. ``views=False``: no arrays (None in their place):
    the caller makes them later, if at all (``delivery_arrays``)."""
    import cupy

    rt = cupy.cuda.runtime
    buf = cupy.empty(max(plan.nbytes, 1), dtype=cupy.uint8)
    base = int(buf.data.ptr)
    desc = plan.desc
    if desc.size:
        if staged is not None:
            pinned = pinned_empty(desc.shape, desc.dtype)
            pinned[...] = desc
            staged.append(pinned)
            desc = pinned
        # (pageable source: the call returns once the bytes are staged, so ``desc`` may go afterwards)
        rt.memcpyAsync(base, desc.ctypes.data, desc.nbytes, _H2D, stream.ptr)
    queue_copies(_plan_copies(plan, sources, regions), base, stream)
    if plan.decode or plan.unpack or plan.rebase:
        module = get_module("batch_decode.cu")
        if launch_stream is not None:
            copied = cupy.cuda.Event(disable_timing=True)
            copied.record(stream)
            launch_stream.wait_event(copied)
        with launch_stream if launch_stream is not None else stream:
            if plan.decode:
                _launch(module.function("decode_pages"), plan.decode, _TILE, base)
            if plan.unpack:
                _launch(module.function("unpack_validity"), plan.unpack, _THREADS, base)
            if plan.rebase:
                _launch(module.function("rebase_offsets"), plan.rebase, _THREADS, base, extra=1)
    return buf, (delivery_arrays(buf, plan, dtypes) if views else None)


def delivery_arrays(buf: Any, plan: DeliveryPlan, dtypes: Sequence[np.dtype | None]) -> list:
    """``run_delivery``'s arrays of ``plan`` in its buffer ``buf``: per column its arrays by name, for a
    paged plan per column a list of those, one per page."""
    if plan.pages:
        return [[_arrays(buf, cplan, dtype) for cplan in col] for col, dtype in zip(plan.pages, dtypes)]
    return [_arrays(buf, cplan, dtype) for cplan, dtype in zip(plan.columns, dtypes)]


def _plan_copies(plan: DeliveryPlan, sources: Sequence[Sequence[Sequence[tuple[int, int]]]],
                 regions: Sequence[Sequence[Sequence[Any] | None]] | None) -> list[tuple[int, int, int]]:
    """The plan's copies from ``sources`` as (source address, buffer offset, bytes), coalesced; the
    last answer is kept with the plan and given again for equal ``sources`` and ``regions`` (a warm
    scan's deliveries copy the same host-tier pages run after run: one comparison, in C, instead of
    a step per copy)."""
    last = plan.last_copies
    if KEEP_COPIES and last is not None and last[0] == sources and last[1] == regions:
        return last[2]
    linked = plan.linked if regions is not None else ()
    if not linked:
        pieces: list[tuple[int, int, int]] = []
        for ci, pi, off, n, dst in plan.copies:
            runs = sources[ci][pi]
            if len(runs) == 1 or off + n <= runs[0][1]:
                pieces.append((runs[0][0] + off, dst, n))
                continue
            for ri, roff, k in source_pieces([ln for _, ln in runs], off, n):
                pieces.append((runs[ri][0] + roff, dst, k))
                dst += k
        copies = coalesce(pieces)
    else:
        copies = coalesce_linked(_linked_pieces(plan, sources, regions))
    plan.last_copies = (sources, regions, copies)
    return copies


def _linked_pieces(plan: DeliveryPlan, sources: Sequence[Sequence[Sequence[tuple[int, int]]]],
                   regions: Sequence[Sequence[Sequence[Any] | None]]) -> list[tuple[int, int, int, Any, Any]]:
    """The plan's copies as (source address, buffer offset, bytes, tail, head) pieces for
    ``coalesce_linked``: the last piece of a linked copy has its run's region as ``tail``, the first
    piece of the copy after it its run's region as ``head``."""
    pieces: list[tuple[int, int, int, Any, Any]] = []
    append = pieces.append
    linked = plan.linked
    follows = False  # the previous copy is linked to this one
    for i, (ci, pi, off, n, dst) in enumerate(plan.copies):
        runs = sources[ci][pi]
        where = regions[ci][pi]
        link = i in linked
        if len(runs) == 1 or off + n <= runs[0][1]:  # (the page in one run: the usual case)
            region = where[0] if where is not None else None
            append((runs[0][0] + off, dst, n, region if link else None, region if follows else None))
            follows = link
            continue
        parts = source_pieces([ln for _, ln in runs], off, n)
        for j, (ri, roff, k) in enumerate(parts):
            region = where[ri] if where is not None else None
            append((runs[ri][0] + roff, dst, k, region if link and j == len(parts) - 1 else None,
                    region if follows and j == 0 else None))
            dst += k
        follows = link
    return pieces


def _arrays(buf: Any, cplan: Any, dtype: np.dtype | None) -> dict[str, Any]:
    """The device arrays of one ``ColumnPlan`` as views of ``buf`` (``encoded``: the data section as
    stored, uint8)."""
    import cupy

    arrays: dict[str, Any] = {}
    if cplan.data is not None:
        off, ln = cplan.data
        arrays["data"] = buf[off:off + ln].view(dtype)
    if cplan.encoded is not None:
        off, ln = cplan.encoded
        arrays["encoded"] = buf[off:off + ln]
    if cplan.validity is not None:
        off, ln = cplan.validity
        arrays["validity"] = buf[off:off + ln].view(cupy.bool_)
    if cplan.offsets is not None:
        off, ln = cplan.offsets
        arrays["offsets"] = buf[off:off + ln].view(cupy.int64)
        coff, cln = cplan.chars
        arrays["chars"] = buf[coff:coff + cln]
    return arrays
