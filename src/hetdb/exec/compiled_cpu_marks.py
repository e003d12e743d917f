"""Compiled CPU loops that end in a right semi / right anti join: ``TableScan -> (Filter | Project |
HashProbe)* -> HashProbe right_semi|right_anti -> ...``. The loop runs the scan's filters and the
probes before it row by row, probes the last join's table and marks every build row a surviving row
matches (and meets the join's residual condition with) in the operator's shared matched-flags array; the operator then emits the marked (or, for
right_anti, the unmarked) build rows when the pipeline flushes, through the rest of the pipeline as
ever. (TPC-H q04 and q22: EXISTS / NOT EXISTS decorrelated with the outer table as the build.)
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from hetdb.exec.compiled import CompiledPlan, _plan, _Refused
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.join import HashProbe

MARK_KINDS = ("right_semi", "right_anti")


def mark_probe(pipe: Any) -> int | None:
    """Index in ``pipe.ops`` of the first right semi / right anti probe, else None."""
    for k, op in enumerate(pipe.ops):
        if isinstance(op, HashProbe) and op.kind in MARK_KINDS:
            return k
    return None


def plan_marks(ctx: ExecContext, pipe: Any, k: int) -> CompiledPlan | str:
    """The compiled plan of the operators before ``pipe.ops[k]`` with that probe's key columns read
    by the loop, or why the loop does not take the pipeline."""
    op = pipe.ops[k]
    if not op.left_keys or any(e.dtype.kind == "string" for e in op.left_keys):
        return f"a {op.kind} join without keys or with string keys is not compiled for the CPU"
    if ctx.results[op.build_pipeline].partitions is not None:
        return "the join's build side was partitioned (spilled)"
    # the operators before the marking probe, ending in a sink that needs only its key columns
    head = SimpleNamespace(source=pipe.source, ops=pipe.ops[:k],
                           sink=replace(op.build, fields=(), keys=tuple(op.left_keys)))
    try:
        plan = _plan(ctx, head, head.sink)
    except _Refused as e:
        return str(e)
    # the scan columns the keys and the residual's probe side read (through projections); a key
    # made by an earlier probe's build rows is not taken
    reads: set[str] = set()
    for c in {c for e in op.left_keys for c in e.columns()} | (residual_probe_columns(op)):
        reads |= set(plan.alias[c].columns()) if c in plan.alias else {c}
    if reads & plan.produced:
        return f"the keys of the {op.kind} join read a joined column (not compiled for the CPU)"
    plan.referenced |= reads
    return plan


def residual_probe_columns(op: Any) -> set[str]:
    """The probe-side columns the join's residual condition reads."""
    if op.residual is None:
        return set()
    return set(op.residual.columns()) - {f.cid for f in op.right_fields}


def residual_payload(ctx: ExecContext, op: Any) -> list[Any] | str:
    """The build columns the join's residual condition reads, or why the loop cannot read them."""
    if op.residual is None:
        return []
    cols = set(op.residual.columns())
    pay = [f for f in op.right_fields if f.cid in cols]
    batch = ctx.results[op.build_pipeline].batch
    for f in pay:
        if f.dtype.kind == "string" and batch.columns[f.cid].dictionary is None:
            return f"build column {f.cid} of the residual is a plain (not dictionary-encoded) string"
    return pay


def marked_flags(ctx: ExecContext, run: Any, k: int) -> Any:
    """The probe's shared bool per build row (what its finalize reads)."""
    op = run.pipe.ops[k]
    return op._matched(ctx, ctx.results[op.build_pipeline], run.gops[k])
