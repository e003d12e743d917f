"""semi_join_reduction: a large GROUP BY whose groups are joined to a few key values only aggregates
the rows of those keys.

``L JOIN (SELECT k, agg(..) FROM T GROUP BY k) R ON L.c = R.k`` (inner, left or semi, R on the side
whose unmatched rows are dropped): every value c takes in L's output is among the values of c in a
small filtered relation S inside L (c comes from S, or equals S's column through join keys). Groups
of R whose key is not among them are never matched, and a group's rows all share its key, so
filtering T by ``k IN S`` before grouping drops exactly those groups:
``R' = SELECT k, agg(..) FROM (T SEMI JOIN S ON T.k = S.c) GROUP BY k``.

S is a scan with filters and projections only (no joins or aggregates), so computing it twice is
cheap; the reduction is made when S is estimated much smaller than R's groups (TPC-H Q17: 200
parts against 200,000 part keys; Q20: 2,000 against 800,000).
"""

from __future__ import annotations

import dataclasses

from hetdb.plan.expr import ColumnRef, Expr
from hetdb.plan.logical import Aggregate, Filter, Join, Node, Project, Scan
from hetdb.plan.rewrite import bottom_up

NAME = "semi_join_reduction"

MIN_INPUT_ROWS = 100_000   # aggregates over fewer rows are cheap already
MAX_KEEP_SHARE = 0.25      # S's rows at most this share of the aggregate's estimated groups
# ... or of the values its key's table can hold (a sparse key takes fewer than its range: stricter)
SPAN_KEEP_SHARE = 0.02


def _is_simple(node: Node) -> bool:
    """Scan under filters/projections only: cheap to run a second time."""
    while isinstance(node, (Filter, Project)):
        node = node.input
    return isinstance(node, Scan)


def _sources(node: Node, cid: str, out: list[tuple[Node, str]]) -> None:
    """Simple subtrees of ``node`` whose column (second item) holds every value ``cid`` takes in
    ``node``'s output (NULLs aside: they match no key)."""
    if _is_simple(node) and any(f.cid == cid for f in node.schema):
        out.append((node, cid))
        return
    if isinstance(node, Filter):
        _sources(node.input, cid, out)
    elif isinstance(node, Project):
        for f, e in node.exprs:
            if f.cid == cid and isinstance(e, ColumnRef):
                _sources(node.input, e.cid, out)
    elif isinstance(node, Join) and node.kind in ("inner", "semi", "left"):
        lc = {f.cid for f in node.left.schema}
        if cid in lc:
            _sources(node.left, cid, out)
            if node.kind in ("inner", "semi"):
                # an inner/semi join keeps only rows whose key equals a right key
                for a, b in zip(node.left_keys, node.right_keys):
                    if isinstance(a, ColumnRef) and a.cid == cid and isinstance(b, ColumnRef):
                        _sources(node.right, b.cid, out)
        elif node.kind != "semi":
            _sources(node.right, cid, out)
            if node.kind == "inner":
                for a, b in zip(node.left_keys, node.right_keys):
                    if isinstance(b, ColumnRef) and b.cid == cid and isinstance(a, ColumnRef):
                        _sources(node.left, a.cid, out)


def _reduce(node: Node, cid: str, source: Node, scid: str, est) -> Node | None:
    """``node`` (projections/filters over an Aggregate grouping by ``cid``) with the aggregate's
    input semi-joined to ``source`` on the group key, or None when the shape does not fit."""
    if isinstance(node, Filter):
        inner = _reduce(node.input, cid, source, scid, est)
        return None if inner is None else dataclasses.replace(node, input=inner)
    if isinstance(node, Project):
        for f, e in node.exprs:
            if f.cid == cid and isinstance(e, ColumnRef):
                inner = _reduce(node.input, e.cid, source, scid, est)
                return None if inner is None else dataclasses.replace(node, input=inner)
        return None
    if not isinstance(node, Aggregate):
        return None
    key = next((e for f, e in node.keys if f.cid == cid), None)
    if not isinstance(key, ColumnRef):
        return None
    small = est.rows(source)
    estimated = est.rows(node.input) >= MIN_INPUT_ROWS and small <= MAX_KEEP_SHARE * est.rows(node)
    if not estimated:
        # the estimates of the groups and of the rows under them may be far too low (a sample's
        # distinct keys where the table is sorted by the key; joins estimated from them: TPC-H
        # q02, 2,000 rows and groups for 160,000 and 117,000): the key's own table tells instead,
        # a big table whose key takes many more values than the small side holds
        span = _key_span(node.input, key.cid, est.db)
        if span is None or span[1] < MIN_INPUT_ROWS or small > SPAN_KEEP_SHARE * min(span):
            return None
    sref = next(f for f in source.schema if f.cid == scid)
    if sref.dtype != key.dtype:
        return None
    right_key: Expr = ColumnRef(sref.dtype, cid=scid, nullable=sref.nullable)
    return dataclasses.replace(node, input=Join(node.input, source, "semi", (key,), (right_key,)))


def _key_span(node: Node, cid: str, db) -> tuple[float, float] | None:
    """How many values the integer column ``cid`` of ``node``'s output can take (max - min + 1 of
    the stored column it comes from, by its zone maps) and that table's rows; None when unknown."""
    while not isinstance(node, Scan):
        if isinstance(node, Filter):
            node = node.input
        elif isinstance(node, Project):
            e = next((e for f, e in node.exprs if f.cid == cid), None)
            if not isinstance(e, ColumnRef):
                return None
            node, cid = node.input, e.cid
        elif isinstance(node, Join):
            node = node.left if any(f.cid == cid for f in node.left.schema) else node.right
        else:
            return None
    field = next((f for f in node.fields if f.cid == cid), None)
    if field is None or field.dtype.kind not in ("int32", "int64") or node.source != "table" or db is None:
        return None
    try:
        reader = db.table(node.table)
        column = node.column_names[node.fields.index(field)]
        zones = [reader.zone_map(column, rg) for rg in range(reader.num_row_groups)]
    except Exception:  # noqa: BLE001 - an estimate never fails a query
        return None
    lows = [z.min for z in zones if z.min is not None]
    highs = [z.max for z in zones if z.max is not None]
    if not lows or not highs:
        return None
    return float(int(max(highs)) - int(min(lows)) + 1), float(reader.num_rows)


def _try(join: Join, small_side: str, est) -> Node:
    """Reduce the side opposite ``small_side`` (which must be one whose unmatched rows vanish)."""
    small = getattr(join, small_side)
    big_side = "right" if small_side == "left" else "left"
    big = getattr(join, big_side)
    small_keys = join.left_keys if small_side == "left" else join.right_keys
    big_keys = join.right_keys if small_side == "left" else join.left_keys
    for sk, bk in zip(small_keys, big_keys):
        if not (isinstance(sk, ColumnRef) and isinstance(bk, ColumnRef)):
            continue
        found: list[tuple[Node, str]] = []
        _sources(small, sk.cid, found)
        if not found:
            continue
        source, scid = min(found, key=lambda s: est.rows(s[0]))
        reduced = _reduce(big, bk.cid, source, scid, est)
        if reduced is not None:
            return dataclasses.replace(join, **{big_side: reduced})
    return join


def run(plan: Node, ctx) -> Node:
    est = ctx.estimator()

    def fix(node: Node) -> Node:
        if not isinstance(node, Join) or not node.left_keys:
            return node
        if node.kind in ("inner", "left", "semi"):
            out = _try(node, "left", est)          # right groups without a left match vanish
            if out is not node:
                return out
        if node.kind == "inner":
            return _try(node, "right", est)
        return node

    return bottom_up(plan, fix)
