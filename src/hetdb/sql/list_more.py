"""More functions over and into LIST values, with DuckDB's types and NULL rules: ``list_has_any``
(``array_has_any``, ``&&``), ``list_has_all`` (``array_has_all``), ``list_unique`` (UBIGINT: the
distinct non-NULL elements), ``range``/``generate_series`` as scalar functions (BIGINT[]; range
stops before the end, generate_series at it), ``string_split_regex`` (``regexp_split_to_array``)
and ``regexp_extract_all(s, pattern[, group])`` (Python regular expressions, where DuckDB uses RE2).
Evaluated by exec/lists.py."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, Expr, Literal
from hetdb.sql import typing as TY

NODES = (exp.ArrayOverlaps, exp.ArrayContainsAll, exp.GenerateSeries, exp.RegexpSplit, exp.RegexpExtractAll)
ANONYMOUS = ("list_has_all", "array_has_any", "list_unique", "regexp_split_to_array")


def handles(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    return isinstance(node, NODES)


def _text(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.STRING, None)
    if e.dtype.kind != "string":
        raise SqlError(f"{what} needs a string (VARCHAR), got {e.dtype}")
    return e


def _bigint(e: Expr, what: str) -> Expr:
    if TY.is_null_literal(e):
        return Literal(T.INT64, None)
    if not e.dtype.is_integer or e.dtype.kind == "int128":
        raise UnsupportedError(f"{what} of {e.dtype} (integer ranges are supported as a function; "
                               "ranges of dates and timestamps in FROM)")
    return TY.cast_to(e, T.INT64)


def _pair(a: Expr, b: Expr, what: str) -> tuple[Expr, Expr]:
    from hetdb.sql.list_funcs import cast_list, common_type, list_arg

    a, b = list_arg(a, what), list_arg(b, what)
    t = common_type([a.dtype, b.dtype], what)
    return cast_list(a, t), cast_list(b, t)


def bind(node: exp.Expression, b: Callable[[exp.Expression], Expr], name: str) -> Expr:
    from hetdb.sql.list_funcs import list_arg

    if isinstance(node, exp.GenerateSeries):
        start, end, step = (node.args.get(k) for k in ("start", "end", "step"))
        if end is None:
            start, end = exp.Literal.number(0), start
        args = [_bigint(b(start), name), _bigint(b(end), name),
                _bigint(b(step), name) if step is not None else Literal(T.INT64, 1)]
        exclusive = bool(node.args.get("is_end_exclusive"))
        return Call(T.list_of(T.INT64), "list_range", (*args, Literal(T.BOOL, exclusive)))
    if isinstance(node, exp.RegexpSplit) or name == "regexp_split_to_array":
        from hetdb.sql.regex_options import apply_options

        s, pat, opts = ((node.this, node.expression, node.args.get("limit")) if isinstance(node, exp.RegexpSplit)
                        else (*node.expressions[:2], (node.expressions[2:] or [None])[0]))
        pattern, _ = apply_options(_const_pattern(b(pat), name), b(opts) if opts is not None else None, name)
        return Call(T.list_of(T.STRING), "regexp_split", (_text(b(s), name), pattern))
    if isinstance(node, exp.RegexpExtractAll):
        group = node.args.get("group")
        g = b(group) if group is not None else Literal(T.INT64, 0)
        if not (isinstance(g, Literal) and isinstance(g.value, int) and g.value >= 0):
            raise UnsupportedError(f"{name} with a group that is not a constant non-negative integer")
        from hetdb.sql.regex_options import apply_options

        opts = node.args.get("parameters")
        pat, _ = apply_options(_const_pattern(b(node.expression), name), b(opts) if opts is not None else None, name)
        return Call(T.list_of(T.STRING), "regexp_extract_all", (_text(b(node.this), name), pat, Literal(T.INT64, g.value)))
    args = [b(a) for a in (node.expressions if isinstance(node, exp.Anonymous) else (node.this, node.expression))]
    if name == "list_unique":
        if len(args) != 1:
            raise SqlError("list_unique() takes 1 argument")
        return Call(T.UBIGINT, "list_unique", (list_arg(args[0], name),))
    if len(args) != 2:
        raise SqlError(f"{name}() takes 2 arguments")
    op = "list_has_all" if isinstance(node, exp.ArrayContainsAll) or name == "list_has_all" else "list_has_any"
    return Call(T.BOOL, op, _pair(args[0], args[1], name))


def _const_pattern(p: Expr, what: str) -> Expr:
    import re

    if TY.is_null_literal(p):
        return Literal(T.STRING, None)
    if not (isinstance(p, Literal) and isinstance(p.value, str)):
        raise UnsupportedError(f"{what} with a pattern that is not a constant string")
    try:
        re.compile(p.value)
    except re.error as e:
        raise SqlError(f"{what}: invalid regular expression {p.value!r} ({e})") from None
    return p
