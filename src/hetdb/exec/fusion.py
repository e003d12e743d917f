"""Fused GPU pipelines: ``TableScan -> (Filter | inner HashProbe)* -> HashAggregate`` runs as one
generated kernel per row group (scan filters, dense-key probes, grouping and aggregation in registers
and shared memory, no intermediate batches), through ``backend/gpu/codegen``. Everything else, and
every batch the kernel cannot take (a page with NULLs, a plain-string page), runs operator at a time;
the sink's statistics say which way a pipeline ran and why (EXPLAIN ANALYZE).

What fuses:
- aggregates sum, count, count(*), min, max, avg over numeric columns, with or without GROUP BY;
- group keys that are columns with a small dense domain (codegen/groups.py): dictionary codes and
  zone-map-bounded integers of the scanned table, build-side payloads (compacted to the ranks of
  their values among the build rows); the combined domain is bounded (MAX_FUSED_GROUPS);
- inner joins on one integer key that is unique on the build side (dense-array probes carrying the
  build columns later stages need); build-side filters ran when the build was made;
- filters on dictionary strings: the predicate is evaluated once over the dictionary and the kernel
  probes a code -> keep lookup (a dense probe with no payload);
- swapped star joins: when the optimizer made the big (fact) side the *build* side of the last join
  (``fact scan -> probes -> HashBuild`` consumed by ``dimension scan -> HashProbe -> HashAggregate``),
  the fact pipeline is deferred and runs inside the consumer's kernel with the dimension as a dense
  probe (an inner join is symmetric; the dimension key must be unique). Swaps chain: a deferred
  ``dimension scan -> HashProbe(fact build) -> HashBuild`` is deferred in turn, and the final
  consumer's kernel probes every dimension of the chain.

Grouped results go into the aggregation's partial states exactly like an operator-at-a-time batch
(same key and state columns, dictionary strings keep their dictionary), so whatever follows the
aggregation cannot tell which way it ran.

This module plans; exec/fusion_swaps.py defers fact-side builds for swapped joins; exec/fusion_run.py
runs a planned pipeline.
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import UnsupportedError
from hetdb.exec.columns import concat_batches
from hetdb.exec.compiled_features import expr_refusal, off, on
from hetdb.exec.fusion_forms import forms_on, probe_form, probe_shape
from hetdb.exec.fusion_host import host_copies, host_dense_probe, rank_bound, upload_host_products
from hetdb.exec.fusion_reuse import _REUSE, REUSED, _remember
from hetdb.exec.fusion_swaps import (
    _INT_KEYS,
    _after_first_probe,
    _deferrable,
    _deferrals,
    _first_probe,
    _materialize,
    _single_key_inner,
    _swap_candidate,
)
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild, key_name
from hetdb.exec.operators.scan import TableScan
from hetdb.plan.expr import Cast, ColumnRef, Expr, Field
from hetdb.plan.exprutil import conjuncts, substitute
from hetdb.types import DataType

_NUMERIC = ("int32", "int64", "decimal", "date", "float64")
_GROUP_KINDS = ("int32", "int64", "date", "string")
FUSED = "fused into one generated kernel"


class _NotFused(Exception):
    """Why a pipeline does not fuse (shown by EXPLAIN ANALYZE)."""


@dataclass
class GroupKey:
    """How the kernel's key ``index`` decodes into the aggregation's key column ``dtype``."""

    domain: Any                  # codegen.groups.KeyDomain (kernel key range, rank -> value)
    dtype: DataType
    dictionary: Column | None    # dictionary strings: the dictionary the codes index
    host: Any = None             # (domain, dictionary) with host arrays, made once (fusion_run._on_host)
    host_values: Any = None      # the domain's values as a host array, where the plan made them there


@dataclass
class FusionPlan:
    pipeline: Any = None                     # codegen FusedPipeline
    tables: list = field(default_factory=list)   # DenseJoinTable per probe
    slots: list[tuple[int, str, int]] = field(default_factory=list)  # (agg j, state part, kernel value)
    group_keys: list[GroupKey] = field(default_factory=list)
    scan: TableScan | None = None            # the scanned (fact) table
    chain: list | None = None                # swapped joins: deferred pipelines, fact side first
    deferred: bool = False                   # this pipeline runs inside its consumer's kernel
    # per aggregation key: its kernel key (an index into group_keys), or a DependentKey the groups
    # look up in a join's build rows; None: the aggregation's keys are group_keys in order
    key_sources: list | None = None


@dataclass
class DependentKey:
    """A group key that is a build column of a dense join whose probe key is another group key (TPC-H
    q03's o_orderdate, o_shippriority of the orders row l_orderkey finds): a function of that key, so
    the kernel does not group by it; each group's value is the build column at the build row its
    probe key finds."""

    table: int          # index of the join's DenseJoinTable in FusionPlan.tables
    probe_key: int      # the kernel key (index into group_keys) holding the probe key
    column: Column      # the build column (by build row)


# ---- planning ---------------------------------------------------------------------------------------
def plan_fusion(ctx: ExecContext, pipe: Any) -> tuple[FusionPlan | None, str]:
    """(plan, how it fuses) when the pipeline runs fused, else (None, why not; empty when the pipeline
    is no candidate). Deferred fact pipelines this pipeline needs run first unless it takes them in."""
    reuse = _REUSE.get(ctx)
    if reuse is not None and pipe.pid in reuse.presets:
        entry = reuse.presets[pipe.pid]
        return entry.plan, f"{entry.why} ({REUSED})"
    d = _deferrals(ctx)
    swap = _swap_candidate(ctx, pipe, d)
    for op in pipe.ops:
        if isinstance(op, HashProbe) and op.build_pipeline in d.pending and op.build_pipeline != swap:
            _materialize(ctx, d, op.build_pipeline, None)
    sink = pipe.sink
    if isinstance(sink, HashBuild):
        if _deferrable(ctx, pipe, d):
            d.pending[pipe.pid] = pipe
            if swap is not None:
                d.inner[pipe.pid] = swap
            return FusionPlan(deferred=True), ("deferred: this fact-side build runs inside the fused "
                                               "kernel of the pipeline that probes it")
        if swap is not None:
            _materialize(ctx, d, swap, None)
        return None, ""
    if not isinstance(sink, HashAggregate):
        if swap is not None:
            _materialize(ctx, d, swap, None)
        return None, ""  # not a candidate: nothing to report
    if swap is not None:
        chain = [d.pending[swap]]
        while chain[0].pid in d.inner:
            chain.insert(0, d.pending[d.inner[chain[0].pid]])
        try:
            plan = _plan_checked(ctx, pipe, chain)
        except _NotFused as e:
            _materialize(ctx, d, swap, f"swapped into pipeline {pipe.pid}: {e}")
        else:
            for p in chain:
                del d.pending[p.pid]
                ctx.stat(p.sink.op_id).fused = (f"runs inside pipeline {pipe.pid}'s fused kernel "
                                                "(join sides swapped)")
            inside = ", ".join(str(p.pid) for p in chain)
            why = (f"{FUSED} (scans {plan.scan.scan.table}, join sides swapped: pipeline "
                   f"{inside} runs inside it; {_groups_text(plan)})")
            _remember(ctx, pipe, plan, why)
            return plan, why
    try:
        plan = _plan_checked(ctx, pipe, None)
    except _NotFused as e:
        return None, str(e)
    why = f"{FUSED} ({_groups_text(plan)})"
    _remember(ctx, pipe, plan, why)
    return plan, why


def _groups_text(plan: FusionPlan) -> str:
    from hetdb.backend.gpu.codegen.groups import combined_groups

    if not plan.group_keys:
        return "no GROUP BY"
    return f"{combined_groups(k.domain for k in plan.group_keys)} dense groups"



def _project(alias: dict[str, Expr], op: ProjectOp) -> None:
    """Record ``op``'s outputs as expressions over the kernel's base columns."""
    new = {}
    for f, e in op.exprs:
        e = substitute(e, alias)
        if e.dtype != f.dtype:
            e = Cast(f.dtype, e)
        if not (isinstance(e, ColumnRef) and e.cid == f.cid):
            new[f.cid] = e
    alias.update(new)



@dataclass
class _Join:
    """A join the kernel does as a dense probe: ``left_key`` over the pipeline's columns, ``key``
    per build row, ``batch`` the build rows whose ``fields`` become pipeline columns."""

    left_key: Expr
    key: Column
    batch: Batch
    fields: tuple[Field, ...]
    share: float = -1.0  # the share of the dimension's rows the build kept (-1: unknown)


def _join_of_probe(ctx: ExecContext, op: HashProbe, alias: dict[str, Expr]) -> _Join:
    if not _single_key_inner(op):
        raise _NotFused(f"{op.kind} join with {len(op.left_keys)} keys"
                        f"{' and a residual' if op.residual is not None else ''} is not fused")
    side = ctx.results[op.build_pipeline]
    if side.partitions is not None:
        raise _NotFused("the join's build side was partitioned (spilled)")
    return _Join(substitute(op.left_keys[0], alias), side.batch.columns[key_name(0)], side.batch,
                 op.right_fields, side.num_rows / side.scanned_rows if side.scanned_rows else -1.0)


def _join_of_dimension(ctx: ExecContext, pipe: Any, fact: Any, alias: dict[str, Expr]) -> _Join:
    """The swapped join of ``pipe`` with the deferred ``fact`` pipeline it probes: ``pipe``'s
    (dimension) scan, filtered, becomes the dense build keyed like ``fact``'s hash build."""
    src, op = pipe.source, _first_probe(pipe)
    if src.runtime_filters:
        # runtime join filters test rows against finished builds; the build this scan would test
        # against is the deferred fact pipeline, which has no rows yet (it runs inside the kernel)
        src = dataclasses.replace(src, runtime_filters=())
    gsrc = src.init_global(ctx)
    batches = []
    for index, rg in enumerate(src.morsels(ctx, gsrc)):
        ctx.set_morsel(index)
        batches.extend(src.read(ctx, rg, gsrc))
    if batches:
        batch = concat_batches(ctx.backend, batches)
    else:
        from hetdb.exec.columns import empty_batch

        batch = empty_batch(ctx.backend, src.scan.fields)
    for proj in pipe.ops:
        if proj is op:
            break
        (batch,) = proj.execute(ctx, batch, None, None)  # leading projections of the dimension rows
    k = op.left_keys[0]
    key = ctx.evaluator.cast(ctx.evaluator.evaluate(k, batch), k.dtype)
    total = int(getattr(ctx.db.table(src.scan.table), "num_rows", 0) or 0)
    return _Join(substitute(fact.sink.keys[0], alias), key, batch, op.left_fields,
                 batch.num_rows / total if total else -1.0)


def _plan_checked(ctx: ExecContext, pipe: Any, chain: list | None) -> FusionPlan:
    """_plan, with a column the planner cannot find (an operator shape it does not know) turned
    into a refusal: the pipeline then runs operator at a time instead of failing the query."""
    try:
        return _plan(ctx, pipe, chain)
    except KeyError as e:
        raise _NotFused(f"unsupported pipeline shape (column {e} not found)") from None


def _plan(ctx: ExecContext, pipe: Any, chain: list | None) -> FusionPlan:
    """The fused plan of ``pipe`` (with the deferred pipelines of ``chain`` swapped in, the fact
    side first), or _NotFused."""
    sink: HashAggregate = pipe.sink
    if sink.raw_mode:
        raise _NotFused("DISTINCT aggregates are not fused")
    src = pipe.source if chain is None else chain[0].source
    if not isinstance(src, TableScan):
        raise _NotFused(f"source {type(src).__name__} is not a stored-table scan")
    ops: list = list(pipe.ops)
    if chain is not None:  # (consumer, fact) pairs: the consumer's scan joins the fact rows
        ops = list(chain[0].ops)
        for fact, consumer in zip(chain, [*chain[1:], pipe]):
            ops += [(consumer, fact), *_after_first_probe(consumer)]

    conj: list[Expr] = [c for f in src.scan.filters for c in conjuncts(f)]
    joins: list[_Join] = []
    alias: dict[str, Expr] = {}  # projected cid -> expression over scanned and build columns
    for op in ops:
        if isinstance(op, tuple):
            joins.append(_join_of_dimension(ctx, *op, alias))
        elif isinstance(op, FilterOp):
            conj += conjuncts(substitute(op.predicate, alias))
        elif isinstance(op, ProjectOp):
            _project(alias, op)
        elif isinstance(op, HashProbe):
            joins.append(_join_of_probe(ctx, op, alias))
        else:
            raise _NotFused(f"{type(op).__name__} is not fused")

    types = {f.cid: f.dtype for f in src.scan.fields}
    for j in joins:
        types.update({f.cid: f.dtype for f in j.fields})
    group_cids = []
    aggs, slots = _aggregates(sink, alias)
    all_keys = [(f, substitute(e, alias)) for f, e in sink.keys]
    dependent = {} if off("dependent_keys") else _dependent_keys(all_keys, joins)
    keys = [(f, e) for f, e in all_keys if not (isinstance(e, ColumnRef) and e.cid in dependent)]
    for _, e in keys:
        if not isinstance(e, ColumnRef):
            raise _NotFused(f"group key {e} is not a column (dense domains need columns)")
        if e.dtype.kind not in _GROUP_KINDS:
            raise _NotFused(f"group key {e} of type {e.dtype} has no dense domain")
        group_cids.append(e.cid)
    lookups = [c for c in conj if _is_lookup(c, types)]
    filters = [c for c in conj if not _is_lookup(c, types)]
    needed: set[str] = set()
    for e in [*filters, *lookups, *(j.left_key for j in joins), *(a.arg for a in aggs if a.arg is not None)]:
        needed |= e.columns()
    why = expr_refusal([*filters, *(j.left_key for j in joins), *(a.arg for a in aggs)])
    if why:
        raise _NotFused(why)

    reader = ctx.db.table(src.scan.table)
    name_of = dict(zip((f.cid for f in src.scan.fields), src.scan.column_names))
    inputs = tuple(dict.fromkeys((f.cid, f.dtype) for f in src.scan.fields
                                 if f.cid in needed or f.cid in group_cids))
    for cid, dtype in inputs:
        if dtype.kind not in _NUMERIC and dtype.kind != "string":
            raise _NotFused(f"column {cid} of type {dtype} is not fused")
        if dtype.kind == "string" and reader.dictionary(name_of[cid]) is None:
            raise _NotFused(f"column {cid} is a plain (not dictionary-encoded) string")
    if chain is not None:
        _check_pages(reader, [name_of[c] for c, _ in inputs])
    from hetdb.backend.gpu.codegen.groups import (
        MAX_FUSED_GROUPS,
        combined_groups,
        dense_limit,
        domain_refusal,
    )

    limit = dense_limit(None if off("wide_dense_groups") else getattr(reader, "num_rows", None))
    scan_domains = _scan_key_domains(reader, name_of, keys, group_cids, joins, limit)

    from hetdb.backend.gpu.codegen import DenseProbe

    probes, tables = [], []
    scan_dicts: dict[str, Column] = {}

    def scan_dictionary(cid: str) -> Column:
        if cid not in scan_dicts:
            from hetdb.exec.hostutil import column_to_device

            host = reader.dictionary(name_of[cid])
            scan_dicts[cid] = column_to_device(ctx.backend, host, ctx.dict_cache)
            if scan_dicts[cid] is not host:
                scan_dicts[cid].host_source = host  # (the finish decodes with it: fusion_run._on_host)
        return scan_dicts[cid]

    def add_lookups(cids: set[str], dictionary_of) -> None:
        for c in lookups:
            (cid,) = c.columns()
            if cid in cids:
                table = _lookup_table(ctx, c, cid, types[cid], dictionary_of(cid))
                form = probe_form([], {})
                if form != "rows":
                    table.probe_arrays(form)
                probes.append(DenseProbe(ColumnRef(types[cid], cid, nullable=False), form=form))
                tables.append(table)

    add_lookups({c for c, _ in inputs}, scan_dictionary)
    groups: dict[str, tuple[str, Any, Column | None]] = {}  # key cid -> (kernel cid, domain, dictionary)
    join_table: list[int] = []  # per join, the index of its table in ``tables``
    copied = host_copies(ctx, joins, needed, set(group_cids))
    for j, host in zip(joins, copied):
        probe, table, provided = _dense_probe(ctx, j, needed, set(group_cids), groups, host)
        probes.append(probe)
        join_table.append(len(tables))
        tables.append(table)
        add_lookups(provided, lambda cid, j=j: j.batch.columns[cid].dictionary)
    host_values: dict = {}  # group key cid -> its compacted values as planned on the host
    if any(host is not None for host in copied):
        planned = [tables[i] for i, host in zip(join_table, copied) if host is not None]
        host_values = upload_host_products(ctx, planned, groups)

    from hetdb.backend.gpu.codegen.groups import KeyDomain, zone_map_domain

    group_exprs, group_keys = [], []
    for (_, e), cid in zip(keys, group_cids):
        if cid in groups:
            kcid, domain, dictionary = groups[cid]
            group_exprs.append(ColumnRef(T.INT32, kcid, nullable=False))
        elif cid in name_of:
            name = name_of[cid]
            group_exprs.append(e)
            if e.dtype.kind == "string":
                dictionary = scan_dictionary(cid)
                domain = KeyDomain(0, len(dictionary) - 1)
            else:
                dictionary = None
                domain = scan_domains.get(cid) or zone_map_domain(
                    reader.zone_map(name, rg) for rg in range(reader.num_row_groups))
                if domain is None:
                    raise _NotFused(f"group key {e} has no zone-map bounds")
        else:
            raise _NotFused(f"group key {e} is not available to the kernel")
        group_keys.append(GroupKey(domain, e.dtype, dictionary, host_values=host_values.get(cid)))
    refusal = domain_refusal([k.domain for k in group_keys], limit)
    if refusal is not None:
        raise _NotFused(refusal)

    from hetdb.backend.gpu.codegen import AGGREGATE, FusedPipelineSpec, compile_fused_pipeline
    from hetdb.backend.gpu.codegen.expr_cuda import ExprError

    # with gpu_compressed_cache the fact pages stay compressed in device memory: the kernel decodes
    # them, compiled for gpu_encoded_min_blocks resident blocks per SM
    encoded = ctx.device is not None and bool(ctx.options.gpu_compressed_cache)
    spec = FusedPipelineSpec(inputs, tuple(filters), tuple(probes), tuple(group_exprs), tuple(aggs),
                             AGGREGATE, encoded=encoded, fold=on("fused_fold"),
                             block=256 if on("fused_block256") else 128,
                             min_blocks=int(getattr(ctx.options, "gpu_encoded_min_blocks", 0)) if encoded else 0)
    if not off("fused_eager"):
        from hetdb.backend.gpu.codegen.generate import FILTER_GUESS, eager_columns

        # a dense join keeps its build rows' share of the key range; a dictionary lookup (every
        # code a row) keeps an unknown share
        hits = [FILTER_GUESS if not t.payload_columns and t.num_rows == t.size else t.num_rows / max(t.size, 1)
                for t in tables]
        spec = dataclasses.replace(spec, eager=eager_columns(spec, hits))
        if forms_on():
            spec = probe_shape(spec, hits, {join_table[i]: j.share for i, j in enumerate(joins)})
    reason = spec.unfusable_reason()
    if reason is not None:
        raise _NotFused(reason)
    try:
        fp = compile_fused_pipeline(spec)
    except (UnsupportedError, ExprError) as e:
        raise _NotFused(str(e)) from None
    groups = combined_groups(k.domain for k in group_keys)
    if groups > MAX_FUSED_GROUPS:
        # a wide domain's accumulators (one int64 per group and accumulator) must leave most of
        # what operators may use free; run_fused reserves them
        need = state_bytes(fp, groups)
        free = ctx.memory.limit - ctx.memory.used
        if need * 4 > free:
            raise _NotFused(f"{groups} dense groups need {need:,} bytes of accumulators, more than a "
                            f"quarter of the {free:,} bytes operators may still use")
    sources = None
    if dependent:
        sources = []
        for _, e in all_keys:
            if isinstance(e, ColumnRef) and e.cid in dependent:
                ji, probe_cid = dependent[e.cid]
                if tables[join_table[ji]].pending is not None:
                    tables[join_table[ji]].upload_pending()  # (the finish reads its rows)
                sources.append(DependentKey(join_table[ji], group_cids.index(probe_cid),
                                            joins[ji].batch.columns[e.cid]))
            else:
                sources.append(group_cids.index(e.cid))
    return FusionPlan(fp, tables, slots, group_keys, src, chain, key_sources=sources)


def _dependent_keys(keys: list[tuple[Field, Expr]], joins: list[_Join]) -> dict[str, tuple[int, str]]:
    """Group keys that are build columns of a join whose probe key is itself a (kept) group key:
    cid -> (join index, the probe key's cid). Joins here are dense, so their build keys are unique
    and a build column is a function of the probe key."""
    cids = {e.cid for _, e in keys if isinstance(e, ColumnRef)}
    out: dict[str, tuple[int, str]] = {}
    for _, e in keys:
        if not isinstance(e, ColumnRef):
            continue
        for ji, j in enumerate(joins):
            probe = j.left_key
            if isinstance(probe, ColumnRef) and probe.cid in cids and probe.cid != e.cid \
                    and any(f.cid == e.cid for f in j.fields):
                out[e.cid] = (ji, probe.cid)
                break
    # (a probe key that is a dependent key itself stays a kernel key: no chains of look-ups)
    return {cid: dep for cid, dep in out.items() if dep[1] not in out}


def state_bytes(fp: Any, groups: int) -> int:
    """Device bytes of a fused aggregation's accumulators over ``groups`` dense groups."""
    return 8 * max(groups, 1) * len(getattr(getattr(fp, "kernel", None), "accumulators", ()) or (0, 0))


def _scan_key_domains(reader: Any, name_of: dict[str, str], keys: list, group_cids: list[str],
                      joins: list[_Join], limit: int) -> dict[str, Any]:
    """The domains of group keys that are scanned integer columns (zone maps), checked against the
    fused limit before any dense join table is built: a pipeline grouping by a wide key (TPC-H
    q11's ps_partkey) is refused without building (and syncing for) its joins' tables on every run.
    Checked only when every key is a scanned column, so the refusal is the one the full check makes
    (a key from a join can have an empty domain, which makes any product fit)."""
    from hetdb.backend.gpu.codegen.groups import KeyDomain, domain_refusal, zone_map_domain

    joined = {f.cid for j in joins for f in j.fields}
    if any(cid in joined or cid not in name_of for cid in group_cids):
        return {}
    domains, ints = [], {}
    for (_, e), cid in zip(keys, group_cids):
        if e.dtype.kind == "string":
            domains.append(KeyDomain(0, len(reader.dictionary(name_of[cid])) - 1))
            continue
        domain = zone_map_domain(reader.zone_map(name_of[cid], rg) for rg in range(reader.num_row_groups))
        if domain is None:
            return {}  # (refused later, with that reason)
        domains.append(domain)
        ints[cid] = domain
    refusal = domain_refusal(domains, limit)
    if refusal is not None:
        raise _NotFused(refusal)
    return ints


def _aggregates(sink: HashAggregate, alias: dict[str, Expr]) -> tuple[list, list[tuple[int, str, int]]]:
    from hetdb.backend.gpu.codegen import AggregateSpec

    aggs: list = []
    slots: list[tuple[int, str, int]] = []
    for j, (_, a) in enumerate(sink.aggs):
        arg = None if a.arg is None else substitute(a.arg, alias)
        if a.op == "avg":
            aggs += [AggregateSpec("sum", arg), AggregateSpec("count_star")]
            slots += [(j, "sum", len(aggs) - 2), (j, "cnt", len(aggs) - 1)]
        elif a.op in ("sum", "count", "count_star", "min", "max"):
            aggs.append(AggregateSpec(a.op, arg))
            slots.append((j, {"sum": "sum", "min": "val", "max": "val"}.get(a.op, "cnt"), len(aggs) - 1))
        else:
            raise _NotFused(f"aggregate {a.op} is not fused")
        if a.op in ("sum", "avg") and a.arg.dtype.kind not in ("float64", "int32"):
            # the int64 sum of BIGINT/DECIMAL values is exact modulo 2^64 (INTEGER sums cannot wrap);
            # a DOUBLE sum of the same values tells which multiple of 2^64 it is off by (wide_sum)
            aggs.append(AggregateSpec("sum", Cast(T.FLOAT64, arg)))
            slots.append((j, "fsum", len(aggs) - 1))
    return aggs, slots


def _is_lookup(c: Expr, types: dict[str, DataType]) -> bool:
    cols = c.columns()
    return len(cols) == 1 and getattr(types.get(next(iter(cols))), "kind", None) == "string"


def _lookup_table(ctx: ExecContext, pred: Expr, cid: str, dtype: DataType, dictionary: Column | None) -> Any:
    """Dense table over the codes of ``dictionary``: code -> itself where ``pred`` holds, else -1."""
    from hetdb.backend.gpu.codegen import DenseJoinTable
    from hetdb.backend.gpu.codegen.groups import lookup_rows

    if dictionary is None:
        raise _NotFused(f"filter {pred} is on a plain (not dictionary-encoded) string")
    xp = ctx.backend.xp
    n = len(dictionary)
    codes = Column(dtype, data=xp.arange(n, dtype=xp.int32), dictionary=dictionary)
    mask = ctx.evaluator.predicate(pred, Batch({cid: codes}, n))
    return DenseJoinTable(lookup_rows(xp, mask), 0, n, [], n)


def _dense_probe(ctx: ExecContext, j: _Join, needed: set[str], group_cids: set[str],
                 groups: dict, host: list | None = None) -> tuple[Any, Any, set[str]]:
    """(DenseProbe, DenseJoinTable, payload cids) of one join; group keys among the build columns
    get a compacted rank payload (recorded in ``groups``). ``host``: the join's build columns
    copied to the host for planning there (exec/fusion_host.py)."""
    from hetdb.backend.gpu.codegen import DenseProbe, dense_build
    from hetdb.backend.gpu.codegen.groups import compact

    xp = ctx.backend.xp
    if j.key.dtype.kind not in _INT_KEYS or j.key.data is None:
        raise _NotFused(f"the join key {j.left_key} is not an integer")
    if host is not None:
        got = host_dense_probe(ctx, j, needed, group_cids, groups, host)
        if got is not None:
            return got
    payload, arrays, provided = [], [], set()
    for f, col in _build_columns(j, needed, group_cids):
        if f.cid in needed:
            payload.append((f.cid, f.dtype))
            arrays.append(col.data)
            provided.add(f.cid)
        if f.cid in group_cids:
            domain, ranks = compact(xp, col.data, host_rows=-1 if _host_small(ctx) else 0)
            kcid = f"{f.cid}@rank"
            payload.append((kcid, T.INT32))
            arrays.append(ranks)
            groups[f.cid] = (kcid, domain, col.dictionary)
    try:
        table = dense_build(j.key.data, arrays, mask=j.key.validity, host_rows=-1 if _host_small(ctx) else 0)
    except UnsupportedError as e:
        raise _NotFused(str(e)) from None
    by_key = bool(payload) and on("fused_payload_by_key")
    form = probe_form(payload, groups, table, j.share)
    for f in form.split("_") if form != "rows" else ():
        # (made now: the fused state stored for later runs holds them too)
        table.probe_arrays(f, rank_bound(payload, groups))
    if form == "rows" and by_key:
        table.keyed_payload()
    return DenseProbe(j.left_key, tuple(payload), by_key, form), table, provided


def _build_columns(j: _Join, needed: set[str], group_cids: set[str]) -> list[tuple[Field, Column]]:
    """The build columns a dense probe carries (needed ones, group keys), checked for the kernel."""
    out = []
    for f in j.fields:
        if f.cid not in needed and f.cid not in group_cids:
            continue
        col = j.batch.columns[f.cid]
        if col.validity is not None and not bool(col.validity.all()):
            raise _NotFused(f"build column {f.cid} has NULLs")
        if f.dtype.kind == "string":
            if col.dictionary is None or col.data is None:
                raise _NotFused(f"build column {f.cid} is a plain (not dictionary-encoded) string")
        elif f.dtype.kind not in _NUMERIC:
            raise _NotFused(f"build column {f.cid} of type {f.dtype} is not fused")
        out.append((f, col))
    return out


def _host_small(ctx: ExecContext) -> bool:
    """Option gpu_host_small_builds: dense tables and compacted keys of small builds made on the host."""
    return bool(getattr(ctx.options, "gpu_host_small_builds", True))


# reader (one table version) -> {columns: why a swapped fact scan cannot run fused, or None}
_PAGE_CHECKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _check_pages(reader: Any, names: list[str]) -> None:
    """A swapped fact scan has no operator-at-a-time fallback: every page must suit the kernel.
    Decided once per table version and columns (a fresh connection's plan does not walk the pages
    again)."""
    key = frozenset(names)
    try:
        memo = _PAGE_CHECKS.setdefault(reader, {})
    except TypeError:  # a reader without weak references: not remembered
        memo = {}
    if key not in memo:
        memo[key] = _page_refusal(reader, names)
    if memo[key] is not None:
        raise _NotFused(memo[key])


def _page_refusal(reader: Any, names: list[str]) -> str | None:
    for name in names:
        for rg in range(reader.num_row_groups):
            if reader.zone_map(name, rg).null_count:
                return f"column {name} has NULLs (swapped joins run fused only)"
            if reader.dictionary(name) is not None and reader.page_encoding(name, rg) != "dict":
                return f"column {name} has plain-string pages (swapped joins run fused only)"
    return None
