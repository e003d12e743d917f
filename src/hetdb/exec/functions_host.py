"""Shared plumbing of the functions that run on the host (pyarrow / Python): argument columns to
Arrow, results back to the backend's device, and a note in EXPLAIN ANALYZE when the backend is the
GPU (a host step is never silent)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from hetdb.column import Batch, Column
from hetdb.exec.hostutil import column_to_device, column_to_host, note_host_step
from hetdb.plan.expr import Call, Literal


def arrow_args(ev, expr: Call, batch: Batch, what: str) -> list[pa.Array]:
    note_host_step(ev.backend, f"{what} (host)")
    return [column_to_host(ev.backend, ev.evaluate(a, batch)).to_arrow() for a in expr.args]


def from_arrow(ev, arr: pa.Array | pa.ChunkedArray, expr: Call) -> Column:
    return column_to_device(ev.backend, Column.from_arrow(arr, expr.dtype))


def python_function(fn: Callable, out_type: pa.DataType, what: str = "") -> Callable:
    """An evaluator function applying ``fn(*python values)`` row by row (NULL in any argument -> NULL).
    When every argument but the first is a constant, ``fn`` runs once per distinct first value."""

    def run(ev, expr: Call, batch: Batch) -> Column:
        arrays = arrow_args(ev, expr, batch, what or expr.op)
        n = batch.num_rows
        if n == 0:
            return from_arrow(ev, pa.array([], type=out_type), expr)
        if arrays and all(isinstance(a, Literal) for a in expr.args[1:]):
            consts = [a[0].as_py() for a in arrays[1:]]
            enc = pc.dictionary_encode(arrays[0])
            if any(c is None for c in consts):
                values = pa.nulls(len(enc.dictionary), type=out_type)
            else:
                values = pa.array([None if v is None else fn(v, *consts)
                                   for v in enc.dictionary.to_pylist()], type=out_type)
            return from_arrow(ev, pc.take(values, enc.indices), expr)
        rows = zip(*(a.to_pylist() for a in arrays)) if arrays else [() for _ in range(n)]
        out = pa.array([None if any(v is None for v in r) else fn(*r) for r in rows], type=out_type)
        return from_arrow(ev, out, expr)

    return run
