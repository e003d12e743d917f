"""Executors of sql/functions_math.py: trigonometry, trunc, even, isnan/isinf/isfinite, gcd/lcm,
vectorised over the backend's arrays (NumPy or CuPy)."""

from __future__ import annotations

import pyarrow as pa

from hetdb.column import Batch, Column
from hetdb.errors import OutOfRangeError
from hetdb.exec.columns import and_valid
from hetdb.exec.conversions import quiet
from hetdb.exec.functions_host import python_function
from hetdb.plan.expr import Call


def _unary(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    c = ev.evaluate(expr.args[0], batch)
    x = c.data.astype(xp.float64)
    with quiet(xp):
        data = {"sin": xp.sin, "cos": xp.cos, "tan": xp.tan, "asin": xp.arcsin, "acos": xp.arccos,
                "atan": xp.arctan, "degrees": xp.degrees, "radians": xp.radians,
                "cot": lambda v: 1.0 / xp.tan(v)}[expr.op](x)
    return Column(expr.dtype, data=data, validity=c.validity)


def _atan2(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    y, x = (ev.evaluate(a, batch) for a in expr.args)
    return Column(expr.dtype, data=xp.arctan2(y.data.astype(xp.float64), x.data.astype(xp.float64)),
                  validity=and_valid(xp, y.validity, x.validity))


def _trunc_div(xp, v, p: int):
    """``v / p`` rounded toward zero, without negating ``v`` (INT64_MIN stays exact)."""
    q = xp.floor_divide(v, p)
    return q + ((v < 0) & (v - q * p != 0)).astype(v.dtype)


def _trunc_digits(ev, expr: Call, c: Column, digits: int) -> Column:
    """trunc(x, digits): decimals and integers cut exactly (DuckDB's result scale), doubles through
    trunc(x * 10**digits) / 10**digits (a value too large to scale is returned unchanged)."""
    xp = ev.xp
    rt = expr.dtype
    if c.dtype.kind == "float64":
        try:
            f = 10.0 ** digits
        except OverflowError:  # no digits to cut: x * inf is not finite and x comes back unchanged
            f = float("inf")
        with quiet(xp):
            data = xp.trunc(c.data * f) / f
            data = xp.where(xp.isfinite(data), data, c.data)  # inf/NaN, or too large to scale
        return Column(rt, data=data, validity=c.validity)
    scale = c.dtype.scale if c.dtype.kind == "decimal" else 0
    v = c.data.astype(xp.int64)
    drop = scale - digits  # digits of the unscaled value cut off
    if drop <= 0:
        data = v
    elif drop > 18:  # every digit goes
        data = xp.zeros_like(v)
    else:
        data = _trunc_div(xp, v, 10 ** drop)
        if digits < 0:  # back to units (result scale 0)
            data = data * 10 ** (-digits)
    return Column(rt, data=data.astype(rt.numpy_dtype), validity=c.validity)


def _trunc(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    c = ev.evaluate(expr.args[0], batch)
    if len(expr.args) > 1:
        return _trunc_digits(ev, expr, c, int(expr.args[1].value))
    if c.dtype.kind == "decimal":
        p = 10 ** c.dtype.scale
        data = xp.sign(c.data) * (xp.abs(c.data) // p)
    elif c.dtype.kind == "float64":
        data = xp.trunc(c.data)
    else:
        data = c.data
    return Column(expr.dtype, data=data.astype(expr.dtype.numpy_dtype), validity=c.validity)


def _even(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    c = ev.evaluate(expr.args[0], batch)
    x = c.data.astype(xp.float64)
    with quiet(xp):
        up = xp.ceil(xp.abs(x))
        up = xp.where(up % 2 == 1, up + 1, up)
    return Column(expr.dtype, data=xp.where(x < 0, -up, up), validity=c.validity)


def _float_check(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    c = ev.evaluate(expr.args[0], batch)
    fn = {"isnan": xp.isnan, "isinf": xp.isinf, "isfinite": xp.isfinite}[expr.op]
    return Column(expr.dtype, data=fn(c.data.astype(xp.float64)), validity=c.validity)


def _gcd_lcm(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    a, b = (ev.evaluate(x, batch) for x in expr.args)
    fn = xp.gcd if expr.op == "gcd" else xp.lcm
    return Column(expr.dtype, data=fn(a.data.astype(xp.int64), b.data.astype(xp.int64)),
                  validity=and_valid(xp, a.validity, b.validity))


def _to_base(n: int, radix: int, min_length: int = 0) -> str:
    if n < 0:
        raise OutOfRangeError(f"to_base: {n} is negative (DuckDB takes values >= 0)")
    if not 2 <= radix <= 36:
        raise OutOfRangeError(f"to_base: radix {radix} is not between 2 and 36")
    digits = ""
    while n:
        n, r = divmod(n, radix)
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[r] + digits
    return (digits or "0").rjust(min_length, "0")


FUNCTIONS = {
    "unicode": python_function(lambda s: ord(s[0]) if s else -1, pa.int32()),
    "bit_length": python_function(lambda s: 8 * len(s.encode()), pa.int64()),
    "strlen": python_function(lambda s: len(s.encode()), pa.int64()),
    "to_base": python_function(_to_base, pa.string()),
    **{op: _unary for op in ("sin", "cos", "tan", "cot", "asin", "acos", "atan", "degrees", "radians")},
    "atan2": _atan2, "trunc": _trunc, "even": _even, "gcd": _gcd_lcm, "lcm": _gcd_lcm,
    **{op: _float_check for op in ("isnan", "isinf", "isfinite")},
}
