"""Reuse of fused GPU pipelines between runs of one physical plan (the store is
cache/fused_state.py): a repeated query takes the dense tables its fused kernel built last time and
skips the dimension pipelines that made them. Switched off by the ``reuse_fused_state`` option."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from hetdb.exec.operators.base import ExecContext

if TYPE_CHECKING:
    from hetdb.exec.fusion import FusionPlan

REUSED = "dense tables reused from an earlier run of this plan"


class _Reuse:
    """A query's view of the fused-state store: stored pipelines of its physical plan and the
    pipelines they make unnecessary."""

    def __init__(self, store: Any, physical: Any, key: Any) -> None:
        self.store = store
        self.physical = physical
        self.key = key                      # the physical plan entries are stored under
        self.presets: dict[int, Any] = {}   # pid -> FusedState
        self.pins: list = []
        self.skipped: set[int] = set()
        self.kept: dict[int, Any] = {}      # pid -> BuildSide kept by an earlier run (exec/kept_builds.py)


_REUSE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def prepare_reuse(ctx: ExecContext, store: Any, physical: Any, key: Any = None) -> set[int]:
    """Before ``physical`` runs: take the fused pipelines an earlier run of it stored (dense tables
    and all) and return the ids of the pipelines nothing needs any more, which the driver then
    skips (the dimension scans and builds whose results those tables hold). ``key``: the physical
    plan entries are stored under when ``physical`` is a variant of it (a streamed run replaces its
    result pipeline's sink; every other pipeline is the same object). A plan is stored only
    when its kernel takes every page of its fact table (no NULLs, no plain-string pages), so a
    skipped build is never needed by an operator-at-a-time fallback; should one be, it runs then."""
    from hetdb.exec.operators.aggregate import HashAggregate as _Agg

    key = physical if key is None else key
    reuse = _REUSE[ctx] = _Reuse(store, physical, key)
    for p in physical.pipelines:
        if isinstance(p.sink, _Agg) and p is key.pipelines[p.pid]:
            got = store.get(key, p.pid)
            if got is not None:
                reuse.presets[p.pid] = got[0]
                reuse.pins.append(got[1])
    from hetdb.exec.kept_builds import take_kept

    reuse.kept = take_kept(ctx, reuse)
    if not reuse.presets and not reuse.kept:
        return set()
    skipped, notes = _skips(physical, reuse)
    reuse.skipped = set(skipped)
    from hetdb.exec.shared_results import remember_kept

    for pid, side in sorted(reuse.kept.items()):
        ctx.results[pid] = side
        remember_kept(ctx, physical.pipelines[pid])  # a copy of its subplan takes it, as from a run
    for op_id, note in notes:
        ctx.stat(op_id).fused = note
    return reuse.skipped


# id(physical) -> (physical, {(preset pids, kept pids, their entries' inputs): (skipped, notes)}): what
# a run of the plan with those stored pipelines skips and says, the same for every hot run
_SKIPS: dict[int, tuple[Any, dict]] = {}
_SKIPS_ENTRIES = 256


def _skips(physical: Any, reuse: _Reuse) -> tuple[frozenset[int], tuple[tuple[int, str], ...]]:
    """(pipelines nothing needs, (sink op id, EXPLAIN note) per pipeline skipped) for ``reuse``'s
    stored pipelines (its fused presets and kept builds)."""
    key = (tuple(sorted((pid, e.inputs, e.swapped) for pid, e in reuse.presets.items())),
           tuple(sorted(reuse.kept)))
    hit = _SKIPS.get(id(physical))
    if hit is not None and hit[0] is physical and key in hit[1]:
        return hit[1][key]
    from hetdb.exec.kept_builds import KEPT, KEPT_INPUT

    running = {physical.result_pipeline}
    for p in reversed(physical.pipelines):  # consumers come after what they depend on
        if p.pid in running and p.pid not in reuse.presets and p.pid not in reuse.kept:
            running.update(p.deps)
    skipped = {p.pid for p in physical.pipelines} - running
    notes: dict[int, str] = {}  # pid -> note (later writers as in the order of a run's notes)
    for pid in sorted(reuse.kept):
        notes[pid] = KEPT
        skipped.add(pid)
    for pid, entry in reuse.presets.items():
        for q in sorted(entry.inputs & skipped):
            what = ("runs inside" if q in entry.swapped else "not run: its result is built into") + \
                f" pipeline {pid}'s fused kernel"
            notes[q] = f"{what} ({REUSED})"
    for pid in reuse.kept:
        for q in sorted(_closure(physical, physical.pipelines[pid].deps) & skipped):
            if not notes.get(q):
                notes[q] = f"{KEPT_INPUT} {pid}'s kept build)"
    out = (frozenset(skipped), tuple((physical.pipelines[q].sink.op_id, n) for q, n in notes.items()))
    if hit is None or hit[0] is not physical:
        if len(_SKIPS) >= _SKIPS_ENTRIES:
            _SKIPS.pop(next(iter(_SKIPS)))
        hit = _SKIPS[id(physical)] = (physical, {})
    hit[1][key] = out
    return out


def release_reuse(ctx: ExecContext) -> None:
    """After the query: unpin the stored entries it used and drop its references to them."""
    reuse = _REUSE.pop(ctx, None)
    if reuse is not None:
        for pin in reuse.pins:
            reuse.store.release(pin)


def _closure(physical: Any, deps: list[int]) -> set[int]:
    out: set[int] = set()
    stack = list(deps)
    while stack:
        pid = stack.pop()
        if pid not in out:
            out.add(pid)
            stack.extend(physical.pipelines[pid].deps)
    return out


_CLOSURES: dict[tuple[int, int], tuple[Any, frozenset[int]]] = {}  # (id(physical), pid) -> (physical, closure)


def _input_closure(physical: Any, pid: int) -> frozenset[int]:
    """The pipelines pipeline ``pid`` of ``physical`` depends on, transitively (once per plan)."""
    hit = _CLOSURES.get((id(physical), pid))
    if hit is None or hit[0] is not physical:
        if len(_CLOSURES) >= 4096:
            _CLOSURES.clear()
        hit = _CLOSURES[(id(physical), pid)] = (physical, frozenset(_closure(physical, physical.pipelines[pid].deps)))
    return hit[1]


def _remember(ctx: ExecContext, pipe: Any, plan: FusionPlan, why: str) -> None:
    """Store a fused pipeline's plan for later runs of the same physical plan when it is
    self-contained: every page of its fact table runs fused (see prepare_reuse)."""
    reuse = _REUSE.get(ctx)
    if reuse is None or reuse.physical is None:
        return
    from hetdb.exec.fusion import _check_pages, _NotFused

    if plan.chain is None:
        name_of = dict(zip((f.cid for f in plan.scan.scan.fields), plan.scan.scan.column_names))
        try:
            _check_pages(ctx.db.table(plan.scan.scan.table),
                         list(dict.fromkeys(name_of[c] for c, _ in plan.pipeline.spec.inputs)))
        except _NotFused:
            return  # pages with NULLs run through the operators, which need the builds
    from hetdb.cache.fused_state import FusedState

    arrays: list = []
    for t in plan.tables:
        arrays += t.held_arrays()
    for k in plan.group_keys:
        arrays += [a for a in (k.domain.values, k.dictionary) if a is not None]
    for src in plan.key_sources or ():
        if not isinstance(src, int):  # (a DependentKey's build column)
            arrays.append(src.column)
    swapped = frozenset(p.pid for p in plan.chain) if plan.chain is not None else frozenset()
    if pipe is not reuse.key.pipelines[pipe.pid]:
        return  # (the streamed variant's own result pipeline: no later run has it)
    reuse.store.put(FusedState(reuse.key, pipe.pid, plan, why,
                               frozenset(_closure(reuse.physical, pipe.deps)), swapped, arrays))


def _skipped_inputs(ctx: ExecContext, pipe: Any) -> list[int]:
    reuse = _REUSE.get(ctx)
    if reuse is None or pipe.pid not in reuse.presets:
        return []
    return sorted(_input_closure(reuse.physical, pipe.pid) & reuse.skipped)


def _run_skipped_inputs(ctx: ExecContext, pipe: Any) -> None:
    """Run the pipelines ``pipe`` depends on that were skipped (a batch must go through its
    operators after all)."""
    from hetdb.exec.fusion_swaps import _deferrals
    from hetdb.exec.pipeline import run_pipeline

    reuse = _REUSE.get(ctx)
    for pid in _skipped_inputs(ctx, pipe):
        if pid not in ctx.results:
            _deferrals(ctx).no_defer.add(pid)
            p = reuse.physical.pipelines[pid]
            run_pipeline(ctx, p, None, 1)
            ctx.stat(p.sink.op_id).fused = ""
