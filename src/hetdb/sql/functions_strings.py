"""String and numeric functions DuckDB users reach for, with DuckDB's types and NULL rules (NULL in any
argument gives NULL): translate, levenshtein, damerau_levenshtein, sha1/sha256 (hex text), ord
(= unicode), prefix (= starts_with), hex/bin of integers (two's complement, upper case) and of
strings (their UTF-8 bytes), regexp_escape, signbit, gamma/lgamma, nextafter, round_even (DOUBLE).
Executed on the host by exec/functions_strings.py (EXPLAIN ANALYZE shows the host step)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import typing as TY

NODES: tuple[type, ...] = (exp.Translate, exp.Levenshtein, exp.SHA, exp.SHA2, exp.Hex)
ANONYMOUS = ("damerau_levenshtein", "ord", "prefix", "bin", "regexp_escape", "signbit", "gamma", "lgamma",
             "nextafter", "round_even")


def handles(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    return isinstance(node, NODES)


def _str(e: Expr, what: str) -> Expr:
    e = TY.null_as_string(e)
    if e.dtype.kind != "string":
        raise SqlError(f"{what} needs a string (VARCHAR), got {e.dtype}")
    return e


def _double(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.FLOAT64, None)
    if not e.dtype.is_numeric:
        raise SqlError(f"{what} needs a number, got {e.dtype}")
    return TY.cast_to(e, T.FLOAT64)


def _args(node: exp.Expression) -> list[exp.Expression]:
    return [node.this, *node.expressions] if isinstance(node, exp.Anonymous) else \
        [a for a in (node.this, node.args.get("expression")) if a is not None]


def bind(node: exp.Expression, b: Callable[[exp.Expression], Expr]) -> Expr:  # noqa: C901
    if isinstance(node, exp.Translate):
        return Call(T.STRING, "translate", tuple(_str(b(node.args[k]), "translate") for k in ("this", "from_", "to")))
    if isinstance(node, exp.Levenshtein):
        return Call(T.INT64, "levenshtein", (_str(b(node.this), "levenshtein"), _str(b(node.expression), "levenshtein")))
    if isinstance(node, exp.SHA | exp.SHA2):
        bits = 160 if isinstance(node, exp.SHA) else int(node.args["length"].name or 256)
        if bits not in (160, 256):
            raise UnsupportedError(f"sha2 with {bits} bits (sha1 and sha256 are supported)")
        op = "sha1" if bits == 160 else "sha256"
        return Call(T.STRING, op, (_str(b(node.this), op),))
    if isinstance(node, exp.Hex):
        return _radix("hex", b(node.this))
    name = str(node.this).lower()
    args = [b(a) for a in node.expressions]
    want = {"damerau_levenshtein": 2, "ord": 1, "prefix": 2, "bin": 1, "regexp_escape": 1, "signbit": 1,
            "gamma": 1, "lgamma": 1, "nextafter": 2, "round_even": 2}[name]
    if len(args) != want:
        raise SqlError(f"{name}() takes {want} argument{'s' if want > 1 else ''}, got {len(args)}")
    if name == "damerau_levenshtein":
        return Call(T.INT64, name, tuple(_str(a, name) for a in args))
    if name == "ord":
        return Call(T.INT32, "unicode", (_str(args[0], name),))
    if name == "prefix":
        text, pat = _str(args[0], name), _str(args[1], name)
        if TY.is_null_literal(pat):
            return Literal(T.BOOL, None)
        return Call(T.BOOL, "starts_with" if isinstance(pat, Literal) else "starts_with_rows", (text, pat))
    if name == "bin":
        return _radix("bin", args[0])
    if name == "regexp_escape":
        return Call(T.STRING, name, (_str(args[0], name),))
    if name == "signbit":
        return Call(T.BOOL, name, (_double(args[0], name),))
    if name in ("gamma", "lgamma"):
        return Call(T.FLOAT64, name, (_double(args[0], name),))
    if name == "nextafter":
        return Call(T.FLOAT64, name, (_double(args[0], name), _double(args[1], name)))
    x, digits = args
    if not (TY.is_null_literal(x) or x.dtype.kind == "float64"):
        raise UnsupportedError(f"round_even of {x.dtype} (round_even of a DOUBLE is supported: cast the "
                               "argument to DOUBLE)")
    if not (TY.is_null_literal(digits) or digits.dtype.is_integer):
        raise SqlError(f"round_even needs an integer number of digits, got {digits.dtype}")
    return Call(T.FLOAT64, name, (_double(x, name), TY.cast_to(digits, T.INT64)))


def _radix(op: str, x: Expr) -> Expr:
    if TY.is_null_literal(x):
        return Literal(T.STRING, None)
    if x.dtype.kind == "string":
        return Call(T.STRING, f"{op}_text", (x,))
    if x.dtype.is_integer and x.dtype.kind != "int128":
        return Call(T.STRING, f"{op}_int", (TY.cast_to(x, T.INT64),))
    raise UnsupportedError(f"{op}() of {x.dtype} ({op} of integers and strings is supported)")
