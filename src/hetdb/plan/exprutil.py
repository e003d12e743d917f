"""Small helpers over the expression IR shared by the binder and the optimizer passes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hetdb import types as T
from hetdb.plan.expr import AggCall, Call, Case, Cast, ColumnRef, Expr, Lambda, Literal


def conjuncts(e: Expr | None) -> list[Expr]:
    """Split nested ANDs into a flat list (None -> [])."""
    if e is None:
        return []
    if isinstance(e, Call) and e.op == "and":
        out: list[Expr] = []
        for a in e.args:
            out.extend(conjuncts(a))
        return out
    return [e]


def and_all(es: list[Expr]) -> Expr | None:
    """AND of a list (None when empty), left-deep, in list order."""
    out: Expr | None = None
    for e in es:
        out = e if out is None else Call(T.BOOL, "and", (out, e))
    return out


def disjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, Call) and e.op == "or":
        out: list[Expr] = []
        for a in e.args:
            out.extend(disjuncts(a))
        return out
    return [e]


def factor_or(e: Expr) -> Expr:
    """(A AND B) OR (A AND C) -> A AND (B OR C): conjuncts common to every branch of an OR come out,
    so a join condition repeated in each branch (TPC-H Q19) becomes a join key."""
    if not (isinstance(e, Call) and e.op == "or"):
        return e
    branches = [conjuncts(d) for d in disjuncts(e)]
    common = [c for c in branches[0] if all(c in b for b in branches[1:])]
    if not common:
        return e
    rests = [[c for c in b if c not in common] for b in branches]
    if any(not r for r in rests):  # one branch is exactly the common part: the OR adds nothing
        return and_all(common)
    rest: Expr | None = None
    for r in rests:
        branch = and_all(r)
        rest = branch if rest is None else Call(T.BOOL, "or", (rest, branch))
    return and_all(common + [rest])


def transform(e: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild ``e`` bottom-up-after-top-down: ``fn`` may replace a node (returning non-None) before
    its children are visited."""
    r = fn(e)
    if r is not None:
        return r
    if isinstance(e, Call):
        return dataclasses.replace(e, args=tuple(transform(a, fn) for a in e.args))
    if isinstance(e, Cast):
        return dataclasses.replace(e, arg=transform(e.arg, fn))
    if isinstance(e, Case):
        return dataclasses.replace(
            e, whens=tuple((transform(c, fn), transform(v, fn)) for c, v in e.whens),
            otherwise=None if e.otherwise is None else transform(e.otherwise, fn))
    if isinstance(e, AggCall) and e.arg is not None:
        return dataclasses.replace(e, arg=transform(e.arg, fn))
    if isinstance(e, Lambda):
        return dataclasses.replace(e, body=transform(e.body, fn))
    return e


def substitute(e: Expr, mapping: dict[str, Expr]) -> Expr:
    """Replace column references by the expressions ``mapping`` gives for their cids."""
    if not mapping:
        return e
    return transform(e, lambda x: mapping.get(x.cid) if isinstance(x, ColumnRef) else None)


def eq_sides(e: Expr, left: frozenset[str] | set[str], right: frozenset[str] | set[str]
             ) -> tuple[Expr, Expr] | None:
    """If ``e`` is ``a = b`` with a over ``left`` only and b over ``right`` only (or swapped), return
    (left side, right side); else None. Both sides must reference at least one column."""
    if not (isinstance(e, Call) and e.op == "eq"):
        return None
    a, b = e.args
    ca, cb = a.columns(), b.columns()
    if not ca or not cb:
        return None
    if ca <= left and cb <= right:
        return a, b
    if ca <= right and cb <= left:
        return b, a
    return None


def split_join_condition(preds: list[Expr], left: frozenset[str] | set[str],
                         right: frozenset[str] | set[str]):
    """Sort predicates for a join of ``left`` and ``right`` column sets into
    (left_keys, right_keys, residual conjuncts over both sides, predicates not spanning both sides)."""
    lk: list[Expr] = []
    rk: list[Expr] = []
    residual: list[Expr] = []
    rest: list[Expr] = []
    both = set(left) | set(right)
    for p in preds:
        cols = p.columns()
        sides = eq_sides(p, left, right)
        if sides is not None:
            lk.append(sides[0])
            rk.append(sides[1])
        elif cols <= both and cols & set(left) and cols & set(right):
            residual.append(p)
        else:
            rest.append(p)
    return lk, rk, residual, rest


def literal_true() -> Literal:
    return Literal(T.BOOL, True)
