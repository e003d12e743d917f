"""Compiled CPU pipelines (exec/compiled_cpu.py), per morsel: which generated loop a morsel's layout
takes (the spec from the plan and the morsel's encodings; loops kept by spec across queries), its
arguments, and the zone-map verdict of its row group (kept per table version and filters)."""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.backend.cpu import tuning
from hetdb.backend.cpu.codegen.expr_py import ExprError
from hetdb.backend.cpu.codegen.pipeline_py import (
    Aggregate,
    Input,
    Kernel,
    Mark,
    Materialize,
    Probe,
    Spec,
    compile_spec,
)
from hetdb.backend.cpu.codegen.probe_py import scattered
from hetdb.backend.cpu.groupby import key_runs
from hetdb.column import Column
from hetdb.exec.compiled_cpu_args import BoundArgs
from hetdb.exec.compiled_cpu_marks import MARK_KINDS
from hetdb.exec.operators.base import ExecContext
from hetdb.plan.expr import ColumnRef, Expr
from hetdb.plan.exprutil import substitute

# direct-indexed join tables up to this many entries (int32: 64 KiB) are probed without a filter
_DIRECT_NO_FILTER = 1 << 14
# the share of rows the first probe is expected to keep for the selection loop to test it (Probe.select)
_SELECT_SHARE = (0.05, 0.95)


# a probe whose table (direct entries or hash slots) takes at least this many bytes, more than a
# core's L2 cache, is looked up a block of rows at a time with prefetches (codegen/probe_prefetch.py)
PREFETCH_BYTES = 1 << 21


_OBJECT = np.dtype(object)


def _python_ints(col: Column) -> bool:
    """A HUGEINT / DECIMAL(19..38) column whose values did not all fit in int64 (exec/wide.py)."""
    return col.dtype.is_wide and getattr(col.data, "dtype", None) == _OBJECT


def _probed_bytes(t: Any) -> int:
    return int(t.direct.nbytes) if t.direct is not None else int(t.table.slots.nbytes)


def clustered(op: Any, side: Any, pay: Any) -> bool:
    """Whether a probe reads its payload from copies in the join table's key order (codegen/probe_py):
    an inner (or marking) probe of a build whose keys repeat, large enough that its payload does not
    stay in the caches (backend/cpu/tuning.py: cluster_payload_rows), with a payload, and whose rows
    are not in key order already."""
    t = side.table
    if op.kind not in ("inner", *MARK_KINDS) or t is None or t.unique or t.order is None:
        return False
    return t.num_rows >= tuning.get("cluster_payload_rows") and bool(pay) and scattered(t)


def copy_in_key_order(ctx: ExecContext, side: Any, pay: Any) -> None:
    """The payload copies of a clustered probe (probe_py.clustered_payload), made before the workers
    on every kernel thread and reserved for the query; when the reservation is refused the table is
    marked as not worth copying and its probes read the build rows where they are."""
    from hetdb.backend.cpu.codegen.probe_py import clustered_payload
    from hetdb.exec.columns import column_nbytes
    from hetdb.exec.memory import Reservation

    t = side.table
    made = t.clustered or {}
    need = sum(column_nbytes(side.batch.columns[f.cid]) for f in pay if f.cid not in made)
    if need:
        res = Reservation(ctx.memory)
        if not res.try_grow(need):
            t.scattered = False
            return
        ctx.cleanup.append(res.close)
    for f in pay:
        clustered_payload(side, f.cid)


def pass_share(op: Any, side: Any) -> float:
    """The share of probe rows a probe is expected to let through: for a foreign key into a
    dimension, the share of the dimension's rows the build kept (1 when unknown)."""
    share = min(1.0, side.num_rows / side.scanned_rows) if side.scanned_rows else 1.0
    return 1.0 - share if op.kind == "anti" else share


def morsel_runs(p: Any, cols: dict[str, Column]) -> int:
    """When the morsel's group key column is sorted, without NULLs, the number of its key runs
    (at least the groups it makes), else 0."""
    if p.run_key is None:
        return 0
    col = cols[p.run_key]
    data = col.data
    if col.validity is not None or not isinstance(data, np.ndarray) or data.dtype.kind != "i":
        return 0
    return max(0, int(key_runs(data)))


# zone-map verdicts of the row groups compiled scans read, per table reader (one per committed version:
# a re-created table gets another) and (pushed filters' number, row group). Deciding one took 50-60 us
# of GIL-held Python per morsel; a query run again (the same filters, the same version) finds it here.
_VERDICTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FILTER_SETS: dict[tuple, int] = {}   # pushed filters -> their number (never reused)
_FILTER_NUMBERS = itertools.count()
_VERDICT_LOCK = threading.Lock()
_MAX_VERDICTS = 1 << 16


def verdict(ctx: ExecContext, src: Any, reader: Any, p: Any, rg: int) -> str:
    if p.verdicts is None:
        if not src.scan.filters or not ctx.options.zone_maps:
            return src.verdict(ctx, reader, rg)
        with _VERDICT_LOCK:
            number = _FILTER_SETS.get(src.scan.filters)
            if number is None:
                if len(_FILTER_SETS) >= _MAX_VERDICTS:
                    _FILTER_SETS.clear()
                number = _FILTER_SETS[src.scan.filters] = next(_FILTER_NUMBERS)
            try:
                table = _VERDICTS.setdefault(reader, {})
            except TypeError:  # a reader that cannot be weakly referenced: decided per morsel
                return src.verdict(ctx, reader, rg)
        p.verdicts = (number, table)
    number, table = p.verdicts
    hit = table.get((number, rg))
    if hit is None:
        hit = src.verdict(ctx, reader, rg)
        with _VERDICT_LOCK:
            if len(table) >= _MAX_VERDICTS:
                table.clear()
            table[(number, rg)] = hit
    return hit


def kernel_for(p: Any, sink: Any, cols: dict[str, Column], runs: bool = False) -> Kernel | str:
    # a morsel's layout in a few booleans (the types of a table's columns do not change between its
    # pages): building the full signature per morsel cost tens of us of GIL-held Python
    fast = (runs, *[(cols[c].validity is not None, cols[c].dictionary is not None,
                     getattr(cols[c].data, "dtype", None) == _OBJECT) for c in p.kernel_cols])
    hit = p.fast_kernels.get(fast)
    if hit is not None:
        return hit
    hit = p.fast_kernels[fast] = _signature_kernel(p, sink, cols, runs)
    return hit


def _signature_kernel(p: Any, sink: Any, cols: dict[str, Column], runs: bool) -> Kernel | str:
    sig: list[Any] = [runs]
    plain = {c for c in p.base if c in p.plan.referenced and cols[c].dtype.kind == "string"
             and cols[c].dictionary is None}
    host = host_filters(p, plain) if plain else {}
    if host is None:
        return f"column {sorted(plain)[0]} is a plain (not dictionary-encoded) string page"
    for c in p.base:
        if c not in p.plan.referenced or c in plain:
            continue  # read only for the gather after the loop (or by a host filter): any encoding will do
        col = cols[c]
        if _python_ints(col):
            return f"column {c} holds DECIMAL(38) / HUGEINT values past 64 bits"
        sig.append((c, col.dtype, col.validity is not None, col.dictionary is not None))
    sig += [(cid, T.BOOL, False, False) for cid, _ in host.values()]
    key = tuple(sig)
    hit = p.kernels.get(key)
    if hit is not None:
        return hit
    inputs = tuple(Input(c, t, nullable, d) for c, t, nullable, d in sig[1:])
    stages: list[Any] = []
    probes = iter(p.probes)
    for i, (kind, x) in enumerate(p.stages):
        if kind == "filter" and i in host:
            stages.append(("filter", ColumnRef(T.BOOL, host[i][0])))
        elif kind == "filter":
            stages.append(("filter", x))
        elif kind == "project":
            stages.append(("project", tuple((f.cid, e) for f, e in x.exprs if f.cid in p.plan.produced)))
        else:
            op, side, pay = next(probes)
            t = side.table
            if any(_python_ints(side.batch.columns[f.cid]) for f in pay):
                return "a build column holds DECIMAL(38) / HUGEINT values past 64 bits"
            payload = tuple(Input(f.cid, f.dtype, side.batch.columns[f.cid].validity is not None,
                                  side.batch.columns[f.cid].dictionary is not None, f.cid in p.plan.row_keys)
                            for f in pay)
            # the marking probe runs as an inner one whose build rows the sink marks
            kind = "inner" if op.kind in MARK_KINDS else op.kind
            first = not any(isinstance(x, Probe) for x in stages)
            stages.append(Probe(kind, tuple(op.left_keys), "direct" if t.direct is not None else "hash",
                                t.num_keys if t.pack is None else 1, t.pack is not None, bool(t.unique),
                                side.valid_idx is not None, payload, prefilter(t),
                                _residual(p, op), first and _SELECT_SHARE[0] <= pass_share(op, side) <= _SELECT_SHARE[1],
                                _probed_bytes(t) >= PREFETCH_BYTES, clustered(op, side, pay)))
    if p.marks is not None:
        out: Any = Mark()
    elif p.plan.materialize:
        out = Materialize()
    else:
        out = Aggregate(tuple(e for _, e in sink.keys), tuple((a.op, a.arg) for _, a in sink.aggs), runs,
                        not runs and p.direct is not None)
    spec = Spec(inputs, tuple(stages), out)
    try:
        kernel: Any = _SPEC_KERNELS.get(spec)
    except TypeError:  # a literal that does not hash: generated anew each time
        kernel, spec = None, None
    if kernel is None:
        try:
            kernel = compile_spec(spec)
        except ExprError as e:
            kernel = str(e)
        if spec is not None:
            if len(_SPEC_KERNELS) >= _MAX_SPEC_KERNELS:
                _SPEC_KERNELS.clear()
            _SPEC_KERNELS[spec] = kernel
    p.kernels[key] = kernel
    if host and not isinstance(kernel, str):
        p.host[id(kernel)] = list(host.values())
    return kernel


def host_filters(p: Any, plain: set[str]) -> dict[int, tuple[str, Expr]] | None:
    """The leading filters (the scan's, before any probe) over plain-string columns ``plain``, by
    stage: each is evaluated per morsel by the operators (their string kernels: LIKE over the
    bytes) into a BOOL column the loop reads as ``__host<stage>``, so the rest of the pipeline
    still runs compiled. None when another part of the loop reads those columns, or when the loop
    aggregates: TPC-H q13's orders aggregation compiled this way gave each of 16 workers a table of up
    to all 1M customers at SF 10 (q13 469 -> 543 ms at the checkpoint), where the operators' batch
    partials stay small; materializing loops (q20's and q09's part scans behind LIKE) gain."""
    if not p.plan.materialize:
        return None
    host: dict[int, tuple[str, Expr]] = {}
    others: list[Expr] = []
    leading = True
    for i, (kind, x) in enumerate(p.stages):
        if kind == "probe":
            leading = False
            others += list(x.left_keys) + ([x.residual] if x.residual is not None else [])
        elif kind == "filter" and leading and x.columns() & plain:
            host[i] = (f"__host{i}", x)
        elif kind == "filter":
            others.append(x)
        else:
            others += [e for _, e in x.exprs]
    if any(e.columns() & plain for e in others):
        return None
    return host


# generated loops by spec: a query run again reuses its kernels (generating the source of one took
# about 0.3 ms, run before the first morsel of each pipeline)
_SPEC_KERNELS: dict[Spec, Any] = {}
_MAX_SPEC_KERNELS = 512


def _residual(p: Any, op: Any) -> Expr | None:
    """The probe's residual; the marking probe's over the loop's columns (its probe side through
    the projections before it, which the loop does not compute for the marking probe)."""
    if op.residual is None or op.kind not in MARK_KINDS:
        return op.residual
    return substitute(op.residual, p.plan.alias)


# direct group slots (Aggregate.direct) up to this many (int64 slots: 256 KiB per worker)
DIRECT_GROUP_SLOTS = 1 << 15
# (backend/cpu/tuning.py direct_scan_slots: up to that many when the only key is a scanned integer column
# whose range the zone maps give)


def scan_key_range(reader: Any, column: str) -> tuple[int, int] | None:
    """(min, max) of a stored integer column over every row group's zone map; None when a zone map
    has no integer bounds (a page of only NULLs has none and adds nothing)."""
    lo = hi = None
    for rg in range(reader.num_row_groups):
        z = reader.zone_map(column, rg)
        if z.min is None or z.max is None:
            if z.null_count < z.num_rows:
                return None
            continue
        if not isinstance(z.min, int) or not isinstance(z.max, int):
            return None
        lo = z.min if lo is None else min(lo, z.min)
        hi = z.max if hi is None else max(hi, z.max)
    return None if lo is None else (lo, hi)


def direct_ranges(plan: Any, sink: Any, probes: list,
                  scan_range: Any = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(lowest value, values + 1 for NULL) per group key when every key is a column of a join
    build the loop reads (its range known: integers' min/max, a dictionary's codes, the build's
    row numbers for plain strings) and the ranges' product is at most DIRECT_GROUP_SLOTS, or the one
    key is a scanned integer column whose range ``scan_range(cid)`` knows (zone maps) spanning at most
    ``direct_scan_slots`` (tuning); else None (the group table hashes)."""
    if not sink.keys:
        return None
    payload = {f.cid: side for _, side, pay in probes for f in pay}
    if len(sink.keys) == 1 and scan_range is not None:
        e = sink.keys[0][1]
        while isinstance(e, ColumnRef) and e.cid in plan.alias:
            e = plan.alias[e.cid]
        if isinstance(e, ColumnRef) and e.cid not in payload and e.cid not in plan.produced \
                and e.dtype.kind in ("int32", "int64", "date"):
            bounds = scan_range(e.cid)
            if bounds is not None and bounds[1] - bounds[0] + 2 <= tuning.get("direct_scan_slots"):
                return np.array([bounds[0]], np.int64), np.array([bounds[1] - bounds[0] + 2], np.int64)
    lows, sizes, total = [], [], 1
    for _, e in sink.keys:
        while isinstance(e, ColumnRef) and e.cid in plan.alias:
            e = plan.alias[e.cid]
        side = payload.get(e.cid) if isinstance(e, ColumnRef) else None
        if side is None:
            return None
        cid = e.cid
        col = side.batch.columns[cid]
        kind = e.dtype.kind
        if kind == "string":
            if cid in plan.row_keys:
                lo, hi = 0, side.batch.num_rows - 1
            elif col.dictionary is not None:
                lo, hi = 0, len(col.dictionary) - 1
            else:
                return None
        elif kind in ("int32", "int64", "date", "bool") or (kind == "decimal" and not e.dtype.is_wide):
            data = np.asarray(col.data)
            if col.validity is not None:
                data = data[np.asarray(col.validity, dtype=bool)]
            if data.shape[0] == 0:
                lo, hi = 0, -1
            else:
                lo, hi = int(data.min()), int(data.max())
        else:
            return None
        size = hi - lo + 2  # its values and NULL
        total *= size
        if total > DIRECT_GROUP_SLOTS:
            return None
        lows.append(lo)
        sizes.append(size)
    return np.array(lows, np.int64), np.array(sizes, np.int64)


def prefilter(t: Any) -> str:
    """Whether the loop tests the table's runtime join filter before probing it: always before a
    hash probe, and before a direct table larger than the cache-resident bitmap would be."""
    from hetdb.backend.cpu.join_filter import filter_of

    if t.direct is not None and t.direct.shape[0] <= _DIRECT_NO_FILTER:
        return ""
    return "bitmap" if filter_of(t).bitmap else "bloom"


def arguments(ctx: ExecContext, p: Any, kernel: Kernel, cols: dict[str, Column]) -> list[Any]:
    bound = p.bound.get(id(kernel))
    if bound is None or bound.kernel is not kernel:
        bound = p.bound[id(kernel)] = BoundArgs(ctx, p.probes, kernel, p.direct)
    return bound.bind(cols)


# A pipeline whose expressions have more nodes is not compiled: Numba's compile time and memory grow
# steeply with one function's size (an 800-term AND chain took minutes and ~19 GB).
MAX_EXPRESSION_NODES = 400


def expression_nodes(plan: Any, sink: Any) -> int:
    """Expression nodes the generated loop would evaluate (filters, projections, probe residuals
    and keys, group keys and aggregate arguments)."""
    roots: list[Any] = []
    for kind, x in plan.stages:
        if kind == "filter":
            roots.append(x)
        elif kind == "project":
            roots.extend(e for _, e in x.exprs)
        else:
            roots.extend(x.left_keys)
    if sink is not None:
        roots.extend(e for _, e in sink.keys)
        roots.extend(a.arg for _, a in sink.aggs if a.arg is not None)
    count, stack = 0, roots
    while stack:
        e = stack.pop()
        count += 1
        stack.extend(e.children())
    return count


def run_groups(p: Any, runs: int) -> int:
    """Groups a morsel's key-run table is made for (0: not over key runs): every run, or after the
    first morsel the most groups per run a morsel kept (a filter or probe before the aggregation
    drops most runs: TPC-H q11's 16 tables of ~125k runs kept ~20k groups each at SF 10, and the
    whole table is zeroed when made), with a quarter more room; the table grows when short. Plus the
    loop's room for one row's expansion beyond the last group."""
    if not runs:
        return 0
    if p.run_morsels:
        runs = min(runs, int(runs * p.run_fill * 1.25) + 64)
    return runs + p.expansion


def scan_range_of(ctx: Any, src: Any, names: dict[str, str]) -> Any:
    """The zone maps' (min, max) of a scanned column by cid (None: unknown, or direct slots of that
    range in every worker would take more than an eighth of ``host_memory_limit``: they are held
    whatever the limit), for a table scan."""
    from hetdb.exec.operators.scan import TableScan

    if not isinstance(src, TableScan) or not ctx.options.zone_maps:
        return None
    room = ctx.memory.limit // (8 * 8 * max(1, int(getattr(ctx.options, "threads", 1) or 1)))

    def bounds(cid: str) -> tuple[int, int] | None:
        got = scan_key_range(ctx.db.table(src.scan.table), names[cid]) if cid in names else None
        return got if got is not None and got[1] - got[0] + 2 <= room else None
    return bounds
