"""FROM clause items: stored tables, CTE references and derived tables, and the initial
join tree (inner joins connected greedily by their equality conditions, so a FROM list written in any
order never starts with a cross join)."""

from __future__ import annotations

from dataclasses import dataclass

from hetdb.errors import CatalogError
from hetdb.plan.expr import Expr, Field
from hetdb.plan.exprutil import and_all, eq_sides, split_join_condition
from hetdb.plan.logical import Filter, Join, Node, Scan
from hetdb.sql.scope import Rel, suggest


@dataclass
class Item:
    """A FROM item (or several already joined): its plan and the cids it produces."""

    plan: Node
    cids: frozenset[str]


def item_of(plan: Node) -> Item:
    return Item(plan, frozenset(f.cid for f in plan.schema))


def table_scan(db, name: str, alias: str, new_cid) -> tuple[Scan, Rel]:
    """Scan of every column of stored table ``name`` (projection pruning trims it later)."""
    key = name.lower()
    if db.has_table(key):  # the usual spelling: no listing of every table (a stat each) per FROM
        match = [key]
    else:
        names = list(db.tables())
        match = [n for n in names if n.lower() == key]
        if not match:
            raise CatalogError(f"unknown table '{name}'" + suggest(key, [n.lower() for n in names]))
    reader = db.table(match[0])
    fields, cols = [], []
    for spec in reader.schema:
        fields.append(Field(new_cid(spec.name.lower()), spec.name.lower(), spec.dtype,
                            bool(getattr(spec, "nullable", True))))
        cols.append(spec.name)
    scan = Scan(match[0], tuple(fields), tuple(cols))
    return scan, Rel(alias, [(f.name, f) for f in fields])


def combine(items: list[Item], preds: list[Expr]) -> tuple[Item, list[Expr]]:
    """Join ``items`` with inner joins, next item = first one (in FROM order) connected to what is
    joined so far by an equality in ``preds``; returns the joined item and the predicates not used
    (those over one item only, or over none)."""
    todo = list(items)
    cur = todo.pop(0)
    pending = list(preds)
    while todo:
        pick = 0
        for i, it in enumerate(todo):
            if any(eq_sides(p, cur.cids, it.cids) is not None for p in pending):
                pick = i
                break
        nxt = todo.pop(pick)
        spanning = [p for p in pending if p.columns() <= (cur.cids | nxt.cids)
                    and p.columns() & cur.cids and p.columns() & nxt.cids]
        pending = [p for p in pending if not any(p is s for s in spanning)]
        lk, rk, residual, _ = split_join_condition(spanning, cur.cids, nxt.cids)
        kind = "inner" if (lk or residual) else "cross"
        plan = Join(cur.plan, nxt.plan, kind, tuple(lk), tuple(rk), and_all(residual))
        cur = Item(plan, cur.cids | nxt.cids)
    return cur, pending


def outer_join(left: Item, right: Item, on: list[Expr], kind: str) -> Item:
    """``left RIGHT|FULL JOIN right ON on``. For RIGHT, conditions on the left side alone filter the
    left input (the mirror image of left_join); for FULL every non-key condition stays a residual,
    since it decides matches for both sides."""
    pushed = [p for p in on if kind == "right" and p.columns() and p.columns() <= left.cids]
    rest = [p for p in on if not any(p is q for q in pushed)]
    lk, rk, residual, other = split_join_condition(rest, left.cids, right.cids)
    lplan = left.plan if not pushed else Filter(left.plan, and_all(pushed))
    plan = Join(lplan, right.plan, kind, tuple(lk), tuple(rk), and_all(residual + other))
    return Item(plan, left.cids | right.cids)


def left_join(left: Item, right: Item, on: list[Expr]) -> Item:
    """``left LEFT JOIN right ON on``: equalities become keys, conditions on the right side alone
    filter the right input, the rest stays a residual (it decides matches, never drops left rows)."""
    right_only = [p for p in on if p.columns() and p.columns() <= right.cids]
    rest = [p for p in on if not any(p is r for r in right_only)]
    lk, rk, residual, other = split_join_condition(rest, left.cids, right.cids)
    rplan = right.plan if not right_only else Filter(right.plan, and_all(right_only))
    plan = Join(left.plan, rplan, "left", tuple(lk), tuple(rk), and_all(residual + other))
    return Item(plan, left.cids | right.cids)
