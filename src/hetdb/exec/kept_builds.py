"""Hash builds kept between runs of one physical plan on the GPU (the store of
cache/fused_state.py, switched with it by the ``reuse_fused_state`` option): a dimension-sized join
build (its rows and its hash table) is kept after a run, and a later run of the same plan takes it
and skips the pipelines that made it. On a hot GPU those builds cost launches and host round trips,
not bytes: TPC-H q02's eight builds (region, nation, supplier, part, each twice) took ~7 ms of a
~25 ms run at SF 10. Like the fused pipelines' dense tables they depend only on the plan and on the
committed versions of the tables it reads, and the plan cache hands out a new physical plan when a
table changes.

Kept: a ``HashBuild`` on non-string keys (string keys hold their own encoder tables) whose pipeline
and every pipeline it depends on scan a stored table of at most KEEP_MAX_TABLE_ROWS rows, smaller
than the largest table the plan scans, and only filter, project and probe (no aggregation or result
scan: the pipelines over the fact tables, and those that aggregate, run every time), keeping at most
KEEP_MAX_ROWS rows, not spilled.
"""

from __future__ import annotations

from typing import Any

from hetdb.exec.fusion_reuse import _REUSE, _closure
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HASH_BYTES_PER_ROW, BuildSide, HashBuild
from hetdb.exec.operators.join_tables import unmade_copy
from hetdb.exec.operators.scan import TableScan

KEEP_MAX_ROWS = 1 << 20
KEEP_MAX_TABLE_ROWS = 1 << 22
KEPT = "hash table and rows kept from an earlier run of this plan (not run)"
KEPT_INPUT = "skipped (only needed by pipeline"

_ENTRIES = 256
# id(physical plan) -> (the plan, the pids of its keepable builds): a plan from the plan cache is the
# same object every run
_keepable: dict[int, tuple[Any, frozenset[int]]] = {}


def enabled(ctx: ExecContext) -> bool:
    """Builds are kept on the GPU only (the CPU's builds are single loops without launches)."""
    return ctx.device is not None


def keepable(ctx: ExecContext, physical: Any) -> frozenset[int]:
    """The pids of ``physical``'s pipelines whose builds may be kept (see the module docstring)."""
    hit = _keepable.get(id(physical))
    if hit is not None and hit[0] is physical:
        return hit[1]
    rows = {name: int(ctx.db.table(name).num_rows)
            for name in {p.source.scan.table for p in physical.pipelines if isinstance(p.source, TableScan)}}
    largest = max(rows.values(), default=0)

    def small_scan(p: Any) -> bool:
        src = p.source
        if not isinstance(src, TableScan):
            return False
        n = rows[src.scan.table]
        return n <= KEEP_MAX_TABLE_ROWS and n < largest

    def simple(p: Any) -> bool:
        return isinstance(p.sink, HashBuild) and small_scan(p) \
            and all(isinstance(op, (FilterOp, ProjectOp, HashProbe)) for op in p.ops)

    out = set()
    for p in physical.pipelines:
        if not (isinstance(p.sink, HashBuild) and p.sink.keys):
            continue
        if any(k.dtype.kind == "string" or k.dtype.is_wide for k in p.sink.keys):
            continue
        if all(simple(physical.pipelines[q]) for q in _closure(physical, [p.pid])):
            out.add(p.pid)
    if len(_keepable) >= _ENTRIES:
        _keepable.pop(next(iter(_keepable)))
    _keepable[id(physical)] = (physical, frozenset(out))
    return frozenset(out)


def take_kept(ctx: ExecContext, reuse: Any) -> dict[int, BuildSide]:
    """The builds an earlier run of ``reuse``'s plan kept (pid -> BuildSide), pinned in the store
    until the query ends (``reuse.pins``)."""
    if not enabled(ctx):
        return {}
    out = {}
    for pid in sorted(keepable(ctx, reuse.key)):
        if reuse.physical.pipelines[pid] is not reuse.key.pipelines[pid]:
            continue
        got = reuse.store.get(reuse.key, pid)
        if got is not None and isinstance(got[0].plan, BuildSide):
            out[pid] = got[0].plan
            reuse.pins.append(got[1])
    return out


def _accounting_change(ctx: ExecContext) -> Any:
    """What tells the device cache an entry's arrays grew (a kept build made its hash table on
    demand): the after-query leak check then counts them (exec/device.py cache_device_bytes)."""
    cache = getattr(ctx.device, "cache", None)
    return getattr(cache, "arrays_changed", None)


def keep_build(ctx: ExecContext, pipe: Any) -> None:
    """After ``pipe`` ran: keep its build for later runs of the plan when it qualifies."""
    reuse = _REUSE.get(ctx)
    if reuse is None or reuse.physical is None or not enabled(ctx) or pipe.pid in reuse.kept:
        return
    if pipe is not reuse.key.pipelines[pipe.pid] or pipe.pid not in keepable(ctx, reuse.key):
        return
    if pipe.pid in ctx.__dict__.get("_shared_pids", {}):
        return  # another pipeline's build, renamed (exec/shared_results.py): that one is kept
    side = ctx.results.get(pipe.pid)
    if not isinstance(side, BuildSide) or side.partitions is not None or side.num_rows > KEEP_MAX_ROWS:
        return
    xp = ctx.backend.xp
    if not all(isinstance(a, xp.ndarray) for c in side.batch.columns.values() for a in c.held_arrays()):
        return  # (a small result a host pipeline took to the host)
    arrays: list = list(side.batch.columns.values())
    extra = 0
    # no probe needed the hash table yet (fused kernels probe dense tables of their own): it is not
    # made now either (a fresh connection's warm query would build it for nothing); the kept side
    # makes it if a later run's probe asks, counted at the rate the rows were reserved with
    unmade = unmade_copy(side, ctx.backend, len(pipe.sink.keys), on_made=_accounting_change(ctx))
    if unmade is not None:
        side = unmade
        extra = HASH_BYTES_PER_ROW * side.num_rows
    else:
        table = side.table
        if table is not None:
            arrays += [v for v in getattr(table, "__dict__", {}).values() if isinstance(v, xp.ndarray)]
        if side.valid_idx is not None:
            arrays.append(side.valid_idx)
    from hetdb.cache.fused_state import FusedState

    reuse.store.put(FusedState(reuse.key, pipe.pid, side, KEPT,
                               frozenset(_closure(reuse.physical, pipe.deps)), frozenset(), arrays,
                               extra_bytes=extra))
