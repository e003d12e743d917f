"""Fused GPU pipelines: a pipeline ``TableScan -> (Filter | inner HashProbe)* -> HashAggregate`` whose
expressions the code generator translates runs as one generated kernel per row group (scan filters,
dense-key probes and aggregation in registers, no intermediate batches), through
``backend/gpu/codegen``. Everything else, and every batch the kernel cannot take (a page with NULLs),
runs operator at a time; the sink's statistics say which way the pipeline ran (EXPLAIN ANALYZE).

Scope now: aggregates without GROUP BY (sum, count, count(*), min, max, avg) over numeric columns,
probes into build sides whose integer keys are unique and dense (star-schema dimensions). Grouped
aggregation needs dense group-key domains and is left to the operators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import UnsupportedError
from hetdb.exec.operators.aggregate import HashAggregate, _s, _sum_type
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.operators.basic import FilterOp
from hetdb.exec.operators.join import HashProbe, _key_name
from hetdb.exec.operators.scan import TableScan, conjunction
from hetdb.plan.expr import Expr

_NUMERIC = ("int32", "int64", "decimal", "date", "float64")


@dataclass
class FusionPlan:
    pipeline: Any                  # codegen FusedPipeline
    tables: list                   # DenseJoinTable per probe
    slots: list[tuple[int, str, int]]  # (aggregate index j, state part, index into the kernel's values)


def _columns(exprs: list[Expr]) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= set(e.columns())
    return out


def plan_fusion(ctx: ExecContext, pipe: Any) -> tuple[FusionPlan | None, str]:
    """(plan, "fused into one generated kernel") when the pipeline runs fused, else (None, why not;
    empty when the pipeline does not end in an aggregation, the only fused shape)."""
    src, sink = pipe.source, pipe.sink
    if not isinstance(sink, HashAggregate):
        return None, ""  # not a candidate: nothing to report
    if not isinstance(src, TableScan):
        return None, f"source {type(src).__name__} is not a stored-table scan"
    if sink.keys:
        return None, "grouped aggregation is not fused yet"
    if sink.raw_mode:
        return None, "DISTINCT aggregates are not fused"
    from hetdb.backend.gpu.codegen import AGGREGATE, AggregateSpec, DenseProbe, FusedPipelineSpec
    from hetdb.backend.gpu.codegen.expr_cuda import ExprError

    aggs, slots = [], []
    for j, (_, a) in enumerate(sink.aggs):
        if a.op == "avg":
            aggs += [AggregateSpec("sum", a.arg), AggregateSpec("count_star")]
            slots += [(j, "sum", len(aggs) - 2), (j, "cnt", len(aggs) - 1)]
        elif a.op in ("sum", "count", "count_star", "min", "max"):
            aggs.append(AggregateSpec(a.op, a.arg))
            slots.append((j, {"sum": "sum", "min": "val", "max": "val"}.get(a.op, "cnt"), len(aggs) - 1))
        else:
            return None, f"aggregate {a.op} is not fused"
    filters = list(src.scan.filters)
    exprs = filters + [a.arg for _, a in sink.aggs if a.arg is not None]
    for op in pipe.ops:
        if isinstance(op, FilterOp):
            exprs.append(op.predicate)
        elif isinstance(op, HashProbe):
            exprs += list(op.left_keys)
    used = _columns(exprs)
    inputs = tuple(dict.fromkeys((f.cid, f.dtype) for f in src.scan.fields if f.cid in used))
    for cid, dtype in inputs:
        if dtype.kind not in _NUMERIC:
            return None, f"column {cid} of type {dtype} is not fused"
    probes, tables = [], []
    for op in pipe.ops:
        if isinstance(op, FilterOp):
            filters.append(op.predicate)
            continue
        if not isinstance(op, HashProbe):
            return None, f"{type(op).__name__} is not fused"
        if op.kind != "inner" or len(op.left_keys) != 1 or op.residual is not None:
            return None, f"{op.kind} join with {len(op.left_keys)} keys is not fused"
        side = ctx.results[op.build_pipeline]
        if side.partitions is not None:
            return None, "the join's build side was partitioned (spilled)"
        key = side.batch.columns.get(_key_name(0))
        if key is None or key.dtype.kind not in ("int32", "int64", "date"):
            return None, "the join key is not an integer"
        payload, arrays = [], []
        for f in op.right_fields:
            if f.cid not in used:
                continue
            col = side.batch.columns[f.cid]
            if f.dtype.kind not in _NUMERIC or col.validity is not None:
                return None, f"build column {f.cid} ({f.dtype}, nullable) is not fused"
            payload.append((f.cid, f.dtype))
            arrays.append(col.data)
        from hetdb.backend.gpu.codegen import dense_build

        try:
            tables.append(dense_build(key.data, arrays, mask=key.validity))
        except UnsupportedError as e:
            return None, str(e)
        probes.append(DenseProbe(op.left_keys[0], tuple(payload)))
    spec = FusedPipelineSpec(inputs, tuple(filters), tuple(probes), (), tuple(aggs), AGGREGATE)
    reason = spec.unfusable_reason()
    if reason is not None:
        return None, reason
    from hetdb.backend.gpu.codegen import compile_fused_pipeline

    try:
        fp = compile_fused_pipeline(spec)
    except (UnsupportedError, ExprError) as e:
        return None, str(e)
    return FusionPlan(fp, tables, slots), "fused into one generated kernel"


def run_fused(ctx: ExecContext, pipe: Any, plan: FusionPlan, run: Any) -> None:
    """Drive ``pipe`` through the fused kernel; batches it cannot take go through the operators of
    ``run`` (the pipeline driver). The kernel's totals join the aggregation's partial states."""
    from hetdb.exec.operators.scan_device import read_device_scan

    src, sink = pipe.source, pipe.sink
    fp = plan.pipeline
    state = fp.new_state([])
    lops = [op.init_local(ctx, g) for op, g in zip(pipe.ops, run.gops)]
    lsink = sink.init_local(ctx, run.gsink)
    pred = conjunction(src.scan.filters)
    fused_rows = unfused = 0
    for index, rg in run.morsels:
        ctx.set_morsel(index)
        with Timer(ctx, src.op_id):
            batches = read_device_scan(src, ctx, rg, run.gsrc, apply_filters=False)
        for b in batches:
            if fp.batch_unfusable_reason(b.columns) is None:
                fp.consume(state, b.columns, plan.tables)
                fused_rows += b.num_rows
                continue
            unfused += 1
            if pred is not None:
                from hetdb.exec.columns import filter_batch

                b = filter_batch(ctx.backend, b, ctx.evaluator.predicate(pred, b))
            if b.num_rows:
                run.push(b, 0, lops, lsink)
    sink.combine(ctx, run.gsink, lsink)
    run.flush()
    result = fp.finish(state)
    ctx.add(sink.op_id, rows_in=fused_rows)
    if unfused:
        ctx.stat(sink.op_id).fused = f"fused ({unfused} batches with NULLs ran operator at a time)"
    if result.num_groups:
        part = _partial_state(ctx, sink, plan, result)
        g = run.gsink
        if g.parts is not None:  # the aggregation spilled: the kernel's group joins its partitions
            sink._spill(ctx, g, [part])
        else:
            g.reservation.force_grow(sum(int(c.data.nbytes) for c in part.columns.values()))
            g.batches.append(part)


def _partial_state(ctx: ExecContext, sink: HashAggregate, plan: FusionPlan, result: Any) -> Batch:
    """The kernel's one group as a partial-state batch of the aggregation (see HashAggregate)."""
    xp = ctx.backend.xp
    cols: dict[str, Column] = {}
    for j, part, k in plan.slots:
        a = sink.aggs[j][1]
        v = result.values[k]
        if part == "sum":
            st = _sum_type(a.arg.dtype)
            cols[_s(j, part)] = Column(st, data=v.astype(st.numpy_dtype), validity=xp.ones(1, dtype=bool))
        elif part == "cnt":
            cols[_s(j, part)] = Column(T.INT64, data=v.astype(xp.int64))
        else:
            cols[_s(j, part)] = Column(a.arg.dtype, data=v.astype(a.arg.dtype.numpy_dtype),
                                       validity=xp.ones(1, dtype=bool))
    return Batch(cols, 1)
