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

The cached row groups run as one launch on a stream of its own (``ResidentLaunch``; with CHUNK_ROWS,
as launches of about that many rows: one before the first delivery, one after each delivery's kernel,
the rest after the last); the consumer's stream waits for them before the aggregation state is read.
The launch holds every SM while it runs (its blocks loop over every tile), so the deliveries' kernels
wait for it, and the copy stream with them (it reuses a delivery's memory only after the kernel that
read it): the streamed part takes no ramp (STREAM_RAMP), so its first deliveries move much of it
meanwhile. On the consumer's stream (SIDE_STREAM False) the copy stream would wait for each launch
queued before a delivery's kernel.
The launches read pages the streamed part may evict (admitting its own pages, or making room for
its deliveries); they stay referenced until the last launch is queued. An evicted page's memory goes
back to the copy stream that allocated it, so the copy stream must not reuse it before the launches
have run: after the last one, the first eviction makes the copy stream wait for them
(``DevicePageCache.guard_evictions``), as does letting go of pages evicted meanwhile; while nothing
is evicted (the steady state of a hot query whose cached part stays) the copies do not wait.

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
    from hetdb.exec.operators.scan_device import note_resident

    note_resident(op, ctx, state, got.resident)
    return got


# Ramp steps of the streamed part's deliveries (backend/gpu/stream_batch.py ``ramp_steps``; None: as any
# scan, 3): the launches over cached pages keep the GPU busy meanwhile, and short first deliveries
# only add host work (H100 checkpoint, SSB SF 20 hot q3.1 at 10%: the first three of 3, 15 and 34 MB).
STREAM_RAMP: int | None = 0
# Rows per launch over the cached row groups of a scan that streams the others: one launch now, one
# after each delivery's kernel, the rest after the last. 0 (the default): one launch over all of them,
# on a stream of its own. H100 checkpoints (SSB SF 20 hot at 10%, q2.1/q3.1/q4.1 geomean): one launch
# 14.47 ms, launches of 16M rows 16.99 (q3.1 11.2 against 15.4 ms), main's path 36.76.
CHUNK_ROWS = 0
# The launches run on a stream of their own (after the join tables the consumer's stream built): the
# copy stream, which waits for the consumer's stream before it reuses a delivery's memory, then never
# waits for them. False: on the consumer's stream, between the deliveries' kernels (A/B).
SIDE_STREAM = True
_STREAMS: dict[int, Any] = {}


def _chunks(pages: list, rows: int) -> list[list]:
    """``pages`` ((rows, columns) per row group) in consecutive runs of about ``rows`` rows (all in
    one when ``rows`` is 0)."""
    if rows <= 0:
        return [pages] if pages else []
    out: list[list] = []
    run: list = []
    held = 0
    for page in pages:
        if run and held + page[0] > rows:
            out.append(run)
            run, held = [], 0
        run.append(page)
        held += page[0]
    if run:
        out.append(run)
    return out


def launch_split(ctx: ExecContext, fp: Any, state: Any, join_tables: list, split: ResidentSplit,
                 name_of: dict, cids: list, columns: tuple, timer_id: int) -> tuple[int, list[int], Any]:
    """Queue the first launch over ``split``'s cached row groups (page tables kept among the device
    cache's derived objects while no page leaves it); (rows they hold, row groups with a page the
    kernel cannot take, the ``ResidentLaunch`` to step and finish, or None when nothing runs)."""
    from hetdb.errors import UnsupportedError

    cache = ctx.device.cache
    resident = split.resident
    chunk = CHUNK_ROWS
    tkey = ("page-table", resident.derived_key, fp.kernel.name, columns, chunk)
    hit = cache.derived(tkey)
    if hit is None:
        pages = [(rows, {c: cols[name_of[c]] for c in cids}) for rows, cols in resident.pages]
        bad = [i for i, (_, cols) in enumerate(pages) if fp.batch_unfusable_reason(cols) is not None]
        skip = set(bad)
        try:
            tables = [fp.page_table(run) for run in _chunks([p for i, p in enumerate(pages) if i not in skip], chunk)]
        except UnsupportedError:
            tables, bad = [], list(range(len(pages)))  # (stream them row group by row group)
        # (flat: the leak check counts the device copies of the tables it finds among derived objects)
        hit = (*[t for t in tables if t.num_tiles], [split.row_groups[i] for i in bad])
        cache.set_derived(tkey, hit)
    tables, rest = list(hit[:-1]), hit[-1]
    if not tables:
        return 0, rest, None
    launches = ResidentLaunch(ctx, fp, state, list(tables), join_tables, resident, timer_id,
                              side=SIDE_STREAM or chunk <= 0)
    launches.step()
    return sum(t.num_rows for t in tables), rest, launches


class ResidentLaunch:
    """The launches over a split scan's cached row groups (see the module docstring): ``step`` queues
    the next (on a stream of its own, or on the consumer's after the last delivery's kernel), ``finish``
    the rest, and makes the consumer's stream wait for launches on another stream. The row groups'
    pages stay referenced until the last launch is queued; after it, a page the cache evicts makes
    the copy stream (which gets its memory back) wait for the launches, and so does letting go of
    pages evicted meanwhile."""

    def __init__(self, ctx: ExecContext, fp: Any, state: Any, tables: list, join_tables: list, resident: Any,
                 timer_id: int, side: bool) -> None:
        self.ctx, self.fp, self.state, self.pending, self.join_tables = ctx, fp, state, tables, join_tables
        self.resident, self.timer_id, self.side = resident, timer_id, side
        self.generation = ctx.device.cache.generation
        self.done: Any = None  # the event after the last launch
        self.stream: Any = None  # (side: the stream of the launches, after the consumer's work so far)
        # the event after the latest launch, for the query's end: the cleanup holds this list only, not
        # the launches' state (the leak check would count its accumulators, and collect garbage for them)
        self.latest: list = []

    def step(self) -> None:
        """Queue the next launch, if any."""
        if not self.pending:
            return
        import cupy

        from hetdb.exec import fusion_run
        from hetdb.exec.operators.base import Timer

        table = self.pending.pop(0)
        fresh = table.device is None
        if self.side:
            stream = self.stream = self.stream or _launch_stream()
        else:
            stream = cupy.cuda.get_current_stream()
        with Timer(self.ctx, self.timer_id), stream:
            fusion_run._consume_resident(self.fp, self.state, table, self.join_tables)
        if self.done is None:  # (a query failing before the state is read waits for them at its end)
            latest = self.latest
            self.ctx.cleanup.append(lambda: latest[-1].synchronize())
        self.done = cupy.cuda.Event(disable_timing=True)
        self.done.record(stream)
        self.latest[:] = [self.done]
        cache = self.ctx.device.cache
        if fresh and table.device is not None:
            cache.arrays_changed()  # (the kept table now holds its device copy: the cache's bytes grew)
        if not self.pending:
            self._last()

    def finish(self) -> None:
        """Queue the launches left; the consumer's stream then reads the state after them."""
        while self.pending:
            self.step()
        if self.side and self.done is not None:
            import cupy

            cupy.cuda.get_current_stream().wait_event(self.done)
            self.side = False
        self.state = self.fp = self.join_tables = self.stream = None  # (the caller finishes the state)

    def _last(self) -> None:
        import cupy

        from hetdb.backend.gpu.stream import copy_stream

        done = self.done
        copy = copy_stream(cupy.cuda.Device().id)
        cache = self.ctx.device.cache
        if cache.generation != self.generation:
            copy.wait_event(done)  # (pages evicted meanwhile: their memory goes back as they are let go)
        else:
            token = cache.guard_evictions(lambda: copy.wait_event(done))
            self.ctx.cleanup.append(lambda: cache.unguard(token))
        self.resident = None


def _launch_stream() -> Any:
    """The stream of a single launch over cached pages (CHUNK_ROWS 0; one per device, made on first
    use), after what the consumer's stream queued so far (the join tables it probes)."""
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
