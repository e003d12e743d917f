"""Scalar math functions with DuckDB's result types (checked against DuckDB with ``typeof()``):

  sqrt ln exp power/pow/**   -> DOUBLE
  abs(x)                     -> the type of x
  round(x[, d])              -> x's type for integers and doubles; DECIMAL(p, clamp(d, 0, s)) for
                                DECIMAL(p, s) (d a constant integer, default 0)
  floor / ceil               -> DECIMAL(p, 0) for DECIMAL(p, s), else DOUBLE (DuckDB: floor(5) is DOUBLE)
  greatest / least           -> the common type of the arguments; NULL arguments are skipped
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import typing as TY

MATH_NODES: tuple[type, ...] = (exp.Sqrt, exp.Ln, exp.Exp, exp.Pow, exp.Round, exp.Floor, exp.Ceil,
                                exp.Greatest, exp.Least, exp.Abs)

_FLOAT_FUNCS = {exp.Sqrt: "sqrt", exp.Ln: "ln", exp.Exp: "exp"}


def _number(x: Expr, what: str) -> Expr:
    if TY.is_null_literal(x):
        return Literal(T.FLOAT64, None)
    if not x.dtype.is_numeric:
        raise SqlError(f"{what} needs a number, got {x.dtype}")
    return x


def bind_math(node: exp.Expression, b: Callable[[exp.Expression], Expr]) -> Expr:
    """Bind one of MATH_NODES; ``b`` binds a child expression."""
    name = type(node).__name__.upper()
    if isinstance(node, tuple(_FLOAT_FUNCS)):
        x = _number(b(node.this), name)
        return Call(T.FLOAT64, _FLOAT_FUNCS[type(node)], (TY.cast_to(x, T.FLOAT64),))
    if isinstance(node, exp.Pow):
        x, y = _number(b(node.this), "POWER"), _number(b(node.expression), "POWER")
        return Call(T.FLOAT64, "power", (TY.cast_to(x, T.FLOAT64), TY.cast_to(y, T.FLOAT64)))
    if isinstance(node, exp.Abs | exp.Round) and b(node.this).dtype == T.NULL:  # DuckDB: abs/round(NULL) BIGINT
        return Literal(T.INT64, None)
    if isinstance(node, exp.Abs):
        x = _number(b(node.this), "ABS")
        return Call(x.dtype, "abs", (x,))
    if isinstance(node, exp.Round):
        return _round(node, b)
    if isinstance(node, exp.Floor | exp.Ceil):
        if node.args.get("decimals") is not None or node.args.get("to") is not None:
            raise UnsupportedError(f"{name} with a second argument")
        x = _number(b(node.this), name)
        rt = T.decimal(x.dtype.precision, 0) if x.dtype.kind == "decimal" else T.FLOAT64
        return Call(rt, "floor" if isinstance(node, exp.Floor) else "ceil", (x,))
    args = [b(node.this)] + [b(a) for a in node.expressions]
    t = TY.common_of(args, name)
    if not (t.is_numeric or t.kind in ("date", "timestamp")):
        raise UnsupportedError(f"{name} of {t} values (numbers and dates are supported)")
    return Call(t, "greatest" if isinstance(node, exp.Greatest) else "least",
                tuple(TY.cast_to(a, t) for a in args))


def _round(node: exp.Round, b: Callable[[exp.Expression], Expr]) -> Expr:
    x = _number(b(node.this), "ROUND")
    digits = 0
    d_node = node.args.get("decimals")
    if d_node is not None:
        d = b(d_node)
        if not (isinstance(d, Literal) and isinstance(d.value, int) and d.dtype.is_integer):
            raise UnsupportedError("ROUND with a number of digits that is not a constant integer")
        digits = d.value
    t = x.dtype
    if t.kind == "decimal":
        rt = T.decimal(t.precision, max(0, min(digits, t.scale)))
    else:
        rt = t
    args = (x,) if d_node is None else (x, Literal(T.INT32, digits))
    return Call(rt, "round", args)
