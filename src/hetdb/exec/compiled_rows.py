"""Compiled GPU pipelines that select rows (exec/compiled.py): a sink that takes rows as they are
(a hash build, a sort, a top-N) is fed by a kernel that runs the filters and probes and writes the
surviving rows and their build rows (``MaterializeSink``); the columns the sink reads are then gathered
for them (for a top-N, first its sort keys, and the other columns only for the best rows). Also the dictionary lookups every compiled kernel reads (codegen/expr3.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.operators.basic import FilterOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild
from hetdb.exec.operators.scan import TableScan
from hetdb.exec.operators.sort import SortSink, TopNSink


def selects_rows(ctx: ExecContext, pipe: Any) -> bool:
    """Whether ``pipe``'s sink takes rows as they are and the pipeline selects them in a way worth a
    kernel: a hash build, sort or top-N after a filter (pushed into its scan or not) or a probe. (The
    CPU's compiled pipelines, exec/compiled_cpu.py, share the planning.)"""
    probes = any(isinstance(op, HashProbe) for op in pipe.ops)
    if isinstance(pipe.sink, HashBuild) and probes:
        return True
    if not isinstance(pipe.sink, (HashBuild, SortSink, TopNSink)):
        return False
    if probes or any(isinstance(op, FilterOp) for op in pipe.ops):
        return True
    return isinstance(pipe.source, TableScan) and bool(pipe.source.scan.filters)


def dictionary_lookups(ctx: ExecContext, plan: Any, kernel: Any, dicts: dict[str, Column]) -> list:
    """(values, valid) per dictionary lookup of ``kernel`` (codegen/expr3.py): its expression evaluated
    once per dictionary by the operator kernels, kept in ``plan.luts`` while the dictionary is; for a
    string join key, the ids the join build's key encoder gives the dictionary's strings (-1: a string
    no build row has, which matches nothing); for a plain-string join key, the build encoder's table of
    strings on the device, which the kernel reads itself (backend/gpu/string_keys.py)."""
    xp = ctx.backend.xp
    out = []
    for lk in kernel.kernel.lookups:
        if lk.plain:  # a plain-string probe key: the kernel looks its strings up in the build's table
            enc = ctx.results[plan.stages[lk.join_key[0]][1].build_pipeline].encoders[lk.join_key[1]]
            out.append(enc.device_table())
            continue
        d = dicts[lk.cid]
        key = (kernel.kernel.name, lk.index, id(d))
        hit = plan.luts.get(key)
        if lk.join_key is not None:  # the join build's string key ids of the dictionary's strings
            enc = ctx.results[plan.stages[lk.join_key[0]][1].build_pipeline].encoders[lk.join_key[1]]
            if hit is None or hit[0] is not d or hit[3] is not enc:
                n = len(d)
                ids = xp.full(max(n, 1), -1, dtype=xp.int64)
                if n:
                    mapped = enc.dictionary_ids(d, add=False)  # on the device (backend/gpu/string_keys.py)
                    ids[:n] = xp.arange(n, dtype=xp.int64) if mapped is None else mapped
                hit = plan.luts[key] = (d, ids, xp.ones(max(n, 1), dtype=bool), enc)
            out.append((hit[1], hit[2]))
            continue
        # kept between queries per expression and dictionary (exec/lookup_tables.py); not per kernel:
        # kernels differing only in a lookup's expression have the same text
        kept = getattr(getattr(ctx, "device", None), "luts", None)
        if (hit is None or hit[0] is not d) and kept is not None:
            got = kept.get(lk.expr, d)
            if got is not None:
                hit = plan.luts[key] = (d, *got)
        if (hit is None or hit[0] is not d) and xp is not np \
                and getattr(ctx.options, "gpu_host_small_builds", True):
            from hetdb.exec.host_lookups import device_lookup

            got = device_lookup(lk.expr, lk.cid, d)  # (a small dictionary: evaluated on the host)
            if got is not None:
                hit = plan.luts[key] = (d, *got)
                if kept is not None:
                    kept.put(lk.expr, d, *got)
        if hit is None or hit[0] is not d:
            n = len(d)
            codes = Column(T.STRING, data=xp.arange(max(n, 1), dtype=xp.int32)[:n], dictionary=d)
            res = ctx.evaluator.evaluate(lk.expr, Batch({lk.cid: codes}, n))
            res = ctx.evaluator.cast(res, lk.expr.dtype)
            values = xp.zeros(max(n, 1), dtype=lk.expr.dtype.numpy_dtype)
            valid = xp.zeros(max(n, 1), dtype=bool)
            if n:
                values[:n] = res.data
                valid[:n] = True if res.validity is None else res.validity
            hit = plan.luts[key] = (d, values, valid)
            if kept is not None:
                kept.put(lk.expr, d, values, valid)
        out.append((hit[1], hit[2]))
    return out


def gather(ctx: ExecContext, plan: Any, b: Batch | None, sel: Any, probe_column: Any = None,
           cids: list[str] | None = None) -> Batch:
    """The columns the sink reads (``cids`` of them: only those), for the rows (and matches) the
    kernel selected (projections the kernel did not need are evaluated on the gathered rows).
    ``probe_column(cid, rows)``: the probe side's column at input rows ``rows`` when they are not rows
    of one batch ``b`` (a paged launch)."""
    from hetdb.exec.columns import take

    be = ctx.backend
    n = int(sel.rows.shape[0])
    stage_of = {}
    for i, (kind, x) in enumerate(plan.stages):
        if kind == "probe":
            for f in x.right_fields:
                stage_of[f.cid] = (i, x)
            if x.mark is not None:
                stage_of[x.mark.cid] = (i, x)
    exprs = {c: plan.alias.get(c) for c in (plan.outputs if cids is None else cids)}
    base: set[str] = set()
    for c, e in exprs.items():
        base |= {c} if e is None else set(e.columns())
    cols: dict[str, Column] = {}
    for c in base:
        if c not in stage_of and (b is None or c in b.columns):
            cols[c] = probe_column(c, sel.rows) if b is None else take(be, b.columns[c], sel.rows)
            continue
        i, op = stage_of[c]
        if op.mark is not None and c == op.mark.cid:
            m = sel.marks[i]
            cols[c] = Column(T.BOOL, data=m == 1, validity=None if not bool((m == 2).any()) else m != 2)
        else:
            side = ctx.results[op.build_pipeline]
            cols[c] = take(be, side.batch.columns[c], sel.build_rows[i], missing=op.kind != "inner")
    base_batch = Batch(cols, n)
    out = {}
    for c, e in exprs.items():
        out[c] = cols[c] if e is None else ctx.evaluator.cast(ctx.evaluator.evaluate(e, base_batch), e.dtype)
    return Batch(out, n)


def sink_selected(ctx: ExecContext, plan: Any, b: Batch | None, sel: Any, gsink: Any, lsink: Any,
                  probe_column: Any = None) -> None:
    """The selected rows into the sink. A top-N sink gets only its best rows: their sort keys are
    gathered and ranked on the device first (backend topk_indices), so the other columns (strings
    above all) are gathered for at most limit + offset rows."""
    if topk_first(plan):
        sel = _best_selected(ctx, plan, b, sel, probe_column)
    plan.sink.sink(ctx, gather(ctx, plan, b, sel, probe_column), gsink, lsink)


def topk_first(plan: Any) -> bool:
    """Whether the sink is a top-N whose keys can be ranked before the gather (they read only
    columns the sink reads)."""
    if not isinstance(plan.sink, TopNSink):
        return False
    keys = set().union(*(set(k.expr.columns()) for k in plan.sink.keys))
    return bool(keys) and keys <= set(plan.outputs)


def _best_selected(ctx: ExecContext, plan: Any, b: Batch | None, sel: Any, probe_column: Any) -> Any:
    from hetdb.backend.gpu.codegen.pipeline_runtime import Selected
    from hetdb.exec.operators.sort import sort_keys
    from hetdb.exec.operators.sort_small import SMALL_ORDER_ROWS, host_order

    sink = plan.sink
    k = sink.limit + sink.offset
    n = int(sel.rows.shape[0])
    if k <= 0:  # LIMIT 0: no row is among the best (the fuzz campaign's GPU case 254 crashed here)
        none = sel.rows[:0]
        ctx.add(sink.op_id, rows_in=n)
        return Selected(none, {i: r[:0] for i, r in sel.build_rows.items()}, {i: m[:0] for i, m in sel.marks.items()})
    if n > k:
        sel = _leading_key_candidates(ctx, plan, b, sel, probe_column, k)
    m = int(sel.rows.shape[0])
    on_host = m <= SMALL_ORDER_ROWS and ctx.backend.xp is not np  # (a device batch ordered on the host)
    if m <= k and not on_host:
        ctx.add(sink.op_id, rows_in=n - m)
        return sel
    cids = sorted(set().union(*(set(key.expr.columns()) for key in sink.keys)))
    keys = gather(ctx, plan, b, sel, probe_column, cids)
    if on_host:
        # the best rows in rank order: gathered so, they stand in the order the sink's ranking
        # (stable: ties by position) gives them, and the sink gathers nothing again (sort_small)
        with Timer(ctx, sink.op_id):
            best = host_order(ctx, sink.keys, keys, min(k, m))
        if best is not None:
            ctx.add(sink.op_id, rows_in=n - int(best.shape[0]))
            best = ctx.backend.xp.asarray(best)
            return Selected(sel.rows[best], {i: r[best] for i, r in sel.build_rows.items()},
                            {i: mk[best] for i, mk in sel.marks.items()})
        if m <= k:
            ctx.add(sink.op_id, rows_in=n - m)
            return sel
    with Timer(ctx, sink.op_id):
        arrays, desc = sort_keys(ctx, sink.keys, keys)
        # the best rows in their selected order: the sink ranks them again, ties by position as before
        best = ctx.backend.xp.sort(ctx.backend.topk_indices(arrays, desc, k))
        ctx.add(sink.op_id, rows_in=n - int(best.shape[0]))  # (ranked here; the sink counts the rest)
    return Selected(sel.rows[best], {i: r[best] for i, r in sel.build_rows.items()},
                    {i: m[best] for i, m in sel.marks.items()})


def _leading_key_candidates(ctx: ExecContext, plan: Any, b: Batch | None, sel: Any, probe_column: Any,
                            k: int) -> Any:
    """The selected rows that can be among the best ``k`` by the first sort key alone: those not
    worse than the k-th best row by it (ties kept). Taken when a later key is a string, whose ranks
    (a factorization of every row's string) then cost only the candidates': TPC-H q02 ranks s_name
    for ~100 of 4,667 rows. A superset of the best rows in their selected order, so the ranking that
    follows picks the same rows."""
    from hetdb.backend.gpu.codegen.pipeline_runtime import Selected
    from hetdb.exec.operators.sort import sort_keys

    sink = plan.sink
    first = sink.keys[0]
    if first.expr.dtype.kind == "string" or not any(key.expr.dtype.kind == "string" for key in sink.keys[1:]):
        return sel
    xp = ctx.backend.xp
    keys = gather(ctx, plan, b, sel, probe_column, sorted(first.expr.columns()))
    with Timer(ctx, sink.op_id):
        arrays, desc = sort_keys(ctx, (first,), keys)
        t = ctx.backend.topk_indices(arrays, desc, k)[k - 1:k]  # the k-th best row by the first key
        worse = xp.zeros(int(sel.rows.shape[0]), dtype=bool)
        tie = xp.ones_like(worse)
        for a, d in zip(arrays, desc):
            at = a[t]
            worse |= tie & ((a < at) if d else (a > at))
            tie &= a == at
        keep = xp.flatnonzero(~worse)
    if int(keep.shape[0]) == int(sel.rows.shape[0]):
        return sel
    return Selected(sel.rows[keep], {i: r[keep] for i, r in sel.build_rows.items()},
                    {i: m[keep] for i, m in sel.marks.items()})


def consume_rows(ctx: ExecContext, plan: Any, kernel: Any, cids: list[str], b: Batch, probes: list,
                 build_dicts: dict[str, Column], gsink: Any, lsink: Any) -> None:
    """One batch through a row-selecting kernel; the sink gets the gathered rows."""
    from hetdb.backend.gpu.codegen.pipeline_runtime import select

    dicts = dict(build_dicts)
    dicts.update({c: b.columns[c].dictionary for c in cids if b.columns[c].dictionary is not None})
    with Timer(ctx, plan.sink.op_id):  # (the launch and its wait: the sink's time in EXPLAIN ANALYZE)
        sel = select(kernel, {c: b.columns[c] for c in cids}, b.num_rows, dictionary_lookups(ctx, plan, kernel, dicts),
                     probes, plan.unique_rows)
    if int(sel.rows.shape[0]):
        sink_selected(ctx, plan, b, sel, gsink, lsink)
