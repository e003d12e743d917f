"""Starting a warm GPU query's fact scan before the pipelines that build its joins.

A star query on the GPU runs its dimension pipelines first (scan, filter, hash build), then the fact
pipeline, whose scan streams the fact table's pages out of the pinned host tier. On a fresh
connection the dimension pipelines take milliseconds of host work and small copies (SSB SF 20 on
the H100 at 8b53d0c: the fact scan's first copy began 6.5 ms into q1.1 and 18 ms into q3.4, whose
fact scan then took 18 ms), and the link sat idle all that time. So when a query starts, the scan of
its largest table is started too: its streamer (exactly the one the fact pipeline would make, on a
copy and decode stream of its own, ``stream_io.early_streams``, so the dimension scans' copies and
decode kernels do not queue behind it) queues its first deliveries at once (``PageStreamer.prime``),
up to EARLY_BUDGET_SHARE of the free device budget and EARLY_MAX_BYTES; the fact pipeline later takes the
streamer over
(``take_early``: same table version, columns, row groups and options, else it is closed and the
pipeline makes its own), and its consumer waits on each delivery only when it takes it.

Started only where the fact scan will stream past the device cache out of the pinned host tier, with
the default warm path: the connection's first scan of those columns (``scan_device.first_scan``'s
pass-through), its first and last row groups' pages in the host tier (a cold scan would make the
dimension pipelines wait for the disk), batched deliveries, co-processing off or "auto" (where the
cost model expects a gain, the early fact scan is the shared scan CPU workers later take row groups
of from the back, and it primes at most the GPU's expected share: exec/coprocess.early_shared_scan),
no zero-copy, route 'auto', a pipeline of the shape that runs fused or compiled (``_streams_whole``).
With ``gpu_stream_encoded`` the fact scan of an aggregation (fused: exec/fusion_stream.py then has its
pipeline read the pages as stored) is made delivering them as stored; a pipeline that does not take
them so (it runs compiled, or its kernel for pages as stored does not compile) closes it and streams as
usual. Option ``gpu_early_scan`` (default on) switches it off for A/B measurements.

Its primed copies fill the link for milliseconds, and the dimension scans' small copies, issued later
by their pipelines, queued behind them (H100, SSB SF 20 at d6b8b72: q1.2's date delivery ended at
15.7 ms instead of 1.7 ms, and each query's first dimension pipeline took 10-19 ms instead of 1-3).
So the dimension pipelines' scans that will stream past the device cache too (``early_dimensions``:
before the fact pipeline, the only scan of their table) start early too, on the process's streams as
their pipelines would, each primed whole (they are small), and their pipelines take them over the
same way: after the fact scan's first delivery (FACT_FIRST: the link moves it while the host makes
the dimension scans; their copies, on the fact scan's stream, DIMS_ON_FACT_STREAMS, wait behind that
one delivery only) and before the rest of the fact's primed deliveries. Option ``gpu_early_dims`` (default on) switches that part off for A/B
measurements.

Small uploads the pipelines make while the fact's primed copies are queued (dense tables built on the
host, page tables) do not queue behind them: backend/gpu/upload.py.

A cold query (the fact scan's first pages not in the host tier: the disk is in the path) starts its
scans' reads instead (COLD_READ_AHEAD): the dimension scans' (each whole, submitted first, so the
disk serves them before the fact's large reads and their pipelines do not wait behind those) and
then the fact scan's first READ_AHEAD_DEPTH delivery groups (``PageStreamer.read_ahead``); nothing
is copied or held on the device until the pipelines take the scans over as above. The disk then
works while the dimension pipelines and the fact pipeline's set-up run: on main d6d702f (H100, SSB
SF 20 cold) it sat idle 20-25 ms of q2.x-q4.x before the fact scan's first read (e.g. q2.1 10.9-23.8
ms). Co-processing "off" only (a shared scan's claims are the co-processing planner's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.scan import TableScan

# an early scan's queued deliveries hold at most this share of the free device budget, and at most
# EARLY_MAX_BYTES (one its pipeline does not take over is closed, which waits for its copies). 0.6 (0.25
# until session 17): under a 10% budget of SSB SF 20 a quarter primed one 34 MB delivery, and the link
# then idled through the dimension pipelines (H100 checkpoint, warm q3.1 25.1 ms against 29.1). 8 GiB:
# the whole fact scan of SSB SF 20's q4.x decoded (4 GiB left q4.1's last delivery to its consumer,
# which asks for it only after the dimension pipelines and its own planning: H100, s14). 0.9 since session
# 21: under a budget a share of 0.6 stopped q4.1's priming early, and its later deliveries were queued only
# as the consumer freed earlier ones (H100, SSB SF 20 warm, same process, q1.1/q3.1/q4.1 geomean at 10%,
# 25%, 50% of the data: 24.64 / 23.09 / 21.72 ms against 26.17 / 24.96 / 22.69; q4.1 at 25% 26.8 against
# 30.3, unlimited 26.5)
EARLY_BUDGET_SHARE = 0.9
EARLY_MAX_BYTES = 8 << 30
# The fact scan's first delivery is queued before the dimension scans are made and primed, the rest of
# its primed deliveries after them: the link moves the fact's first copies while the host makes the
# dimension scans. With the dimension scans' copies on the fact scan's stream (DIMS_ON_FACT_STREAMS) they
# follow that first delivery in one stream's order. H100 (SSB SF 20 warm, s17 checkpoints): with them on
# the process's streams a copy engine serving both queues now and then served a dimension's small copy
# after several fact deliveries (q1.1: the date copy ended at 11.6 ms, its pipeline waited 9 ms); on the
# fact's stream they ended at 3.6-3.7 ms in every query, the first fact copy at 0.75-0.82 ms (dimension
# scans first: 1.0-2.9 ms). False: the dimension scans first (A/B).
FACT_FIRST = True
# The early dimension scans queue their copies and decode kernels on the fact scan's streams
# (stream_io.early_streams) instead of the process's (see FACT_FIRST). False: the process's (A/B).
DIMS_ON_FACT_STREAMS = True
# Cold queries start their scans' reads with the query (see the module docstring). False: a cold
# scan's reads start when its pipeline does (A/B).
COLD_READ_AHEAD = True
# Delivery groups of a cold fact scan read ahead (its streamer's ``depth``): with gpu_delivery_overlap
# the first groups ramp up (1/8, 1/4, 1/2 of gpu_batch_bytes), so 3 groups held 56 MiB, ~28 ms of a
# 2 GB/s disk, about the dimension pipelines' time; 4 hold 120 MiB.
READ_AHEAD_DEPTH = 4
# With FACT_FIRST: the fact scan's deliveries queued before the dimension scans are made: its first two,
# so that a smaller first one (stream_batch.PRIMED_RAMP 2: a quarter of the target) starts the link
# sooner and the second (a half) keeps it busy while the host makes the dimension scans. H100 session 18
# checkpoint 2 (SSB SF 20 warm, same process, 3 runs): q1.1 13.4, q2.1 21.0, q3.1 17.4, q4.1 26.9 ms
# against 13.5, 23.1, 17.7, 27.8 with one (of half the target); the first copy 0.61-0.83 ms into the
# query against 0.73-1.25, the fact's copies at 52.4-52.9 GB/s against 49.4-51.7 while the copy stream
# was busy (less host work inside the first delivery). The dimension scans' copies end ~1.2 ms later
# (4.8-4.9 ms). 1: its first only (A/B: warm_timeline switch firstdeliveries=N).
FIRST_DELIVERIES = 2


@dataclass
class EarlyScan:
    """A scan started early: the streamer, its primed iterator and the arguments it was made with."""

    op_id: int
    streamer: Any
    iterator: Any
    args: tuple
    kwargs: dict
    primed_bytes: int
    room: int = 0          # the budget bytes its primed deliveries may hold
    taken: bool = False    # taken over by its pipeline, or closed
    adopted: bool = False  # taken over by its pipeline


def pick_early_scan(pipelines: list, rows_of: Any) -> int | None:
    """The index of the pipeline whose table scan starts early: the only scan of the largest stored
    table, larger than every other table scanned, with another pipeline before it; else None.
    ``rows_of(table name)``: the table's rows."""
    scans = [(i, p.source) for i, p in enumerate(pipelines) if isinstance(p.source, TableScan)]
    if len(scans) < 2:
        return None
    rows = {i: int(rows_of(src.scan.table)) for i, src in scans}
    best = max(rows, key=lambda i: rows[i])
    table = dict(scans)[best].scan.table
    if best == 0 or any(i != best and (src.scan.table == table or rows[i] >= rows[best]) for i, src in scans):
        return None
    return best if _streams_whole(pipelines[best]) else None


def _streams_whole(pipe: Any) -> bool:
    """Whether the pipeline is of the shape the GPU runs fused or compiled (filters, projections and
    probes into an aggregation or a build), whose scan takes an early streamer over; an operator at
    a time would make its own."""
    from hetdb.exec.operators.aggregate import HashAggregate
    from hetdb.exec.operators.basic import FilterOp, ProjectOp
    from hetdb.exec.operators.join import HashProbe
    from hetdb.exec.operators.join_build import HashBuild

    return isinstance(pipe.sink, (HashAggregate, HashBuild)) and all(
        isinstance(op, (FilterOp, ProjectOp, HashProbe)) for op in pipe.ops)


def start_early_scans(ctx: ExecContext, physical: Any, skipped: set[int] = frozenset()) -> None:
    """Start the fact scan of ``physical`` early where it pays (see the module docstring), and before
    it (option ``gpu_early_dims``) the scans of the dimension pipelines that run before it, so their
    small copies are queued on the link ahead of the fact's; what it started is in
    ``ctx.early_scans`` and is closed with the query. ``skipped``: pipelines this run does not run
    (kept from an earlier run)."""
    opts = ctx.options
    if ctx.device is None or not getattr(opts, "gpu_early_scan", False):
        return
    if getattr(opts, "gpu_batch_bytes", 0) <= 0 or getattr(opts, "gpu_coprocess", "off") == "on" \
            or getattr(opts, "gpu_zero_copy", "off") != "off" or getattr(opts, "route", "auto") != "auto":
        return
    pipelines = physical.pipelines
    index = _early_index(ctx, physical)
    if index is None or pipelines[index].pid in skipped:
        return
    fact = _streams_past(ctx, pipelines[index].source)
    if fact is None:
        if COLD_READ_AHEAD and getattr(opts, "gpu_coprocess", "off") == "off" \
                and getattr(opts, "gpu_memory_limit", None) is None:
            # (not under a gpu_memory_limit: there the read-ahead's streamers, taken over as pass-through
            # scans, kept the device cache from admitting on the hot runs after a cold one: H100 session
            # 18, tests/exec/test_gpu_budget_admission.py, q3.1 at 350 KB cached 2 pages a run, not 30-39;
            # the cause is not pinned down)
            _read_ahead_cold(ctx, pipelines, index, skipped)
        return
    dims = _early_dimensions(physical, index, skipped) if getattr(opts, "gpu_early_dims", True) else []
    shared = cap = None
    if getattr(opts, "gpu_coprocess", "off") == "auto":
        from hetdb.exec.coprocess_plan import early_shared_scan

        # CPU workers will take row groups of the fact scan from its back: the streamer claims
        # the row groups it primes (at most the GPU's expected share)
        shared, cap = early_shared_scan(ctx, pipelines[index], fact)
    import cupy

    from hetdb.backend.gpu.stream_io import early_streams

    streams = early_streams(cupy.cuda.Device().id)
    from hetdb.exec.operators.aggregate import HashAggregate

    # (pages as stored: what fusion_stream.stream_form will ask of a fused aggregation's scan)
    stored = bool(getattr(opts, "gpu_stream_encoded", False)) and isinstance(pipelines[index].sink, HashAggregate)
    if not (FACT_FIRST and dims):
        if not _start_dimensions(ctx, dims):
            return  # (the budget had no room: neither does the fact scan)
        _start(ctx, pipelines[index].source, fact, streams, shared, cap, stored=stored, tail=True)
    else:
        early = _start(ctx, pipelines[index].source, fact, streams, shared, cap, first_only=True, stored=stored,
                       tail=True)
        if early is None:
            return  # (the budget had no room: nor for the dimension scans)
        for _ in range(FIRST_DELIVERIES - 1):
            _prime_next(ctx, early)
        if _start_dimensions(ctx, dims):  # (else the budget had no room: the fact primes nothing more either)
            if shared is not None:
                from hetdb.exec.coprocess_plan import start_early_workers

                start_early_workers(ctx, pipelines[index], primed=False)
            _prime_rest(ctx, early)
    if shared is not None:
        from hetdb.exec.coprocess_plan import start_early_workers

        start_early_workers(ctx, pipelines[index])  # (after the priming: its copies go first)


# id(physical) -> (physical, table names, their readers, pick_early_scan's index): the pick of a plan
# (from the plan cache: the same object every run) over the same table versions, made once (its walk
# and imports cost a fresh connection's query ~25 us before its first copy)
_PICKS: dict[int, tuple] = {}
# (id(physical), fact index, skipped) -> (physical, early_dimensions' pipelines): the same per plan
_DIMS: dict[tuple, tuple] = {}
_MEMO_ENTRIES = 256


def _early_index(ctx: ExecContext, physical: Any) -> int | None:
    """``pick_early_scan`` of ``physical``'s pipelines over the tables ``ctx`` reads, once per plan
    object and table versions (reader objects)."""
    hit = _PICKS.get(id(physical))
    if hit is not None and hit[0] is physical \
            and all(ctx.db.table(name) is reader for name, reader in zip(hit[1], hit[2])):
        return hit[3]
    readers: dict[str, Any] = {}

    def rows_of(name: str) -> int:
        reader = readers.get(name)
        if reader is None:
            reader = readers[name] = ctx.db.table(name)
        return reader.num_rows

    index = pick_early_scan(physical.pipelines, rows_of)
    if len(_PICKS) >= _MEMO_ENTRIES:
        _PICKS.clear()
    _PICKS[id(physical)] = (physical, tuple(readers), tuple(readers.values()), index)
    return index


def _early_dimensions(physical: Any, index: int, skipped: Any) -> list:
    """``early_dimensions`` of ``physical``'s pipelines, once per plan object, fact index and skipped set."""
    key = (id(physical), index, frozenset(skipped))
    hit = _DIMS.get(key)
    if hit is None or hit[0] is not physical:
        if len(_DIMS) >= _MEMO_ENTRIES:
            _DIMS.clear()
        hit = _DIMS[key] = (physical, early_dimensions(physical.pipelines, index, skipped))
    return hit[1]


def _start_dimensions(ctx: ExecContext, dims: list) -> bool:
    """Start the scans of the dimension pipelines ``dims`` that stream past the device cache, each
    primed whole; False when the budget had no room for one (the rest are not started)."""
    for pipe in dims:
        got = _streams_past(ctx, pipe.source)
        if got is not None and _start(ctx, pipe.source, got, _dimension_streams()) is None:
            return False
    return True


def early_dimensions(pipelines: list, index: int, skipped: set[int] = frozenset()) -> list:
    """The pipelines before the fact pipeline ``index`` whose table scan starts early with it: of
    the fused or compiled shape, run this time, and the only scan of their table in the plan (a
    second scan of the same columns fills the device cache instead of taking a streamer over)."""
    tables: dict[str, int] = {}
    for p in pipelines:
        if isinstance(p.source, TableScan):
            tables[p.source.scan.table] = tables.get(p.source.scan.table, 0) + 1
    return [p for p in pipelines[:index] if isinstance(p.source, TableScan) and p.pid not in skipped
            and tables[p.source.scan.table] == 1 and _streams_whole(p)]


def _read_ahead_cold(ctx: ExecContext, pipelines: list, index: int, skipped: set[int]) -> None:
    """Start the reads of a cold query's scans: the dimension pipelines' (whole), then the fact's."""
    from hetdb.exec.operators.aggregate import HashAggregate

    dims = early_dimensions(pipelines, index, skipped) if getattr(ctx.options, "gpu_early_dims", True) else []
    stored = bool(getattr(ctx.options, "gpu_stream_encoded", False)) and isinstance(pipelines[index].sink,
                                                                                   HashAggregate)
    for pipe in dims + [pipelines[index]]:
        rows = _streams_past(ctx, pipe.source, cold=True)
        if rows is not None:
            _start(ctx, pipe.source, rows, None, stored=stored and pipe is pipelines[index], reads_only=True)


def _streams_past(ctx: ExecContext, op: Any, cold: bool = False) -> list[int] | None:
    """The row groups of ``op``'s scan when it will stream past the device cache out of the pinned
    host tier (the connection's first scan of its columns, none cached: ``first_scan``'s
    pass-through; its first and last row groups' pages in the host tier); else None. ``cold``: the
    same scan when its first row group's pages are not all in the host tier (it reads from disk)."""
    from hetdb.cache.pages import memoized, page_info
    from hetdb.exec.operators.scan_device import _first_scan, scan_verdicts

    reader = ctx.db.table(op.scan.table)
    names = list(dict.fromkeys(op.scan.column_names))
    if not names:
        return None
    verdicts, _, _ = scan_verdicts(op, ctx, reader)
    row_groups = sorted(verdicts)
    if not row_groups or not _first_scan(ctx, reader, names, row_groups, remember=False):
        return None  # (the scan will read or fill the device cache: it does not stream past it)
    host = ctx.device.host_tier(ctx.options)
    if host is None:
        return None
    if cold:
        first = row_groups[0]
        return None if all(page_info(reader, name, first).host_key in host for name in names) else row_groups
    first, last = row_groups[0], row_groups[-1]
    # (the host tier's keys of those pages, made once per table version, columns and row groups)
    keys = memoized(reader, ("early scan host keys", tuple(names), first, last), lambda: tuple(
        dict.fromkeys(page_info(reader, name, rg).host_key for rg in (first, last) for name in names)))
    if not all(key in host for key in keys):
        return None  # (a cold scan: its first deliveries would wait for the disk before anything else runs)
    return row_groups


def _dimension_streams() -> Any:
    """The (copy, decode) streams of an early dimension scan: the fact scan's (DIMS_ON_FACT_STREAMS), else
    None (the process's)."""
    if not DIMS_ON_FACT_STREAMS:
        return None
    import cupy

    from hetdb.backend.gpu.stream_io import early_streams

    return early_streams(cupy.cuda.Device().id)


def _start(ctx: ExecContext, op: Any, row_groups: list[int], streams: Any, shared: Any = None,
           cap: int | None = None, first_only: bool = False, stored: bool = False,
           tail: bool = False, reads_only: bool = False) -> EarlyScan | None:
    """Make ``op``'s streamer as its pipeline would (``streams``: the copy and decode streams, None:
    the process's; ``shared``: the scan CPU workers share, cache/coscan.SharedScan) and queue its
    first deliveries, at most ``cap`` bytes of them (``first_only``: its first delivery only, the
    rest up to the same bound with ``_prime_rest``; ``stored``: pages delivered as stored, as
    fusion_stream.stream_form has a fused pipeline's scan deliver them with gpu_stream_encoded; ``tail``:
    the fact scan's, its last deliveries smaller, stream_batch.TAIL_RAMP; ``reads_only``: a cold scan's
    first READ_AHEAD_DEPTH groups' reads started, nothing delivered); None when the budget has no
    room."""
    from hetdb.exec.operators.scan_device import DeviceScanState, streamer_args

    state = DeviceScanState(ctx.db.table(op.scan.table))
    state.pass_through = True  # (what first_scan will decide when the pipeline's scan starts)
    state.stream_encoded = stored
    args, kwargs = streamer_args(op, ctx, state, row_groups, shared)
    budget = ctx.device.budget
    room = min(EARLY_MAX_BYTES, int((budget.limit_bytes - budget.used_bytes) * EARLY_BUDGET_SHARE))
    if cap is not None:
        room = min(room, cap)
    if room <= 0:
        return None
    from hetdb.backend.gpu.stream import PageStreamer

    streamer = PageStreamer(*args, **kwargs, streams=streams, **({"depth": READ_AHEAD_DEPTH} if reads_only else {}))
    early = EarlyScan(op.op_id, streamer, None, args, kwargs, 0, room=room)
    ctx.early_scans[op.op_id] = early
    ctx.cleanup.append(lambda: _close(ctx, early))
    from hetdb.exec.device import is_device_oom

    try:
        early.iterator = streamer.read_ahead() if reads_only else streamer.prime(1 if first_only else room, tail=tail)
    except Exception as e:
        if not is_device_oom(e):
            raise
        _close(ctx, early)  # (the budget had no room after all: the pipeline streams as usual)
        return None
    early.primed_bytes = streamer.held_bytes
    return early


def _prime_rest(ctx: ExecContext, early: EarlyScan) -> None:
    """Queue the rest of an early scan's first deliveries (``_start``'s bound), after its first."""
    from hetdb.exec.device import is_device_oom

    if early.iterator is None or early.taken:
        return
    try:
        early.streamer.prime_more(early.room)
    except Exception as e:
        if not is_device_oom(e):
            raise
        _close(ctx, early)  # (its deliveries ended with the error: the pipeline streams as usual)
        return
    early.primed_bytes = early.streamer.held_bytes


def _prime_next(ctx: ExecContext, early: EarlyScan) -> None:
    """Queue one more of an early scan's deliveries (within ``_start``'s bound): ``prime_more`` queues
    deliveries while those held and the largest one fit the bytes given."""
    streamer = early.streamer
    if early.iterator is None or early.taken:
        return
    nbytes = min(early.room, streamer.held_bytes + streamer.delivery_bytes)
    if nbytes <= streamer.held_bytes:
        return
    from hetdb.exec.device import is_device_oom

    try:
        streamer.prime_more(nbytes)
    except Exception as e:
        if not is_device_oom(e):
            raise
        _close(ctx, early)
        return
    early.primed_bytes = streamer.held_bytes


def take_early(ctx: ExecContext, op: Any, args: tuple, kwargs: dict) -> tuple[Any, Any] | None:
    """(streamer, iterator) of the early scan of ``op`` when it was made with ``args``/``kwargs``
    (the scan as it starts now: same reader, columns, row groups and options); an early scan that
    does not match is closed (its deliveries are given back) and None returned."""
    early = getattr(ctx, "early_scans", {}).get(op.op_id)
    if early is None or early.taken:
        return None
    if early.iterator is not None and _same(early, args, kwargs):
        early.taken = early.adopted = True
        return early.streamer, early.iterator
    _close(ctx, early)
    return None


def _same(early: EarlyScan, args: tuple, kwargs: dict) -> bool:
    a, k = early.args, early.kwargs
    if a[0] is not args[0] or list(a[1]) != list(args[1]) or list(a[2]) != list(args[2]):
        return False
    for name in ("budget", "cache", "host_cache", "shared"):
        if k.get(name) is not kwargs.get(name):
            return False
    for name in ("compressed", "batch_bytes", "overlap", "zero_copy", "neighbours"):
        if k.get(name) != kwargs.get(name):
            return False
    r1, r2 = k.get("router"), kwargs.get("router")
    if getattr(r1, "gpu", None) != getattr(r2, "gpu", None):
        return False
    # the early scan streams past the device cache ('copy': the connection's first scan of these
    # columns, as first_scan's pass-through); a scan started without that decision (a pipeline run
    # operator at a time asks no first_scan) routes 'auto', and takes the same deliveries: it only
    # would have offered their pages to the device cache, which a first scan does not fill
    m1, m2 = getattr(r1, "mode", None), getattr(r2, "mode", None)
    return m1 == m2 or (m1 == "copy" and m2 == "auto")


def _close(ctx: ExecContext, early: EarlyScan) -> None:
    """Close an early scan no pipeline took (idempotent); what it moved counts on its operator."""
    if early.taken:
        return
    early.taken = True
    early.streamer.close()
    ctx.add_routes(early.op_id, early.streamer.route_counts())
