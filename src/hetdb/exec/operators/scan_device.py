"""Stored-table scans on the GPU: zone maps decide which row groups are read at all (before any I/O),
then one ``PageStreamer`` per scan delivers the surviving row groups of the needed columns: pages the
connection's ``DevicePageCache`` holds stay in GPU memory, pages in the process-wide pinned host tier
(``HostPageCache``) are copied straight out of it, the rest are read with O_DIRECT (into the host tier
when it has room) and copied asynchronously. Pushed filters run on the device.

The driver runs GPU pipelines with one worker, so morsels (row groups) arrive in the order the
streamer delivers them.

Each page's path is the router's decision (``cache/router.py``; the ``route`` connection option can
force one); per scan the pages and bytes by path and the cache decisions are added to the operator's
statistics (EXPLAIN ANALYZE, ``hetdb bench``).

Hot scans skip per-row-group work: zone-map verdicts are computed once per (table version, pushed
filters), and ``resident_pages`` hands a fused kernel every cached page of a scan at once (one launch
over the whole table) while the device cache still holds them all.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hetdb.column import Batch
from hetdb.exec.columns import filter_batch
from hetdb.exec.operators.base import ExecContext


def scan_router(ctx: ExecContext, state: Any = None) -> Any:
    """The page router of a GPU scan under the connection's ``route`` option; ``state.pass_through``
    (a first scan under gpu_cache_admission='reuse', see ``resident_or_warm``): the host tier only,
    the device cache neither read nor filled (as route='copy')."""
    from hetdb.cache.router import PageRouter

    mode = getattr(ctx.options, "route", "auto")
    if mode == "auto" and getattr(state, "pass_through", False):
        mode = "copy"
    return PageRouter(mode, gpu=True)


# A fused pipeline closes its scan once the kernel has taken every delivery (exec/fusion_run.py): its last
# delivery retired and its host pages unpinned while the GPU runs the last copies and kernels, not after
# the query's last pipeline (H100, SSB SF 20 warm at 4a9eb6f: q4.1 returned 1.6 ms after its last
# pipeline ended). False: at the query's end, with the other scans (A/B).
CLOSE_CONSUMED = True


def close_consumed(state: Any) -> None:
    """Close the device scan ``state`` of a fused pipeline whose kernel has been launched over every
    delivery and which holds none of them (CLOSE_CONSUMED); the query's cleanup finds it closed."""
    if CLOSE_CONSUMED and isinstance(state, DeviceScanState):
        state.close()


class DeviceScanState:
    """The streamer of one scan (created at the first read) and the zone-map verdicts; at ``close``
    the streamer's pages by path go to the scan's statistics (``report``)."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.report: Any = None
        self.verdicts: dict[int, str] = {}
        self.streamer = None
        self.iterator = None
        self.seen = (0,) * 6  # streamer counters already added to the statistics (see _account)
        self.covered: set[int] = set()  # row groups delivered within an earlier morsel's batch
        self.resident_bytes = 0  # device-cache bytes a fused kernel read without streaming
        self.pass_through = False  # stream without reading or filling the device cache (resident_or_warm)
        # columns the fused kernel reads in place from the pinned host tier (cache/router.py
        # zero_copy_columns, chosen by exec/fusion_run.py before the streamer starts)
        self.zero_copy: frozenset[str] = frozenset()
        self.stream_encoded = False  # deliver pages as stored (exec/fusion_stream.py)

    def close(self) -> None:
        if self.streamer is not None:
            self.streamer.close()
            st = self.streamer.stats
            # the router's cost model: pages a GPU scan delivers per second, end to end
            self.streamer.router.observe_gpu(st.pages_read + st.pages_host + st.pages_cached, st.seconds)
            if self.report is not None:
                self.report(self.streamer.route_counts())
            self.streamer = None
            self.iterator = None


# reader (one committed table version) -> {(filters, columns, zone maps on): (verdicts, skipped, row groups)}
_VERDICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# id(scan operator) -> (the operator, a weak reference to the reader, zone maps on, scan_verdicts' answer):
# a cached plan's operators are the same objects every run, and the key below hashes every filter's
# expression tree (~40 calls per scan and query)
_BY_OP: dict[int, tuple] = {}
_BY_OP_ENTRIES = 1024


def scan_verdicts(op: Any, ctx: ExecContext, reader: Any) -> tuple[dict[int, str], int, list[int]]:
    """(zone-map verdict per row group not skipped, row groups skipped, the row groups not skipped)
    of ``op`` over ``reader``'s table version, computed once per (version, pushed filters, columns,
    zone maps on); the dict and list are shared: copy them to change them."""
    zone_maps = bool(ctx.options.zone_maps)
    hit = _BY_OP.get(id(op))
    if hit is not None and hit[0] is op and hit[1]() is reader and hit[2] == zone_maps:
        return hit[3]
    scan = op.scan
    key = (scan.filters, tuple(f.cid for f in scan.fields), scan.column_names, zone_maps)
    try:
        per_reader = _VERDICTS.setdefault(reader, {})
        got = per_reader.get(key)
    except TypeError:  # an unhashable literal among the filters (or a reader without weak references)
        per_reader, got = None, None
    if got is None:
        verdicts: dict[int, str] = {}
        skipped = 0
        for rg in range(reader.num_row_groups):
            v = op.verdict(ctx, reader, rg)
            if v == "skip":
                skipped += 1
            else:
                verdicts[rg] = v
        got = (verdicts, skipped, list(verdicts))
        if per_reader is not None:
            per_reader[key] = got
    if per_reader is not None:
        if len(_BY_OP) >= _BY_OP_ENTRIES:
            _BY_OP.clear()
        _BY_OP[id(op)] = (op, weakref.ref(reader), zone_maps, got)
    return got


def plan_device_scan(op: Any, ctx: ExecContext, state: DeviceScanState) -> list[int]:
    """The row groups to stream: those zone maps cannot rule out (pruned pages are never read)."""
    verdicts, skipped, row_groups = scan_verdicts(op, ctx, state.reader)
    # (shared with every run of the scan: readers replace state.verdicts, never change it in place)
    state.verdicts = verdicts
    if skipped:
        ctx.add(op.op_id, pages_skipped=skipped * len(op.scan.fields))
    return row_groups


@dataclass
class ResidentPages:
    """Every page a fused kernel reads of a scan, in the device cache: ``pages`` is
    (rows, {column name: device Column}) per row group."""

    keys: list
    pages: list[tuple[int, dict[str, Any]]]
    num_rows: int
    nbytes: int
    derived_key: tuple
    touched_at: int | None = None  # the cache's mutation stamp when the pages were last marked used

    def release(self) -> None:
        """Call after the kernel reading the pages was queued on the current stream: an evicted
        page's block goes back to the copy stream that allocated it, and the copy stream now waits
        for the kernel before it reuses anything (as PageStreamer._retire does). Eviction needs no
        pin meanwhile: nothing evicts between the lookup and the launch, which run on this thread."""
        import cupy

        from hetdb.backend.gpu.stream import copy_stream

        done = cupy.cuda.Event(disable_timing=True)
        done.record(cupy.cuda.get_current_stream())
        copy_stream(cupy.cuda.Device().id).wait_event(done)


def resident_pages(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int],
                   names: list[str]) -> ResidentPages | None:
    """Columns ``names`` of ``row_groups`` when the device cache holds every one of them, else None
    (stream them). After the first time, a hit costs no per-page work while no page has left the
    cache (and no per-page LRU update while none has entered it)."""
    if not scan_router(ctx).use_device_tier:
        return None
    cache = ctx.device.cache
    reader = state.reader
    dkey = ("resident", reader.name, reader.version, tuple(names), tuple(row_groups))
    got = cache.derived(dkey)
    if got is None:
        from hetdb.backend.gpu.stream import _column_nbytes
        from hetdb.cache.pages import page_info

        compressed = bool(ctx.options.gpu_compressed_cache)
        keys: list = []

        def each_key() -> Any:  # lazily: the look-up stops at the first page not cached
            for rg in row_groups:
                for name in names:
                    keys.append(page_info(reader, name, rg, compressed).key)
                    yield keys[-1]

        values = cache.peek_many(each_key())
        if values is None:
            return None
        it = iter(values)
        pages = [(reader.row_group_rows(rg), {name: next(it) for name in names}) for rg in row_groups]
        got = ResidentPages(keys, pages, sum(r for r, _ in pages), sum(_column_nbytes(v) for v in values), dkey)
        cache.set_derived(dkey, got)
    note_resident(op, ctx, state, got)
    return got


def note_resident(op: Any, ctx: ExecContext, state: DeviceScanState, got: ResidentPages) -> None:
    """A scan reads the cached pages ``got``: marked used in the device cache (one touch for them all),
    counted in the scan's statistics and routes (GPU-resident)."""
    cache = ctx.device.cache
    got.touched_at = cache.touch_many(got.keys, got.nbytes, got.touched_at)
    ctx.add(op.op_id, rows_in=got.num_rows, rows_out=got.num_rows, pages_cached=len(got.keys))
    from hetdb.cache.router import Route, RouteCounts

    counts = RouteCounts()
    counts.add(Route.GPU_RESIDENT, got.nbytes, pages=len(got.keys))
    ctx.add_routes(op.op_id, counts)
    state.resident_bytes = got.nbytes


def first_scan(ctx: ExecContext, state: DeviceScanState, names: list[str], row_groups: list[int]) -> bool:
    """Whether this is the connection's first scan of these columns of this table version under
    gpu_cache_admission='reuse' (remembered: the next one is not) and none of the pages of
    ``row_groups`` it reads is in the device cache: it passes through (compressed deliveries out of
    the pinned host tier, nothing admitted), whether or not it fits in the cache. Until session 14
    only a scan that fit did; one that did not streamed into the cache by benefit on its first run,
    admitting pages into the free room one by one (a copy on the device and a put per page) for a
    connection that may never read them again: SSB SF 20 warm at a 10% budget on the H100, q1.1
    45.3 ms and q4.1 90.5 ms against 18.5 and 47.6 ms passing through with the whole budget."""
    return _first_scan(ctx, state.reader, names, row_groups, remember=True)


def _first_scan(ctx: ExecContext, reader: Any, names: list[str], row_groups: list[int],
                remember: bool) -> bool:
    """``first_scan``; ``remember=False``: asks without marking the columns scanned (an early
    scan's guess of what the scan will do, exec/early_scan.py).

    A scan that passes through reads no page from the device cache: one whose columns are partly
    there already (another query's scan of the same table filled them: SSB q4.1 after q2.1 shares
    four of its six lineorder columns) would copy those again, so it fills instead, copying only
    the pages missing (H100, SSB SF 1 at 320 MiB: q4.1's first run moved 58.5 MB passing through
    where 14.8 MB were missing). The same rule is replayed by cache/replay.py."""
    if getattr(ctx.options, "gpu_cache_admission", "reuse") != "reuse":
        return False
    if not scan_router(ctx).use_device_tier or ctx.device.host_tier(ctx.options) is None:
        return False
    seen = getattr(ctx.device, "scanned_columns", None)
    if seen is None:
        return False
    key = (reader.name, reader.version)
    got = seen.get(key, set())
    if got.issuperset(names):
        return False
    if remember:
        seen.setdefault(key, set()).update(names)
    return not any_cached(ctx.device.cache, reader, names, row_groups)


def any_cached(cache: Any, reader: Any, names: list[str], row_groups: list[int]) -> bool:
    """Whether the device cache holds a page of ``names`` in ``row_groups`` (stops at the first). A
    column of which the cache holds no page costs no look-up (``columns_cached``): a warm scan on a
    connection that caches only other tables' pages asks nothing page by page."""
    if not len(cache):
        return False
    from hetdb.cache.base import PageKey

    held = cache.columns_cached(reader.name, reader.version) if hasattr(cache, "columns_cached") else None
    if held is not None:
        names = [name for name in names if name in held]
    return any(PageKey(reader.name, reader.version, name, rg) in cache for name in names for rg in row_groups)


def warm_fill(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int],
              names: list[str]) -> Any | None:
    """Warm scans: copy columns ``names`` of ``row_groups`` from the pinned host tier into the device
    cache in one go (``PageStreamer.fill_cache``), so ``resident_pages`` then finds them all and a
    fused kernel runs one launch over them. Returns the filling streamer, to ``close`` once the
    kernel reading the pages has been queued (it holds the host-tier pins until the copies are
    done); None when the pages are not all in the host tier or do not fit in the device cache."""
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.cache.pages import scan_device_bytes

    router = scan_router(ctx)
    host = ctx.device.host_tier(ctx.options)
    if host is None or not row_groups or not router.use_device_tier:
        return None
    cache = ctx.device.cache
    decoded = decoded_columns(ctx, state.reader)
    if scan_device_bytes(state.reader, names, ctx.options.gpu_compressed_cache, decoded) \
            > cache.capacity_bytes - cache.pinned_bytes():
        # the scan cannot fit in the cache (fill_cache would refuse it): no streamer is made and
        # closed for nothing (closing one waits for the copy stream, stalling the query)
        return None
    streamer = PageStreamer(state.reader, names, row_groups, budget=ctx.device.budget,
                            cache=ctx.device.cache, host_cache=host, router=router,
                            compressed=ctx.options.gpu_compressed_cache, decoded=decoded)
    try:
        filled = streamer.fill_cache()
    except BaseException:
        streamer.close()
        raise
    ctx.add_routes(op.op_id, streamer.route_counts())
    st = streamer.stats
    if st.pages_host:
        ctx.add(op.op_id, pages_read=st.pages_host, bytes_host_to_device=st.bytes_h2d)
        ctx.device.count_host_tier(pages=st.pages_host, nbytes=st.bytes_host)
    if not filled:
        streamer.close()
        return None
    return streamer


# A scan passing through (``state.pass_through``: nothing admitted to the device cache) with pages kept
# compressed delivers them as stored, the fused kernel decoding them, even the columns the device cache
# keeps decoded (exec/device_placement.py: that choice is for the pages the cache holds, read again and
# again). Decoded on arrival, a warm scan's deliveries held ~3.5x the bytes (so an early scan under a
# budget primed less of the scan, and its later copies waited for the consumer), each cost a decode
# launch of host work, and their decode kernels held up the dimension pipelines' small kernels (H100,
# SSB SF 20 warm, s23 b/: q3.3 at 25% 20.1 ms, its link idle 3.1 ms, against 16.4 at 10%, where the
# placement kept nothing decoded). Same process, all 13 queries alternating, 4 rounds (s23 d/): geomean
# 17.43 against 17.63 ms at 25%, 17.41 against 17.96 at 50%, 17.52 both at 10% (q3.1 16.8 against 15.9
# at 25%: its kernels over stored pages cost more). False: those columns decoded on arrival (A/B).
PASS_PAGED = True


def streamer_args(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int],
                  shared: Any = None) -> tuple[tuple, dict[str, Any]]:
    """The ``PageStreamer`` arguments of ``op``'s scan in the state ``state`` is in (positional,
    keyword): what ``_start`` makes, and what an early scan must have made to be taken over."""
    columns = list(dict.fromkeys(op.scan.column_names))
    return (state.reader, columns, list(row_groups)), dict(
        budget=ctx.device.budget, cache=ctx.device.cache, host_cache=ctx.device.host_tier(ctx.options),
        compressed=ctx.options.gpu_compressed_cache or state.stream_encoded, router=scan_router(ctx, state),
        batch_bytes=getattr(ctx.options, "gpu_batch_bytes", 0), shared=shared,
        overlap=getattr(ctx.options, "gpu_delivery_overlap", False), zero_copy=state.zero_copy,
        neighbours=getattr(ctx.options, "gpu_copy_neighbours", True),
        decoded=frozenset() if PASS_PAGED and state.pass_through else decoded_columns(ctx, state.reader))


def decoded_columns(ctx: ExecContext, reader: Any) -> frozenset[str]:
    """The columns of ``reader``'s table whose pages the device cache keeps decoded though pages are
    kept compressed (exec/device_placement.py); empty unless ``gpu_compressed_cache`` is on."""
    if not ctx.options.gpu_compressed_cache:
        return frozenset()
    return ctx.decoded_columns.get(reader.name, frozenset())


def _start(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int], shared: Any = None) -> None:
    from hetdb.backend.gpu.stream import PageStreamer
    from hetdb.exec.early_scan import take_early

    args, kwargs = streamer_args(op, ctx, state, row_groups, shared)
    state.report = lambda counts: ctx.add_routes(op.op_id, counts)
    early = take_early(ctx, op, args, kwargs)  # (started before the pipelines ahead of this one)
    if early is not None:
        state.streamer, state.iterator = early
        return
    state.streamer = PageStreamer(*args, **kwargs)
    if state.resident_bytes:  # (the rest of a scan whose cached row groups run as one launch beside it)
        from hetdb.exec import resident_split

        state.streamer.ramp_steps = resident_split.STREAM_RAMP
    state.iterator = state.streamer.deliveries()


def read_device_scan(op: Any, ctx: ExecContext, rg: int, state: DeviceScanState,
                     apply_filters: bool = True) -> list[Batch]:
    """Row group ``rg`` on the device; pushed filters applied unless a fused kernel evaluates them.

    The streamer may deliver several consecutive row groups at once (``gpu_batch_bytes``; one Batch
    spanning them, or one per row group when pages stay compressed): the read of the first returns
    them, the reads of the others (the next morsels: one worker takes a GPU pipeline's morsels in
    order) return nothing."""
    if rg in state.covered:  # (first: most morsels of a batched scan end here)
        state.covered.discard(rg)
        return []
    from hetdb.exec.operators.scan import conjunction, split_batches

    if state.iterator is None:
        _start(op, ctx, state, sorted(state.verdicts))
    got, parts = next(state.iterator)
    if got[0] != rg:
        raise AssertionError(f"device scan of {op.scan.table} expected row group {rg}, streamer gave {got[0]}")
    state.covered.update(got[1:])
    _account(op, ctx, state)
    scan = op.scan
    pred = conjunction(scan.filters) if apply_filters else None
    if pred is None and getattr(parts, "layout", None) is not None and (
            not ctx.batch_rows or int(parts.layout.rows.max()) <= ctx.batch_rows):
        # a paged delivery handed out lazily (backend/gpu/paged_parts.py): under the scan's column ids,
        # its Batches made only if its consumer asks for them (a fused kernel reads its layout)
        ctx.add(op.op_id, rows_in=parts.num_rows, rows_out=parts.num_rows)
        return parts.keyed(_keys(scan)) if parts.num_rows else []
    # the row groups of each Batch: one each in a paged delivery, else all of them in the one
    spans = [(r,) for r in got] if len(parts) > 1 else [got]
    out: list[Batch] = []
    for batch, span in zip(parts, spans):
        b = Batch({f.cid: batch.columns[name] for f, name in zip(scan.fields, scan.column_names)}, batch.num_rows)
        if pred is not None and any(state.verdicts.get(r) != "all" for r in span):
            b = filter_batch(ctx.backend, b, ctx.evaluator.predicate(pred, b))
        ctx.add(op.op_id, rows_in=batch.num_rows, rows_out=b.num_rows)
        if b.num_rows:
            out.extend(split_batches(ctx, b))
    return out


def _keys(scan: Any) -> list[tuple[int, str]]:
    """(column id, stored column name) of a scan's fields."""
    return [(f.cid, name) for f, name in zip(scan.fields, scan.column_names)]


def shared_device_scan(op: Any, ctx: ExecContext, state: DeviceScanState, shared: Any,
                       queued: Any = None) -> Iterator[list[Batch]]:
    """The deliveries of a scan whose row groups CPU workers take too (``cache.coscan.SharedScan``,
    exec/coprocess.py): the streamer claims each row group before it schedules it; yields each
    delivery's Batches (pushed filters not applied: the fused kernel evaluates them). ``queued``:
    called once the consumer has had every delivery of the GPU's share (its kernels are queued),
    before the streamer's end waits for the share's copies."""
    _start(op, ctx, state, list(shared.row_groups), shared)
    scan = op.scan
    while True:
        for rgs, parts in state.iterator:
            shared.delivered(len(rgs))
            _account(op, ctx, state)
            out = []
            for b in parts:
                out.append(Batch({f.cid: b.columns[name] for f, name in zip(scan.fields, scan.column_names)},
                                 b.num_rows))
                ctx.add(op.op_id, rows_in=b.num_rows, rows_out=b.num_rows)
            yield out
            if queued is not None and shared.share_delivered():
                # the consumer has queued the kernel of the share's last delivery: the CPU workers
                # start now (the streamer's end waits for its copies: the feeder's host work is done)
                queued()
                queued = None
        if queued is not None:
            queued()
            queued = None
        # the row groups reserved for the CPU workers that none of them claimed (SharedScan.reserve):
        # the GPU's now, streamed on their own after its share. Not before the link has moved that
        # share: the host hands the deliveries out far ahead of their copies (it queued q1.1's last
        # kernel at 8.5 ms of 16 on the H100), and workers claim until then
        if shared.reserved and shared.remaining() and state.streamer is not None:
            state.streamer.wait_for_copies()
        rest = shared.take_rest()
        if not rest:
            return
        _restart(op, ctx, state, rest)


def _restart(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int]) -> None:
    """A new streamer over ``row_groups`` of the scan of ``state`` (its first one is done: its
    statistics are added and it is closed as ``DeviceScanState.close`` closes it)."""
    from hetdb.backend.gpu.stream import PageStreamer

    _account(op, ctx, state)
    old, report = state.streamer, state.report
    state.streamer = None
    if old is not None:
        old.close()
        if report is not None:
            report(old.route_counts())
    args, kwargs = streamer_args(op, ctx, state, row_groups, None)
    state.streamer = PageStreamer(*args, **kwargs)
    state.seen = (0,) * 6
    state.iterator = state.streamer.deliveries()


def _account(op: Any, ctx: ExecContext, state: DeviceScanState) -> None:
    st = state.streamer.stats
    now = (st.pages_read, st.bytes_read, st.pages_cached, st.bytes_h2d, st.pages_host, st.bytes_host)
    d = [a - b for a, b in zip(now, state.seen)]
    state.seen = now
    # On the GPU a page is "read" when it is brought to the device, from storage or from the pinned
    # host tier; bytes_read counts storage bytes only, so a page served by the host tier shows as a
    # page read without bytes read (the connection's DeviceResources counts them apart too).
    ctx.add(op.op_id, pages_read=d[0] + d[4], bytes_read=d[1], pages_cached=d[2], bytes_host_to_device=d[3])
    ctx.device.count_host_tier(pages=d[4], nbytes=d[5])


def resident_or_warm(op: Any, ctx: ExecContext, state: DeviceScanState, row_groups: list[int],
                     names: list[str], warm: bool = True) -> tuple[Any, Any] | None:
    """Every page of columns ``names`` of ``row_groups`` in the device cache, for one launch over them:
    ``resident_pages`` as they are (hot), or after ``warm_fill`` copied them back to back from the
    pinned host tier (warm; no per-row-group step). Returns (resident pages, the filling streamer or
    None: close it once the kernel reading the pages is queued); None when neither works (nothing is
    left open then). ``warm=False``: resident pages only (co-processing forced on: the pages the GPU
    does not hold are streamed, and CPU workers take row groups from the back; a first scan passes
    through as it does with ``warm``: forced on, it streamed page by page into the device cache
    before, and the H100 measured its GPU side at 1.5-3 ms a row group, the GPU alone 0.17).

    Under gpu_cache_admission='reuse' (the default) the first scan of these columns in the
    connection neither fills nor streams into the device cache (``state.pass_through``): a one-off
    scan of pages in the host tier is fastest as compressed deliveries decoded inside the kernel,
    and filling decodes every page into the cache one by one (SSB SF 10 warm on the H100: q1.1 16.0
    vs 24.6 ms, q4.1 40.0 vs 71.1 ms). The second scan fills, the later ones are hot."""
    fill = None
    resident = resident_pages(op, ctx, state, row_groups, names)
    if resident is None and first_scan(ctx, state, names, row_groups):
        state.pass_through = True
        return None
    if resident is None and warm:
        fill = warm_fill(op, ctx, state, row_groups, names)
        if fill is not None:
            resident = resident_pages(op, ctx, state, row_groups, names)
    if resident is None:
        if fill is not None:
            fill.close()
        return None
    return resident, fill
