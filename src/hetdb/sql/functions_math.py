"""Further scalar functions with DuckDB's types (checked with ``typeof()``), executed by
exec/functions_math.py:

  sin cos tan cot asin acos atan atan2 degrees radians   -> DOUBLE
  trunc(x)         the type of x (DECIMAL(p, s) -> DECIMAL(p, 0)), toward zero
  even(x)          DOUBLE: away from zero to the next even integer
  isnan isinf isfinite                                  -> BOOLEAN (integers: false, false, true)
  gcd(a, b) lcm(a, b)                                   -> BIGINT
  ends_with(s, p) / suffix(s, p)                        -> BOOLEAN (p a constant string)
  epoch_ns(x)                                           -> BIGINT nanoseconds
  unicode(s) (INTEGER, -1 for '') bit_length(s) strlen(s) (bytes; BIGINT) to_base(n, radix[, min_length]) (VARCHAR)
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, Case, Expr, Literal
from hetdb.sql import typing as TY

_UNARY = {exp.Sin: "sin", exp.Cos: "cos", exp.Tan: "tan", exp.Cot: "cot", exp.Asin: "asin", exp.Acos: "acos",
          exp.Atan: "atan", exp.Degrees: "degrees", exp.Radians: "radians"}
NODES: tuple[type, ...] = (*_UNARY, exp.Atan2, exp.Trunc, exp.IsNan, exp.IsInf, exp.EndsWith, exp.Unicode,
                           exp.BitLength)
ANONYMOUS = ("isfinite", "gcd", "lcm", "even", "suffix", "epoch_ns", "to_base", "strlen")


def handles(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    return isinstance(node, NODES)


def _number(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.FLOAT64, None)
    if not e.dtype.is_numeric:
        raise SqlError(f"{what} needs a number, got {e.dtype}")
    return e


def _double(e: Expr, what: str) -> Expr:
    return TY.cast_to(_number(e, what), T.FLOAT64)


def bind(node: exp.Expression, b: Callable[[exp.Expression], Expr]) -> Expr:
    """Bind one node ``handles`` accepted; ``b`` binds a child expression."""
    if isinstance(node, exp.Anonymous):
        return _anonymous(str(node.this).lower(), [b(a) for a in node.expressions])
    if type(node) in _UNARY:
        name = _UNARY[type(node)]
        return Call(T.FLOAT64, name, (_double(b(node.this), name),))
    if isinstance(node, exp.Atan2):
        return Call(T.FLOAT64, "atan2", (_double(b(node.this), "atan2"), _double(b(node.expression), "atan2")))
    if isinstance(node, exp.Trunc):
        x = _number(b(node.this), "trunc")
        d_node = node.args.get("decimals")
        if d_node is None:
            rt = T.decimal(x.dtype.precision, 0) if x.dtype.kind == "decimal" else x.dtype
            return Call(rt, "trunc", (x,))
        d = b(d_node)
        if not (isinstance(d, Literal) and isinstance(d.value, int) and d.dtype.is_integer):
            raise UnsupportedError("trunc with a number of digits that is not a constant integer")
        # DuckDB's types: DECIMAL(p, s) keeps min(n, s) digits (0 for n < 0); other types keep theirs
        t = x.dtype
        rt = T.decimal(t.precision, max(0, min(d.value, t.scale))) if t.kind == "decimal" else t
        return Call(rt, "trunc", (x, Literal(T.INT32, d.value)))
    if isinstance(node, exp.IsNan | exp.IsInf):
        return _check("isnan" if isinstance(node, exp.IsNan) else "isinf", b(node.this))
    if isinstance(node, exp.EndsWith):
        return _ends_with(b(node.this), b(node.expression))
    if isinstance(node, exp.Unicode | exp.BitLength):
        from hetdb.sql.functions_ext import _string

        op = "unicode" if isinstance(node, exp.Unicode) else "bit_length"
        return Call(T.INT32 if op == "unicode" else T.INT64, op, (_string(b(node.this), op),))
    raise UnsupportedError(f"function {type(node).__name__.lower()}()")


def _check(op: str, x: Expr) -> Expr:
    x = _number(x, op)
    if x.dtype.kind != "float64":  # an exact number is never NaN or infinite
        return Case(T.BOOL, ((Call(T.BOOL, "is_not_null", (x,)), Literal(T.BOOL, op == "isfinite")),))
    return Call(T.BOOL, op, (x,))


def _ends_with(s: Expr, p: Expr) -> Expr:
    from hetdb.sql.functions_ext import _const_string, _string

    pat = _string(p, "ends_with")
    _const_string(pat, "ends_with with a pattern")
    return Call(T.BOOL, "ends_with", (_string(s, "ends_with"), pat))


def _anonymous(name: str, args: list[Expr]) -> Expr:
    if name == "isfinite" and len(args) == 1:
        return _check("isfinite", args[0])
    if name in ("gcd", "lcm") and len(args) == 2:
        for a in args:
            if not (a.dtype.is_integer or TY.is_null_literal(a)) or a.dtype.kind == "int128":
                raise SqlError(f"{name} needs integers, got {a.dtype}")
        return Call(T.INT64, name, tuple(TY.cast_to(a, T.INT64) for a in args))
    if name == "even" and len(args) == 1:
        return Call(T.FLOAT64, "even", (_double(args[0], "even"),))
    if name == "strlen" and len(args) == 1:  # bytes of the UTF-8 text (length() counts characters)
        from hetdb.sql.functions_ext import _string

        return Call(T.INT64, "strlen", (_string(args[0], "strlen"),))
    if name == "suffix" and len(args) == 2:
        return _ends_with(*args)
    if name == "to_base" and len(args) in (2, 3):
        for a in args:
            if not (a.dtype.is_integer or TY.is_null_literal(a)) or a.dtype.kind == "int128":
                raise SqlError(f"to_base needs integers, got {a.dtype}")
        return Call(T.STRING, "to_base", tuple(TY.cast_to(a, T.INT64) for a in args))
    if name == "epoch_ns" and len(args) == 1:
        from hetdb.sql.functions_more import epoch_units

        return Call(T.INT64, "mul", (epoch_units(args[0], 1, "epoch_ns"), Literal(T.INT64, 1000)))
    raise UnsupportedError(f"function {name}() with {len(args)} arguments")
