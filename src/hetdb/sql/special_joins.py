"""DuckDB's POSITIONAL JOIN and ASOF [LEFT] JOIN, as plans of ordinary nodes.

POSITIONAL: both sides numbered in input order (row_number() of an unordered window, which sees
the rows in scan order) and FULL JOINed on the numbers: row i of one side next to row i of the
other, NULLs past the shorter side.

ASOF: the ON condition's equalities and its one inequality (``l.t >= r.t``, ``>``, ``<=``, ``<``;
with USING the last column is ``l.c >= r.c``): each left row joins the right rows of equal keys
that satisfy the inequality, and keeps the nearest one (the largest ``r.t`` for >=/>, the smallest
for <=/<), numbered per left row by a window ordered on ``r.t``. A left row without a match is
dropped (ASOF JOIN) or kept with NULLs (ASOF LEFT JOIN). The join pairs every left row with all of
its candidates before the window picks one: the cost grows with the candidates per row.
"""

from __future__ import annotations

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Field, Literal, SortKey
from hetdb.plan.exprutil import and_all, split_join_condition
from hetdb.plan.logical import Filter, Join
from hetdb.plan.window import WHOLE_PARTITION, Window, WindowCall
from hetdb.sql import fromclause as FC

_FLIP = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt"}


def _numbered(new_cid, plan, name: str):
    rn = Field(new_cid(name), name, T.INT64, False)
    return Window(plan, (), (), ((rn, WindowCall(T.INT64, "row_number", (), WHOLE_PARTITION)),)), \
        ColumnRef(T.INT64, rn.cid, False)


def method_join(new_cid, method: str, side: str, items: list[FC.Item], preds: list[Expr], right: FC.Item,
                on: list[Expr]) -> FC.Item:
    """``<items> POSITIONAL JOIN right`` / ``<items> ASOF [LEFT] JOIN right ON on``: the FROM items so
    far (joined, their pending conditions applied) joined to ``right``."""
    left, rest = FC.combine(items, preds)
    if rest:
        left = FC.Item(Filter(left.plan, and_all(rest)), left.cids)
    if method == "POSITIONAL":
        return positional(new_cid, left, right)
    if side not in ("", "LEFT"):
        raise UnsupportedError(f"ASOF {side} JOIN (ASOF JOIN and ASOF LEFT JOIN are supported)")
    return asof(new_cid, left, right, on, side == "LEFT")


def positional(new_cid, left: FC.Item, right: FC.Item) -> FC.Item:
    lplan, lrn = _numbered(new_cid, left.plan, "positional_left")
    rplan, rrn = _numbered(new_cid, right.plan, "positional_right")
    return FC.Item(Join(lplan, rplan, "full", (lrn,), (rrn,), None), left.cids | right.cids)


def asof(new_cid, left: FC.Item, right: FC.Item, on: list[Expr], keep_unmatched: bool) -> FC.Item:
    """``left ASOF [LEFT] JOIN right ON on`` (``on``: conjuncts, one of them the inequality)."""
    ineq = []
    for p in on:
        if isinstance(p, Call) and p.op in _FLIP and len(p.args) == 2:
            a, b = p.args
            if a.columns() and b.columns() and a.columns() <= left.cids and b.columns() <= right.cids:
                ineq.append((p.op, b))
            elif a.columns() and b.columns() and a.columns() <= right.cids and b.columns() <= left.cids:
                ineq.append((_FLIP[p.op], a))
    if len(ineq) != 1:
        raise SqlError("ASOF JOIN needs exactly one inequality (>=, >, <=, <) between a column of each "
                       f"side in its condition, found {len(ineq)}")
    lk, rk, residual, other = split_join_condition(on, left.cids, right.cids)
    if other or len(residual) != 1:
        raise UnsupportedError("ASOF JOIN conditions other than equalities between the two sides and one "
                               "inequality")
    op, right_key = ineq[0]
    lplan, lrn = _numbered(new_cid, left.plan, "asof_left")
    joined = Join(lplan, right.plan, "left" if keep_unmatched else "inner", tuple(lk), tuple(rk), residual[0])
    k = Field(new_cid("asof_nearest"), "asof_nearest", T.INT64, False)
    nearest = SortKey(right_key, descending=op in ("ge", "gt"), nulls_first=False)
    plan = Window(joined, (lrn,), (nearest,), ((k, WindowCall(T.INT64, "row_number", (), WHOLE_PARTITION)),))
    plan = Filter(plan, Call(T.BOOL, "eq", (ColumnRef(T.INT64, k.cid, False), Literal(T.INT64, 1))))
    return FC.Item(plan, left.cids | right.cids)
