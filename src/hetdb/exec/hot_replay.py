"""Hot replay: a run of a cached GPU plan that launches again what its last run launched, without
walking the planner's and driver's objects again.

A hot query on the GPU is one fused kernel per aggregation over pages the device cache holds, with
its dimension tables kept from an earlier run of the same physical plan (exec/fusion_reuse.py), and a
small host tail. The kernel and the tail take a millisecond or two; the driver around them (a
pipeline's global and local states, the fusion planner's lookups, the resident-page check, the
early-scan decision) cost as much host time again, for the same answers every run. A full run of a
plan notes, per fused pipeline that ran as one launch over resident pages with its plan taken from
the store (nothing streamed, no row through its operators, small accumulators), what that launch
needs (``note_fused_step``); at its end the engine keeps a ``HotRecord`` when it noted one and
started no early scan. A later run of the same physical plan with the same ``stamp`` takes the
stored plans and kept builds the record names at once (``take_stored``), skips the early-scan
decision and replays each noted pipeline with ``replay_fused_step``: the one launch, the step's
bookkeeping while the kernel runs, the finish, the aggregation's final values. Its first replay
keeps the launch with the (small) accumulator state it filled and the group keys' columns of the
whole domain (``_KeptLaunch``, among the device cache's derived objects); later replays zero that
state and launch again with the same arguments, read back values and counts in one copy, take the
non-empty groups' key rows and make the final values from the one partial state, with no global
state of the aggregation. The host tail's pipelines run through exec/small_tail.py; other
pipelines, the result and the statistics as in a full run.

The stamp says what the noted objects depend on: the physical plan object (the plan cache hands out
a new one when a table it reads has a new version), the query's options object (``SET``/``RESET``
make a new engine; ``gpu_compressed_cache`` 'auto' decided per query), the device cache's
generation (bumped whenever an entry leaves: an evicted page or stored dense table) and the
budget's limit. The same physical plan and stamp mean the same pages, the same kept tables and the
same literals (the plan cache is keyed by the SQL text), so a replay launches what a full run would
launch; the kernel still runs and its groups are computed again every time (no result is cached).
A record holds no device memory: the stored plans by weak reference (the store's entries own them),
the resident pages and page table by their keys among the device cache's derived objects, looked up
again right before each replayed launch (a pipeline of the same run that was not replayed may have
evicted pages since the run began); a kept launch is such a derived object too (at most
KEPT_LAUNCHES of them, each of at most runtime.HOST_FINISH_BYTES).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from hetdb.column import Column
from hetdb.exec.operators.base import ExecContext, Timer

RECORDS = 256
TAIL = [True]  # (a kept launch's result straight from its groups, exec/hot_tail.py: off for A/B)
DIRECT = [True]  # (a replay's aggregation finished without its global state: off for A/B, scripts/gpu_hot_split.py)


@dataclass
class FusedStep:
    """What replaying one fused pipeline needs: its plan (the stored FusionPlan), the resident pages
    it reads (scan_device.ResidentPages) and their page table (kept with its device copy), both by
    their keys among the device cache's derived objects (which go with any eviction), the group
    domains, the scan's route counts and the EXPLAIN note. Nothing here holds device memory: the
    plan is a weak reference (the store's entry owns it and its dense tables)."""

    plan: Any  # weakref.ref to the stored FusionPlan
    scan_id: int
    resident_key: tuple
    table_key: tuple
    domains: list
    routes: Any
    note: str
    pages_skipped: tuple  # (scan op id, pages zone maps ruled out) of the pipeline's source and of the
    # kernel's scan (a swapped join's chain scans another table), counted when a full run plans the scans
    shared: bool  # another pipeline of the plan is of its kind: it may share a result (exec/shared_results.py)


@dataclass
class HotRecord:
    physical: Any
    stamp: tuple
    options: Any
    skipped: frozenset
    steps: dict  # pid -> FusedStep
    stored: dict  # pid -> weakref.ref to the plan (FusionPlan) or kept build (BuildSide) the run took from the store
    kept: frozenset  # of ``stored``: the kept builds
    keys: list  # the store's keys of ``stored``, in its order (one list object: cache/device_cache.hold_many)
    notes: tuple = ()  # fusion_reuse._skips's EXPLAIN notes of the recorded run's stored pipelines


def stamp(device: Any) -> tuple:
    """What a record's objects depend on besides the physical plan and options objects (compared by
    identity apart): the device cache's generation and capacity, the budget's limit."""
    return (device.cache.generation, device.cache.capacity_bytes, device.budget.limit_bytes)


def note_fused_step(ctx: ExecContext, pipe: Any, plan: Any) -> None:
    """During a full run: ``pipe`` ran fused as one launch over resident pages (nothing streamed, no
    row through its operators, no flush of them needed, small accumulators), with its plan taken
    from the store."""
    from hetdb.exec.fusion_reuse import _REUSE

    reuse = _REUSE.get(ctx)
    launch = ctx.__dict__.get("_resident_launches", {}).get(pipe.sink.op_id)
    if reuse is None or launch is None or pipe.pid not in reuse.presets or reuse.presets[pipe.pid].plan is not plan:
        return
    scan_id, resident, table_key, hit = launch
    table, rest = hit
    if table is None or rest:
        return
    from hetdb.cache.router import Route, RouteCounts
    from hetdb.exec.shared_results import _kind

    kind = _kind(pipe)
    shared = kind is not None and any(p is not pipe and _kind(p) == kind for p in reuse.physical.pipelines)
    routes = RouteCounts()
    routes.add(Route.GPU_RESIDENT, resident.nbytes, pages=len(resident.keys))
    steps = ctx.__dict__.setdefault("_hot_steps", {})
    steps[pipe.pid] = FusedStep(weakref.ref(plan), scan_id, resident.derived_key, table_key,
                                [(k.domain.lo, k.domain.hi) for k in plan.group_keys], routes,
                                ctx.stat(pipe.sink.op_id).fused,
                                tuple((i, int(ctx.stat(i).pages_skipped)) for i in {scan_id, pipe.source.op_id}), shared)


def make_record(ctx: ExecContext, physical: Any, options: Any, skipped: set[int]) -> HotRecord | None:
    """After a full run of ``physical`` that ended well: the record a later run replays, when a fused
    step was noted, nothing started early, and what the steps noted is still what the device cache
    holds. (The plan's other pipelines run as in a full run: on the host tail, compiled, ...)"""
    steps = ctx.__dict__.get("_hot_steps")
    if not steps or ctx.early_scans or ctx.device is None:
        return None
    cache = ctx.device.cache
    for step in steps.values():
        if cache.derived(step.resident_key) is None or cache.derived(step.table_key) is None:
            return None  # (an entry left the cache during the run)
    for s in ctx.stats.values():
        if s.fallbacks:
            return None
    from hetdb.exec.fusion_reuse import _REUSE

    reuse = _REUSE.get(ctx)
    if reuse is None or reuse.physical is not physical or reuse.key is not physical:
        return None
    stored = {pid: weakref.ref(e.plan) for pid, e in reuse.presets.items()}
    stored.update((pid, weakref.ref(side)) for pid, side in reuse.kept.items())
    keys = [reuse.store.key_of(physical, pid) for pid in stored]
    from hetdb.exec.fusion_reuse import _skips

    done, notes = _skips(physical, reuse)
    if done != frozenset(skipped):
        return None
    return HotRecord(physical, stamp(ctx.device), options, frozenset(skipped), dict(steps), stored,
                     frozenset(reuse.kept), keys, notes)


def usable(record: HotRecord | None, physical: Any, options: Any, device: Any) -> bool:
    """Whether ``record`` may replay a run of ``physical`` with ``options``."""
    return record is not None and record.physical is physical and record.options is options \
        and record.stamp == stamp(device)


def take_stored(ctx: ExecContext, store: Any, record: HotRecord) -> bool:
    """fusion_reuse.prepare_reuse for a replay: take (and pin until the query ends) the stored
    plans and kept builds the recorded run took, each the same object still; False (nothing taken)
    when one is not, and the run prepares as a full one. The kept builds' results go into
    ``ctx.results`` as prepare_reuse puts them; no later pipeline of a replay takes them as a shared
    result (exec/shared_results.py shares a build with builds only, and a replay runs none)."""
    from hetdb.exec.fusion_reuse import _REUSE, _Reuse

    physical = record.physical
    got = store.hold_many(physical, record.keys) if record.keys else ([], ())
    if got is None:
        return False
    entries, pin = got
    reuse = _Reuse(store, physical, physical)
    reuse.pins.append(pin)
    for (pid, ref), entry in zip(record.stored.items(), entries):
        plan = ref()
        if plan is None or entry.plan is not plan:
            store.release(pin)
            return False
        if pid in record.kept:
            reuse.kept[pid] = plan
        else:
            reuse.presets[pid] = entry
    # (the same stored objects as the recorded run's, for the same pipelines: the same skipped
    # pipelines and notes as fusion_reuse._skips found for them then)
    reuse.skipped = set(record.skipped)
    _REUSE[ctx] = reuse
    for pid, side in reuse.kept.items():
        ctx.results[pid] = side
    for op_id, note in record.notes:
        ctx.stat(op_id).fused = note
    return True


def replay_fused_step(ctx: ExecContext, pipe: Any, step: FusedStep) -> bool:
    """Run fused pipeline ``pipe`` as its noted step: the launch over the resident pages, the groups
    to the host, the aggregation's finalize (as run_pipeline and run_fused would, without the driver).
    False (nothing done) when the store handed this run another plan for it or the pages it read are
    no longer all in the device cache: the driver runs it."""
    from hetdb.exec.fusion_reuse import _REUSE
    from hetdb.exec.fusion_run import _host_finish, _partial_state, add_groups, finish_fused
    from hetdb.exec.shared_results import reuse

    plan = step.plan()
    preset = _REUSE[ctx].presets.get(pipe.pid)
    if plan is None or preset is None or preset.plan is not plan:
        return False
    cache = ctx.device.cache
    # the pages and page table as the cache holds them now (a pipeline of this run that ran before,
    # not replayed, may have evicted pages: derived objects go with any eviction)
    resident, hit = cache.derived(step.resident_key), cache.derived(step.table_key)
    if resident is None or hit is None or hit[0] is None or hit[1]:
        return False
    if step.shared and reuse(ctx, pipe):
        return True
    fp = plan.pipeline
    table = hit[0]
    kept = _kept_launch(cache, step, plan, table) if DIRECT[0] else None
    fresh = False
    if kept is not None:
        state = kept.state
        _relaunch(fp, state)
    else:
        state = fp.new_state(step.domains)
        fresh = table.device is None
        state.launch = None
        try:
            fp.consume_pages(state, table, plan.tables)
        finally:
            if not DIRECT[0]:
                resident.release()
    # (a replay reads the kernel's accumulators back, waiting for it, before anything of this
    # connection can evict a page it reads: ``resident.release``'s ordering of the copy stream after
    # the kernel is for evictions while a kernel may still run)
    # the host's bookkeeping while the kernel runs (finish waits for it)
    if fresh and table.device is not None:
        cache.arrays_changed()  # (as run_fused: the kept page table now holds its device copy)
    resident.touched_at = cache.touch_many(resident.keys, resident.nbytes, resident.touched_at)
    scan = ctx.stat(step.scan_id)  # (the query's one thread runs GPU pipelines: no other writer now)
    scan.rows_in += resident.num_rows
    scan.rows_out += resident.num_rows
    scan.pages_cached += len(resident.keys)
    for op_id, pages in step.pages_skipped:
        ctx.stat(op_id).pages_skipped += pages
    ctx.add_routes(step.scan_id, step.routes)
    sink = pipe.sink
    st = ctx.stat(sink.op_id)
    st.fused = step.note
    st.rows_in += table.num_rows
    if DIRECT[0]:
        keys = None
        if kept is not None and kept.keys is not None:
            host = _host_finish(ctx, pipe, plan, _NO_STATES, fp, state)
            if host is not None:
                with Timer(ctx, sink.op_id):  # (finish_fused's, without the key values: kept.keys)
                    result = fp.finish(state, host=True, keys=False)
                groups = result.groups
                keys = [Column(c.dtype, data=c.data[groups], validity=None if c.validity is None else
                               c.validity[groups], dictionary=c.dictionary) for c in kept.keys]
        if keys is None:
            host, result, _ = finish_fused(ctx, pipe, plan, _NO_STATES, fp, state)
        if kept is None and host is not None and state.launch is not None and fp.finishes_on_host(state):
            _keep_launch(cache, step, plan, table, state, _domain_keys(host, plan, state))
        state = None
        if host is not None and result.num_groups and not sink.raw_mode:
            # add_groups and HashAggregate.finalize of the kernel's groups alone (each group once,
            # nothing to merge): their final values straight from the partial state, on the host,
            # without the aggregation's global state (its reservation, its lock, its Timer)
            part = _partial_state(host, sink, plan, result, on_host=True, key_columns=keys)
            ctx.made_on_host.add(pipe.pid)  # (its consumers on the host take the result as it is)
            out = sink._outputs(host, part)
            ctx.add(sink.op_id, rows_out=out.num_rows)
            ctx.results[pipe.pid] = [out]
            if keys is not None and TAIL[0]:  # (a kept launch's replay: its tail's recipe, exec/hot_tail.py)
                if kept.tail is None:
                    ctx.hot_check = (kept, pipe.pid, sink, host, out, result.groups)
                elif kept.tail:
                    ctx.hot_table = kept.tail.run(host, out, result.groups)
                    ctx.hot_done = kept.tail.pids
            return True
        g = sink.init_global(ctx)
    else:
        g = sink.init_global(ctx)
        host, result, _ = finish_fused(ctx, pipe, plan, g, fp, state)
        state = None
    finishing = add_groups(ctx, pipe, plan, g, result, host) or ctx
    ctx.results[pipe.pid] = sink.finalize(finishing, g)
    return True


class _KeptLaunch:
    """A replayed step's last launch and the accumulator state it filled (small: the state of a
    domain ``finish`` reads back whole), kept among the device cache's derived objects (they go
    with the first eviction, and the cache counts their device bytes) for the next replay of the
    same step over the same page table: it zeroes the state and launches again with the same
    arguments, instead of a new state (an allocation, a dozen array views) and the launch's
    arguments worked out again (probes, literals, occupancy)."""

    def __init__(self, step: FusedStep, plan: Any, table: Any, state: Any, keys: list | None) -> None:
        self.step, self.plan, self.table, self.state = weakref.ref(step), weakref.ref(plan), table, state
        # the group keys' host columns for every group of the domain, in group order (a group's
        # key values depend on its index only): a replay takes the non-empty groups' rows of them
        self.keys = keys
        self.tail: Any = None  # exec/hot_tail.TailRecipe; None: not made yet; False: none (check_tail)

    def device_arrays(self) -> list[Any]:
        return [self.state.buffer]


_KEPT: OrderedDict = OrderedDict()  # (id(cache), key) -> (weakref to the cache, key), oldest first
KEPT_LAUNCHES = 32  # (at most this many states kept, of at most HOST_FINISH_BYTES each)
_KEPT_LOCK = threading.Lock()


def _kept_launch(cache: Any, step: FusedStep, plan: Any, table: Any) -> _KeptLaunch | None:
    got = cache.derived(("hot-launch", id(step)))
    if got is None or got.step() is not step or got.plan() is not plan or got.table is not table:
        return None
    return got


def _keep_launch(cache: Any, step: FusedStep, plan: Any, table: Any, state: Any, keys: list | None) -> None:
    key = ("hot-launch", id(step))
    state.page_tables.clear()  # (the staged host copy of a page table is done with: the kernel ran)
    cache.set_derived(key, _KeptLaunch(step, plan, table, state, keys))
    cache.arrays_changed()  # (the cache's device bytes now count the state's)
    dropped = []
    with _KEPT_LOCK:  # (connections of several threads replay at once)
        _KEPT[(id(cache), key)] = (weakref.ref(cache), key)
        _KEPT.move_to_end((id(cache), key))
        while len(_KEPT) > KEPT_LAUNCHES:
            dropped.append(_KEPT.popitem(last=False)[1])
    for ref, old in dropped:
        other = ref()
        if other is not None:
            other.set_derived(old, None)  # (dropped: the state's memory goes back to the pool)
            other.arrays_changed()


def _domain_keys(host: ExecContext, plan: Any, state: Any) -> list | None:
    """fusion_run.group_key_columns of every group of ``state``'s dense domain (None past
    DOMAIN_KEY_GROUPS groups)."""
    import numpy as np

    from hetdb.backend.gpu.codegen.runtime import AggregateResult
    from hetdb.exec.fusion_run import group_key_columns

    if state.num_groups > DOMAIN_KEY_GROUPS or plan.key_sources is not None and \
            not all(isinstance(s, int) for s in plan.key_sources):
        return None
    groups = np.arange(state.num_groups, dtype=np.int64)
    ranks = [(groups // stride) % size + lo for (lo, _), size, stride in zip(state.domains, state.sizes, state.strides)]
    return group_key_columns(host, plan, AggregateResult(ranks, [], groups), on_host=True)


DOMAIN_KEY_GROUPS = 1 << 17  # (a kept state's domain: HOST_FINISH_BYTES of accumulators at most)


def _relaunch(fp: Any, state: Any) -> None:
    """Zero ``state`` (its accumulators' identities where not 0) and launch its last launch again."""
    from hetdb.backend.gpu.codegen.runtime import _IDENTITY
    from hetdb.backend.gpu.compile import launch

    buf = state.buffer
    buf.data.memset_async(0, buf.nbytes)
    for a, acc in zip(fp.kernel.accumulators, state.accumulators):
        if _IDENTITY[a.acc]:
            acc.fill(_IDENTITY[a.acc])
    fn, grid, block, args, shared = state.launch
    launch(fn, grid, block, args, shared_mem=shared)


def check_tail(ctx: ExecContext, fields: Any, timezone: str, table: Any) -> None:
    """After the host tail of a replay of a kept launch made the result ``table``: make the launch's
    tail recipe (exec/hot_tail.py) and keep it when its table of the same groups is the same, else
    never try again for that launch."""
    pending = ctx.__dict__.pop("hot_check", None)
    if pending is None:
        return
    from hetdb.exec import hot_tail
    from hetdb.exec.fusion_reuse import _REUSE
    from hetdb.exec.hostutil import result_schema

    kept, pid, sink, host, out, groups = pending
    kept.tail = False
    chain = hot_tail.tail_chain(_REUSE[ctx].physical, pid)
    if chain is None or kept.keys is None:
        return
    try:
        recipe = hot_tail.make_recipe(host, sink, chain, kept.keys, fields, result_schema(fields, timezone))
        same = recipe is not None and recipe.run(host, out, groups, count=False).equals(table)
    except Exception:  # noqa: BLE001 - the result is made already; the recipe only saves its next ones time
        return
    if same:
        kept.tail = recipe


class _NoStates:
    """The global state of an aggregation no batch reached yet, as finish_fused asks it (``_host_finish``)."""

    batches: list = []
    parts = None


_NO_STATES = _NoStates()
