"""Arithmetic over Batches with DuckDB's semantics: + - * / // % ** on integers, decimals (exact,
range-checked: overflow raises OutOfRangeError), doubles (x / 0 is inf, x % 0 NaN, x // 0 raises) and
dates; unary minus and abs. ``user_text`` renders an expression for an error message. ``CALLS``:
op -> function (evaluator, call, batch) -> Column."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError, OutOfRangeError
from hetdb.exec import wide as W
from hetdb.exec.columns import and_valid
from hetdb.exec.conversions import convert, quiet
from hetdb.plan.expr import Call, Cast, ColumnRef, Expr, Literal
from hetdb.types import DataType

if TYPE_CHECKING:
    from hetdb.exec.expressions import ExprEvaluator


def _arith(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    op, rt = expr.op, expr.dtype
    a, b = (ev.evaluate(x, batch) for x in expr.args)
    validity = and_valid(xp, a.validity, b.validity)
    if rt.kind == "decimal" and op == "mul":
        sa = a.dtype.scale if a.dtype.kind == "decimal" else 0
        sb = b.dtype.scale if b.dtype.kind == "decimal" else 0
        x = ev.numeric(a, _exact_operand(a.dtype, sa))
        y = ev.numeric(b, _exact_operand(b.dtype, sb))
        raw_t = T.wide_decimal(T.MAX_WIDE_PRECISION, sa + sb) if rt.is_wide else DataType("decimal", 18, sa + sb)
        raw = W.checked(xp, "mul", x, y, raw_t, validity, lambda p, q: f"{p} * {q}")
        return Column(rt, data=convert(xp, raw, raw_t, rt, validity), validity=validity)
    if op == "div" and rt.kind != "float64" and rt.is_numeric:
        op = "intdiv"
    if op == "div" or rt.kind == "float64":
        x, y = ev.numeric(a, T.FLOAT64), ev.numeric(b, T.FLOAT64)
        with quiet(xp):
            # DuckDB on doubles: x / 0 is +-inf, x % 0 is NaN, x // 0 raises; // does not floor
            if op == "intdiv":
                _check_zero(ev, y, validity, expr)
            if op in ("div", "intdiv"):
                data = x / y
            elif op == "mod":
                data = xp.fmod(x, y)
            else:
                data = _BASIC[op](x, y)
        return Column(T.FLOAT64, data=data, validity=validity) if rt.kind == "float64" else \
            Column(rt, data=convert(xp, data, T.FLOAT64, rt, validity), validity=validity)
    if rt.kind in ("date", "timestamp"):
        # date +/- integer days (the binder lowers intervals to date_add_* where it can)
        x = ev.numeric(a, rt) if a.dtype.kind in ("date", "timestamp") else a.data
        y = ev.numeric(b, rt) if b.dtype.kind in ("date", "timestamp") else b.data
        return Column(rt, data=_BASIC[op](x.astype(xp.int64), y.astype(xp.int64)).astype(rt.numpy_dtype),
                      validity=validity)
    x, y = ev.numeric(a, rt), ev.numeric(b, rt)
    if op in ("intdiv", "mod"):
        _check_zero(ev, y, validity, expr)
        if W.is_object(x) or W.is_object(y):
            x, y = W.as_object(xp, x), W.as_object(xp, y)
            safe = np.where(y == 0, 1, y)
            q = np.array([_trunc_div(p, d) for p, d in zip(x.tolist(), safe.tolist())], dtype=object)
            data = q if op == "intdiv" else x - q * safe
            return Column(rt, data=W.check_range(xp, data, rt, validity, W.cast_message(rt, rt)),
                          validity=validity)
        safe = xp.where(y == 0, 1, y)
        with quiet(xp):
            rem = xp.fmod(x, safe)
        if op == "mod":
            data = rem
        else:
            # DuckDB's // on integers truncates toward zero; MIN // -1 overflows
            lo, _ = W.bounds(rt)
            bad = (x == lo) & (y == -1)
            if validity is not None:
                bad = bad & validity
            if bool(bad.any()):
                raise OutOfRangeError(f"Out of Range Error: Overflow in division of {lo} / -1")
            data = (x - rem) // safe
        return Column(rt, data=data.astype(rt.numpy_dtype), validity=validity)
    if op == "power":
        return Column(rt, data=_BASIC[op](x, y).astype(rt.numpy_dtype, copy=False), validity=validity)
    sym = {"add": "+", "sub": "-", "mul": "*"}[op]
    data = W.checked(xp, op, x, y, rt, validity, lambda p, q: f"{p} {sym} {q}")
    return Column(rt, data=data, validity=validity)


def _exact_operand(t: DataType, scale: int) -> DataType:
    """The decimal type an operand of a decimal product is read in (its own digits, its scale)."""
    if t.kind == "decimal":
        return t
    return {"int32": DataType("decimal", 10, 0), "int64": T.wide_decimal(19, 0)}.get(t.kind, T.wide_decimal(38, 0))


def _trunc_div(p: int, d: int) -> int:
    q = abs(p) // abs(d)
    return q if (p >= 0) == (d > 0) else -q


def _check_zero(ev: ExprEvaluator, y: Any, validity: Any, expr: Call) -> None:
    zero = y == 0
    if validity is not None:
        zero = ev.xp.logical_and(zero, validity)
    active = ev.active_rows
    if active is not None and active.shape == zero.shape:
        zero = ev.xp.logical_and(zero, active)
    if bool(zero.any()):
        raise HetdbError(f"Invalid Input Error: Division by zero in expression {user_text(expr)} (DuckDB "
                         "raises this error too)")


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "intdiv": "//"}


def user_text(e: Expr) -> str:
    """An expression as the user wrote it, near enough for a message: operators infix, columns by
    name, decimals with their scale, implicit casts left out."""
    from decimal import Decimal

    if isinstance(e, ColumnRef):
        return e.cid.split("#")[0]
    if isinstance(e, Literal):
        if e.value is None:
            return "NULL"
        if e.dtype.kind == "decimal" and isinstance(e.value, int):
            return str(Decimal(e.value).scaleb(-e.dtype.scale))
        return repr(e.value) if isinstance(e.value, str) else str(e.value)
    if isinstance(e, Cast) and e.arg is not None:
        return user_text(e.arg)
    if isinstance(e, Call) and e.op in _INFIX and len(e.args) == 2:
        return f"({user_text(e.args[0])} {_INFIX[e.op]} {user_text(e.args[1])})"
    if isinstance(e, Call):
        return f"{e.op}({', '.join(user_text(a) for a in e.args)})"
    return str(e)


_BASIC = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "power": lambda x, y: x ** y}


def _neg_abs(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    c = ev.evaluate(expr.args[0], batch)
    x = ev.numeric(c, expr.dtype)
    if expr.dtype.kind == "float64":
        data = -x if expr.op == "neg" else ev.xp.abs(x)
    else:
        data = W.negate(ev.xp, x, expr.dtype, c.validity, expr.op)
    return Column(expr.dtype, data=data, validity=c.validity)


CALLS = {
    **{op: _arith for op in ("add", "sub", "mul", "div", "intdiv", "mod", "power")},
    "neg": _neg_abs, "abs": _neg_abs,
}
