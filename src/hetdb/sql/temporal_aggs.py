"""avg() of DATE, TIMESTAMP and TIMESTAMPTZ values as DuckDB computes it: the exact (HUGEINT) sum of
the microseconds since the epoch divided by the count, truncated toward zero and then one more
microsecond when the remainder is past half the count (DuckDB's rounding; a negative sum is only
truncated). A DATE counts as its midnight; the result is a TIMESTAMP (TIMESTAMPTZ for one); the
average of TIME values is a TIME.
Executed by ``avg_micros`` in exec/functions_more.py."""

from __future__ import annotations

from hetdb import types as T
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Field, Literal


def temporal_avg(ctx, name: str, arg: Expr, distinct: bool) -> Expr:
    if arg.dtype.kind == "time":  # (microseconds since midnight; the average is a time of day again)
        micros = Call(T.INT64, "time_micros", (arg,))
        total = _agg(ctx, AggCall(T.INT128, "sum", micros, distinct), f"{name}_sum")
        count = _agg(ctx, AggCall(T.INT64, "count", micros, distinct), f"{name}_count")
        return Call(T.TIME, "time_of_timestamp", (Call(T.TIMESTAMP, "avg_micros", (total, count)),))
    micros = Call(T.INT64, "epoch_units", (arg, Literal(T.INT64, 1)))
    total = _agg(ctx, AggCall(T.INT128, "sum", micros, distinct), f"{name}_sum")
    count = _agg(ctx, AggCall(T.INT64, "count", micros, distinct), f"{name}_count")
    return Call(T.TIMESTAMPTZ if arg.dtype.tz else T.TIMESTAMP, "avg_micros", (total, count))


def _agg(ctx, call: AggCall, name: str) -> ColumnRef:
    agg = ctx.agg
    for f, existing in agg.aggs:
        if existing == call:
            return ColumnRef(f.dtype, f.cid, f.nullable)
    f = Field(ctx.binder.new_cid(call.op), name, call.dtype, call.op != "count")
    agg.aggs.append((f, call))
    return ColumnRef(f.dtype, f.cid, f.nullable)
