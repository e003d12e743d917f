"""Lambdas over LIST values: ``list_transform(l, lambda x[, i]: ...)`` (``list_apply``,
``array_transform``, ``array_apply``), ``list_filter(l, lambda x[, i]: ...)`` (``array_filter``) and
``list_reduce(l, lambda acc, x[, i]: ...[, initial])`` (``array_reduce``), plus ``list_concat`` (``list_cat``, ``array_concat``, ``array_cat``)
and ``flatten``. The body sees its parameters (the element, and its 1-based position) and, outside
aggregated queries, the row's columns. DuckDB 2.0 refuses the deprecated ``x -> ...`` arrow syntax
(sql/parse.py refuses it too)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import CatalogError, SqlError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Lambda, Literal
from hetdb.sql import typing as TY

NODES = (exp.Transform, exp.ArrayFilter, exp.ArrayConcat, exp.Flatten)
ANONYMOUS = ("list_apply", "array_transform", "array_apply", "list_cat", "list_reduce", "array_reduce")


class LambdaScope:
    """The lambda's parameters, then (when given) the enclosing query's columns."""

    def __init__(self, params: dict[str, ColumnRef], outer) -> None:
        self.params = params
        self.outer = outer

    def resolve(self, table: str | None, name: str) -> ColumnRef:
        if table is None and name.lower() in self.params:
            return self.params[name.lower()]
        if self.outer is None:
            raise CatalogError(f"a lambda in an aggregated query reads only its parameters "
                               f"({', '.join(self.params)}), not '{name}'")
        return self.outer.resolve(table, name)

    def __getattr__(self, name: str):
        if self.outer is None:
            raise UnsupportedError("this construct inside a lambda of an aggregated query")
        return getattr(self.outer, name)


def _as_columns(body: exp.Expression, params: set[str]) -> exp.Expression:
    """sqlglot reads a lambda's parameters in its body as bare identifiers: make them columns."""
    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Identifier) and n.name.lower() in params and not isinstance(n.parent, exp.Column):
            return exp.column(n.name)
        return n
    return body.copy().transform(fix)


def bind_lambda(node: exp.Expression, elem: T.DataType, ctx, what: str, acc: T.DataType | None = None) -> Lambda:
    """``node`` bound with its parameters: the element (of type ``elem``) and optionally its position;
    for list_reduce (``acc``, the accumulator's type) the accumulator first."""
    from hetdb.sql.exprs import ExprContext, bind_expr

    if not isinstance(node, exp.Lambda):
        raise SqlError(f"{what} needs a lambda as its second argument (lambda x: ...)")
    names = [i.name.lower() for i in node.expressions]
    types = (elem, T.INT64) if acc is None else (acc, elem, T.INT64)
    least = 1 if acc is None else 2
    if not least <= len(names) <= len(types) or len(set(names)) != len(names):
        raise SqlError(f"{what}: a lambda takes " + ("the element and optionally its position (lambda x, i: ...)"
                       if acc is None else "the accumulated value, the element and optionally its position "
                       "(lambda acc, x, i: ...)"))
    refs = [ColumnRef(t, ctx.binder.new_cid(f"lambda_{n}"), True) for n, t in zip(names, types)]
    scope = LambdaScope(dict(zip(names, refs)), None if ctx.agg is not None else ctx.scope)
    body = bind_expr(_as_columns(node.this, set(names)), ExprContext(scope, ctx.binder, f"a lambda of {what}"))
    return Lambda(body.dtype, params=tuple(refs), body=body)


def handles(node: exp.Expression) -> bool:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower() in ANONYMOUS
    return isinstance(node, NODES)


def bind(node: exp.Expression, b: Callable[[exp.Expression], Expr], ctx, name: str) -> Expr:
    from hetdb.sql.list_funcs import list_arg

    if isinstance(node, exp.Flatten):
        lst = list_arg(b(node.this), "flatten")
        if lst.dtype.elem.kind != "list":
            raise SqlError(f"flatten needs a list of lists, got {lst.dtype}")
        return Call(lst.dtype.elem, "list_flatten", (lst,))
    if isinstance(node, exp.ArrayConcat) or name == "list_cat":
        parts = [node.this, *node.expressions] if isinstance(node, exp.ArrayConcat) else list(node.expressions)
        return concat([b(p) for p in parts], name)
    if isinstance(node, exp.Anonymous):
        args = node.expressions
        if name in ("list_reduce", "array_reduce") and len(args) == 3:
            return _reduce(list_arg(b(args[0]), name), args[1], b(args[2]), ctx)
        if len(args) != 2:
            raise SqlError(f"{name}() takes a list and a lambda")
        lst_node, fn = args
    else:
        lst_node, fn = node.this, node.expression
    lst = list_arg(b(lst_node), name)
    if name in ("list_reduce", "array_reduce"):
        return _reduce(lst, fn, None, ctx)
    lam = bind_lambda(fn, lst.dtype.elem, ctx, name)
    if isinstance(node, exp.ArrayFilter):
        if not (lam.dtype == T.BOOL or TY.is_null_literal(lam.body)):
            raise SqlError(f"{name} needs a lambda returning BOOLEAN, got {lam.dtype}")
        return Call(lst.dtype, "list_filter", (lst, lam))
    if lam.dtype.tz or lam.dtype.kind in ("interval", "int128"):
        raise UnsupportedError(f"{name} returning {lam.dtype} values (cast them: CAST(... AS BIGINT))")
    return Call(T.list_of(lam.dtype), "list_transform", (lst, lam))


def _reduce(lst: Expr, fn: exp.Expression, initial: Expr | None, ctx) -> Expr:
    """list_reduce(l, lambda acc, x[, i]: ...[, initial]): the accumulator takes the type the body has
    when the accumulator is the element (or the initial value), as DuckDB types it."""
    elem = lst.dtype.elem
    first = elem if initial is None or TY.is_null_literal(initial) else \
        TY.common_of([ColumnRef(elem, ""), ColumnRef(initial.dtype, "")], "list_reduce")
    acc = bind_lambda(fn, elem, ctx, "list_reduce", first).dtype
    lam = bind_lambda(fn, elem, ctx, "list_reduce", acc)
    if acc.tz or acc.kind in ("interval", "int128"):
        raise UnsupportedError(f"list_reduce of {acc} values (cast them: CAST(... AS BIGINT))")
    lam = Lambda(acc, lam.params, TY.cast_to(lam.body, acc))
    args = (lst, lam) if initial is None else (lst, lam, TY.cast_to(initial, acc))
    return Call(acc, "list_reduce", args)


def concat(parts: list[Expr], name: str) -> Expr:
    """list_concat: NULL lists count as empty (two NULLs give []), elements cast to a common type."""
    typed = [p for p in parts if p.dtype.kind == "list" or not TY.is_null_literal(p)]
    if not typed:
        raise UnsupportedError(f"{name} of untyped NULLs (give them a type: CAST(NULL AS INTEGER[]))")
    from hetdb.sql.list_funcs import list_arg

    for p in typed:
        list_arg(p, name)
    from hetdb.sql.list_funcs import cast_list, common_type

    target = common_type([p.dtype for p in typed], name)
    cast = [Literal(target, None) if p.dtype.kind != "list" else cast_list(p, target) for p in parts]
    return Call(target, "list_concat", tuple(cast))
