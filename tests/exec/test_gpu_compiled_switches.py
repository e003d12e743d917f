"""Without a GPU: which pipelines the GPU compiler and the CPU's compiled loops take as
row-selecting pipelines (compiled_rows.selects_rows, shared), and the switches of
the extensions added for TPC-H q09/q20 (HUGEINT / DECIMAL(>18) values) and ``%`` in kernels."""

from __future__ import annotations

from types import SimpleNamespace

from hetdb import types as T
from hetdb.exec import compiled_features
from hetdb.exec.compiled_features import expr_refusal
from hetdb.exec.compiled_rows import selects_rows
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild
from hetdb.exec.operators.sort import SortSink, TopNSink
from hetdb.plan.expr import Call, Cast, ColumnRef, Literal

A = ColumnRef(T.INT32, "a", True)
WIDE = Cast(T.wide_decimal(19, 2), Cast(T.decimal(18, 2), A))
MOD = Call(T.INT32, "mod", (A, Literal(T.INT32, 3)))
GPU, CPU = SimpleNamespace(device=object()), SimpleNamespace(device=None)


def _pipe(sink, *ops):
    return SimpleNamespace(source=SimpleNamespace(), ops=list(ops), sink=sink)


def test_row_sinks_on_both_backends() -> None:
    # (the CPU's compiled loops take the same row sinks as the GPU's kernels since aaec8d1)
    flt = FilterOp(predicate=Call(T.BOOL, "gt", (A, Literal(T.INT32, 1))))
    probe = HashProbe(kind="inner")
    cases = [
        (_pipe(HashBuild(), probe), True, True),
        (_pipe(HashBuild(), flt), True, True),
        (_pipe(SortSink(), flt), True, True),
        (_pipe(TopNSink(limit=5), probe), True, True),
        (_pipe(SortSink(), ProjectOp()), False, False),    # nothing to select: left to the operators
        (_pipe(HashAggregate(), flt), False, False),       # (aggregations are compiled as such)
    ]
    for pipe, gpu, cpu in cases:
        assert selects_rows(GPU, pipe) is gpu, pipe
        assert selects_rows(CPU, pipe) is cpu, pipe
    assert len(cases) == 6


def test_wide_and_mod_switches(monkeypatch) -> None:
    assert expr_refusal([WIDE, MOD, None]) is None
    monkeypatch.setattr(compiled_features, "disabled", {"wide_decimal"})
    assert "HETDB_GPU_COMPILE_OFF=wide_decimal" in expr_refusal([Call(T.BOOL, "gt", (WIDE, Literal(T.INT32, 0)))])
    assert expr_refusal([MOD]) is None
    monkeypatch.setattr(compiled_features, "disabled", {"mod"})
    assert "HETDB_GPU_COMPILE_OFF=mod" in expr_refusal([Cast(T.FLOAT64, MOD)])
    assert expr_refusal([WIDE]) is None
