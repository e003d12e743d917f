"""bit_and / bit_or / bit_xor aggregates over INTEGER and BIGINT values, exact, from what the hash
aggregation already computes: bit b of the result is the min (and), max (or) or sum modulo 2 (xor)
of bit b of the group's non-NULL values; ``assemble_bits`` (exec/functions_more.py) puts the bits
back together in the argument's type (two's complement). NULL over no non-NULL value, as DuckDB."""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Field, Literal
from hetdb.sql import typing as TY

NODES = {exp.BitwiseAndAgg: "min", exp.BitwiseOrAgg: "max", exp.BitwiseXorAgg: "sum"}


def bind_bit_agg(node: exp.Expression, ctx) -> Expr:
    from hetdb.sql.exprs import ExprContext, bind_expr
    from hetdb.sql.names import function_name

    name = function_name(node)
    if isinstance(node.this, exp.Distinct):
        raise UnsupportedError(f"{name}(DISTINCT ...)")
    x = bind_expr(node.this, ExprContext(ctx.agg.pre_scope, ctx.binder, f"the argument of {name}"))
    if TY.is_null_literal(x):
        x = Literal(T.INT32, None)
    if x.dtype.kind not in ("int32", "int64"):
        raise SqlError(f"{name} needs an INTEGER or BIGINT, got {x.dtype}")
    op = NODES[type(node)]
    refs = []
    for b in range(32 if x.dtype.kind == "int32" else 64):
        bit = Call(x.dtype, "bit_and", (Call(x.dtype, "shift_right", (x, Literal(T.INT64, b))), Literal(x.dtype, 1)))
        refs.append(_agg(ctx, AggCall(T.INT128 if op == "sum" else x.dtype, op, bit), f"{name}_bit{b}"))
    return Call(x.dtype, "assemble_bits", (Literal(T.BOOL, op == "sum"), *refs))


def _agg(ctx, call: AggCall, name: str) -> ColumnRef:
    agg = ctx.agg
    for f, existing in agg.aggs:
        if existing == call:
            return ColumnRef(f.dtype, f.cid, f.nullable)
    f = Field(ctx.binder.new_cid(call.op), name, call.dtype, True)
    agg.aggs.append((f, call))
    return ColumnRef(f.dtype, f.cid, True)
