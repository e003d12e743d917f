"""Deferred fact-side builds of swapped star joins (see exec/fusion.py): when the optimizer made the big
(fact) side the *build* side of a join, its build pipeline is not run; its consumer's fused kernel
scans the fact table and probes the dimension instead. Here: which pipelines defer, which consumer
takes a deferred pipeline in, and running a deferred pipeline after all when no consumer does."""

from __future__ import annotations

import weakref
from typing import Any

from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild
from hetdb.exec.operators.scan import TableScan

_INT_KEYS = ("int32", "int64", "date")
DEFER_MIN_ROWS = 1 << 20  # a probe-free build pipeline over fewer rows is a dimension, not a fact side


class _Deferrals:
    def __init__(self) -> None:
        self.pending: dict[int, Any] = {}    # pid -> deferred pipeline (HashBuild sink)
        self.inner: dict[int, int] = {}      # deferred pid -> the deferred pid it swaps in (chains)
        self.no_defer: set[int] = set()


_DEFERRALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _deferrals(ctx: ExecContext) -> _Deferrals:
    d = _DEFERRALS.get(ctx)
    if d is None:
        d = _DEFERRALS[ctx] = _Deferrals()
    return d

def _table_rows(ctx: ExecContext, scan: TableScan) -> int:
    return int(ctx.db.table(scan.scan.table).num_rows)


def _single_key_inner(op: HashProbe) -> bool:
    return op.kind == "inner" and len(op.left_keys) == 1 and op.residual is None


def _deferrable(ctx: ExecContext, pipe: Any, d: _Deferrals) -> bool:
    """A fact-side build: table scan, filters and single-key inner probes, one integer build key."""
    if pipe.pid in d.no_defer or not isinstance(pipe.source, TableScan):
        return False
    if len(pipe.sink.keys) != 1 or pipe.sink.keys[0].dtype.kind not in _INT_KEYS:
        return False
    probes = 0
    for op in pipe.ops:
        if isinstance(op, HashProbe) and _single_key_inner(op):
            probes += 1
        elif not isinstance(op, (FilterOp, ProjectOp)):
            return False
    return probes > 0 or _table_rows(ctx, pipe.source) >= DEFER_MIN_ROWS


def _swap_candidate(ctx: ExecContext, pipe: Any, d: _Deferrals) -> int | None:
    """pid of the deferred fact pipeline ``pipe`` can take into its kernel (or, deferred itself,
    into the kernel of its consumer), else None."""
    if not d.pending or not pipe.ops or not isinstance(pipe.source, TableScan) or pipe.pid in d.no_defer:
        return None
    op = _first_probe(pipe)
    if op is None or op.build_pipeline not in d.pending or not _single_key_inner(op):
        return None
    if not isinstance(pipe.sink, (HashAggregate, HashBuild)):
        return None
    fact = d.pending[op.build_pipeline]
    while fact.pid in d.inner:  # a chain of swaps: compare with the table its kernel would scan
        fact = d.pending[d.inner[fact.pid]]
    if _table_rows(ctx, fact.source) <= _table_rows(ctx, pipe.source):
        return None  # the build side is the smaller table after all: nothing to gain from swapping
    return op.build_pipeline


def _first_probe(pipe: Any) -> HashProbe | None:
    """The pipeline's first operator after leading projections, when it is a hash probe."""
    for op in pipe.ops:
        if not isinstance(op, ProjectOp):
            return op if isinstance(op, HashProbe) else None
    return None


def _after_first_probe(pipe: Any) -> list:
    k = next(i for i, op in enumerate(pipe.ops) if isinstance(op, HashProbe))
    return list(pipe.ops[k + 1:])

def _materialize(ctx: ExecContext, d: _Deferrals, pid: int, why: str | None) -> None:
    """Run a deferred pipeline now (compiled, or operator at a time): its consumer did not take it in
    (``why`` says why when the consumer tried to; None when the consumer was no swapped-join shape)."""
    from hetdb.exec.compiled import COMPILED
    from hetdb.exec.pipeline import run_pipeline

    pipe = d.pending.pop(pid)
    d.no_defer.add(pid)
    run_pipeline(ctx, pipe, None, 1)
    st = ctx.stat(pipe.sink.op_id)
    if st.fused.startswith(COMPILED):  # it ran as a compiled kernel: say so, and why it was not swapped in
        st.fused += "" if why is None else f" (not {why})"
    else:
        st.fused = "" if why is None else f"operator at a time: {why}"

