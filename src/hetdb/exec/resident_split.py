"""Hot GPU scans under a memory budget: one launch over the row groups the device cache holds, the
rest streamed.

When a scan does not fit in the device cache (``gpu_memory_limit`` smaller than its pages), the cache
holds part of it. Streamed row group by row group in deliveries of ``gpu_batch_bytes``, the resident
row groups rode along in the deliveries of the others: one fused-kernel launch, one page table and
one delivery's host work per ~64 MB of the scan, resident or not (H100, SSB SF 20 at 10%, hot q2.1:
17 deliveries of 8.4M rows, 11 of them copying nothing, ~0.75 ms of host work each, and the copy
stream idle 8.4 of 15 ms). Here the row groups whose needed pages are all cached run first, as one
launch through one page table (kept in the cache's derived objects while no page comes or goes, as
the whole-scan launch's is), and only the others are streamed; their copies, on the copy stream,
overlap that launch.

The resident launch runs on a stream of its own (``launch_stream``): on the consumer's stream, the
kernels over the streamed deliveries would queue behind it, and so would the copy stream, which waits
for the consumer's kernel over a delivery before it reuses the delivery's memory. The consumer's
stream waits for it once the streamed part is queued, before the aggregation state is read. It reads pages the
streamed part may evict (admitting its own pages, or making room for its deliveries). An evicted
page's memory goes back to the copy stream that allocated it, so the copy stream must not reuse it
before the launch has run: the first eviction makes the copy stream wait for the launch
(``DevicePageCache.guard_evictions``); while nothing is evicted (the steady state of a hot query whose
cached part stays) the copies do not wait for it.

The connection option ``gpu_resident_split`` (default on) switches this off for A/B measurements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hetdb.exec.operators.base import ExecContext


@dataclass
class ResidentSplit:
    """``resident`` (scan_device.ResidentPages) over ``row_groups``, the scan's row groups whose pages
    are all cached; ``rest`` the others (to stream), in scan order; ``stamp`` the cache's mutation
    stamp it was made at (None: no row group resident)."""

    resident: Any
    row_groups: list[int]
    rest: list[int]
    stamp: int


def split_resident(cache: Any, reader: Any, names: list[str], row_groups: list[int], compressed: bool) -> ResidentSplit:
    """The split of ``row_groups`` of ``reader``'s columns ``names`` by whether ``cache`` holds every
    page of a row group (no statistics, no access counted)."""
    from hetdb.backend.gpu.stream_pages import _column_nbytes
    from hetdb.cache.pages import page_info
    from hetdb.exec.operators.scan_device import ResidentPages

    keys: list = []
    pages: list = []
    held: list[int] = []
    rest: list[int] = []
    nbytes = 0
    stamp = cache.mutations
    for rg in row_groups:
        rg_keys = [page_info(reader, name, rg, compressed).key for name in names]
        values = cache.peek_many(rg_keys)
        if values is None:
            rest.append(rg)
            continue
        keys.extend(rg_keys)
        pages.append((reader.row_group_rows(rg), dict(zip(names, values))))
        nbytes += sum(_column_nbytes(v) for v in values)
        held.append(rg)
    if not held:
        return ResidentSplit(None, [], list(row_groups), stamp)
    # (its own kind of key: the page table made for it, on the launch's stream, is not the whole-scan
    # path's, launched on the consumer's)
    dkey = ("resident-part", reader.name, reader.version, tuple(names), tuple(held))
    resident = ResidentPages(keys, pages, sum(r for r, _ in pages), nbytes, dkey)
    return ResidentSplit(resident, held, rest, stamp)


def resident_split(op: Any, ctx: ExecContext, state: Any, row_groups: list[int], names: list[str]) -> ResidentSplit | None:
    """The cached row groups of a scan that does not fit in the device cache (see the module
    docstring), their pages marked used; None when it does not apply (option off, the scan passes
    through or may not use the device tier, no row group or every row group cached: the whole-scan
    path's case)."""
    if not getattr(ctx.options, "gpu_resident_split", True) or getattr(state, "pass_through", False):
        return None
    from hetdb.exec.operators.scan_device import scan_router

    if ctx.device is None or not scan_router(ctx).use_device_tier:
        return None
    cache = ctx.device.cache
    if not len(cache):
        return None
    reader = state.reader
    key = ("resident-split", reader.name, reader.version, tuple(names), tuple(row_groups))
    got = cache.derived(key)
    if got is None or got.stamp != cache.mutations:
        got = split_resident(cache, reader, names, row_groups, bool(ctx.options.gpu_compressed_cache))
        cache.set_derived(key, got)
    if got.resident is None or not got.rest:
        return None
    resident = got.resident
    resident.touched_at = cache.touch_many(resident.keys, resident.nbytes, resident.touched_at)
    ctx.add(op.op_id, rows_in=resident.num_rows, rows_out=resident.num_rows, pages_cached=len(resident.keys))
    from hetdb.cache.router import Route, RouteCounts

    counts = RouteCounts()
    counts.add(Route.GPU_RESIDENT, resident.nbytes, pages=len(resident.keys))
    ctx.add_routes(op.op_id, counts)
    state.resident_bytes = resident.nbytes
    return got


# Ramp steps of the streamed part's deliveries (backend/gpu/stream_batch.py ``ramp_steps``; None: as any
# scan, 3). The launch over cached pages keeps all of the GPU for itself while it runs (its blocks loop
# over every tile), so the deliveries' kernels run after it, and the copy stream may reuse a
# delivery's memory only after its kernel: the link moved only the first deliveries meanwhile, and
# ramped ones were short (H100 checkpoint, SSB SF 20 hot q3.1 at 10%: 50 MB queued, the link then idle
# 2.4 ms until the launch had run).
STREAM_RAMP: int | None = 0
_STREAMS: dict[int, Any] = {}


def launch_stream() -> Any:
    """The stream the launch over cached pages runs on (one per device, made on first use), after
    what the consumer's stream queued so far (the join tables it probes): apart from the consumer's
    stream, whose kernels over the streamed deliveries must not queue behind it, since each
    delivery's memory goes back to the copy stream only after the kernel that read it (the copy
    stream then waits for the consumer's stream: behind this launch, the link would idle for it)."""
    import cupy

    device = cupy.cuda.Device().id
    stream = _STREAMS.get(device)
    if stream is None:
        from hetdb.backend.gpu.memory import new_stream

        stream = _STREAMS[device] = new_stream()
    queued = cupy.cuda.Event(disable_timing=True)
    queued.record(cupy.cuda.get_current_stream())
    stream.wait_event(queued)
    return stream


def guard_launch(ctx: ExecContext, stream: Any) -> Any:
    """After the resident launch was queued on ``stream``: the first page the device cache evicts from
    now on makes the copy stream wait for the launch first (the guard is dropped with the query, when
    the launch has long run). Returns the launch's event: the consumer's stream waits for it once the
    streamed part is queued, before anything reads the aggregation state; a query that fails before
    then waits for it at its end (before the state's memory can be used again)."""
    import cupy

    from hetdb.backend.gpu.stream import copy_stream

    done = cupy.cuda.Event(disable_timing=True)
    done.record(stream)
    copy = copy_stream(cupy.cuda.Device().id)
    cache = ctx.device.cache
    token = cache.guard_evictions(lambda: copy.wait_event(done))

    def end() -> None:
        cache.unguard(token)
        done.synchronize()  # (long done, unless the query failed meanwhile)

    ctx.cleanup.append(end)
    return done
