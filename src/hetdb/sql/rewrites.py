"""Constructs bound by rewriting them into ones hetdb already has:

  agg(x) FILTER (WHERE c)     -> agg(CASE WHEN c THEN x END)   (count(*): count(CASE WHEN c THEN 1 END))
  a IS NOT DISTINCT FROM b    -> coalesce(a = b, a IS NULL AND b IS NULL)   (never NULL)
  a IS DISTINCT FROM b        -> NOT (a IS NOT DISTINCT FROM b)
  SELECT DISTINCT ON (e...)   -> row_number() OVER (PARTITION BY e... ORDER BY <the ORDER BY>) = 1
"""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Field, Literal, SortKey
from hetdb.plan.logical import Filter, Node
from hetdb.plan.window import WHOLE_PARTITION, Window, WindowCall
from hetdb.sql import typing as TY


def filter_as_case(node: exp.Filter) -> exp.Expression:
    """The aggregate of ``agg FILTER (WHERE cond)`` with its argument NULL where ``cond`` is not TRUE."""
    if isinstance(node.this, exp.ArrayAgg):  # it keeps NULLs: a CASE would add them for filtered rows
        raise UnsupportedError("array_agg(...) FILTER (WHERE ...) (filter the rows in a subquery instead)")
    agg = node.this.copy()
    where = node.expression
    cond = where.this if isinstance(where, exp.Where) else where

    def when(value: exp.Expression) -> exp.Expression:
        return exp.Case(ifs=[exp.If(this=cond.copy(), true=value)])

    arg = agg.this
    if isinstance(agg, exp.Count) and (arg is None or isinstance(arg, exp.Star)):
        agg.set("this", when(exp.Literal.number(1)))
    elif isinstance(arg, exp.Order):
        arg.set("this", when(arg.this))
    elif isinstance(arg, exp.Distinct):
        arg.set("expressions", [when(e) for e in arg.expressions])
    else:
        agg.set("this", when(arg))
    return agg


def null_safe_equal(a: Expr, b: Expr, negate: bool) -> Expr:
    from hetdb.sql.exprs import compare

    both_null = Call(T.BOOL, "and", (Call(T.BOOL, "is_null", (a,)), Call(T.BOOL, "is_null", (b,))))
    if TY.is_null_literal(a) or TY.is_null_literal(b):
        eq: Expr = both_null
    else:
        eq = Call(T.BOOL, "coalesce", (compare("eq", a, b), both_null))
    return Call(T.BOOL, "not", (eq,)) if negate else eq


def distinct_on(new_cid, plan: Node, on: list[Expr], order: list[tuple[Expr, bool, bool]]) -> Node:
    """The first row (in ``order``) of each group of rows equal on ``on``."""
    rn = Field(new_cid("distinct_on"), "distinct_on", T.INT64, False)
    keys = tuple(SortKey(e, desc, nf) for e, desc, nf in order)
    plan = Window(plan, tuple(on), keys, ((rn, WindowCall(T.INT64, "row_number", (), WHOLE_PARTITION)),))
    return Filter(plan, Call(T.BOOL, "eq", (ColumnRef(T.INT64, rn.cid, False), Literal(T.INT64, 1))))


def like_escape(s: Expr, pattern: Expr, escape: Expr, ilike: bool, negate: bool) -> Expr:
    """``s [NOT] [I]LIKE pattern ESCAPE c``: a pattern whose escapes touch no wildcard stays a LIKE
    (the device kernels); one with an escaped % or _ becomes a full regular-expression match."""
    import re

    from hetdb.errors import SqlError

    if not all(isinstance(e, Literal) and (e.value is None or isinstance(e.value, str)) for e in (pattern, escape)):
        raise UnsupportedError("LIKE ... ESCAPE with a pattern or escape that is not a constant string")
    if pattern.value is None or escape.value is None:
        return Literal(T.BOOL, None)
    esc, text = escape.value, pattern.value
    if len(esc) > 1:
        raise SqlError("Invalid escape string. Escape string must be empty or one character.")
    plain, regex, i = [], [], 0
    while i < len(text):
        c = text[i]
        if esc and c == esc:
            if i + 1 == len(text):
                raise SqlError("Like pattern must not end with escape character!")
            nxt = text[i + 1]
            plain.append(None if nxt in "%_" else nxt)  # None: an escaped wildcard, no plain LIKE
            regex.append(re.escape(nxt))
            i += 2
            continue
        plain.append(c)
        regex.append({"%": ".*", "_": "."}.get(c, re.escape(c)))
        i += 1
    if None not in plain:
        e = Call(T.BOOL, "ilike" if ilike else "like", (s, Literal(T.STRING, "".join(plain))))
    else:
        flags = "(?s" + ("i" if ilike else "") + ")"
        e = Call(T.BOOL, "regexp_full_match", (s, Literal(T.STRING, flags + "".join(regex))))
    return Call(T.BOOL, "not", (e,)) if negate else e
