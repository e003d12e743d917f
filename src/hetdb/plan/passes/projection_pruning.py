"""projection_pruning: every node produces only columns something above it reads; a Scan reads only
the stored columns the query uses (plus those its pushed filters need)."""

from __future__ import annotations

import dataclasses

from hetdb.plan.expr import ColumnRef
from hetdb.plan.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    Node,
    Output,
    Project,
    Scan,
    Sort,
    TopN,
    Union,
)
from hetdb.plan.sample import Sample
from hetdb.plan.unnest import Unnest
from hetdb.plan.window import Window

NAME = "projection_pruning"


def _prune(node: Node, need: set[str], wrap: bool = False) -> Node:
    """``node`` producing (at least) the columns ``need``. With ``wrap`` a join whose output has
    columns nothing above reads (keys only the join itself compared) gets a projection above it, so
    the executor never gathers them."""
    if isinstance(node, Output):
        return dataclasses.replace(node, input=_prune(node.input, {f.cid for f in node.fields}, wrap))
    if isinstance(node, Scan):
        keep = set(need)
        for e in node.filters:
            keep |= e.columns()
        pairs = [(f, c) for f, c in zip(node.fields, node.column_names) if f.cid in keep]
        if not pairs:  # row count only (COUNT(*)): read the first column
            pairs = [(node.fields[0], node.column_names[0])]
        scan = dataclasses.replace(node, fields=tuple(f for f, _ in pairs),
                                   column_names=tuple(c for _, c in pairs))
        out = [f for f, _ in pairs if f.cid in need]
        if out and len(out) < len(pairs):
            # columns only the pushed filters read stop at the scan: joins above neither store nor
            # gather them (the scan skips them once the filter ran)
            return Project(scan, tuple((f, ColumnRef(f.dtype, cid=f.cid, nullable=f.nullable))
                                       for f in out))
        return scan
    if isinstance(node, Project):
        exprs = [(f, e) for f, e in node.exprs if f.cid in need] or list(node.exprs[:1])
        below: set[str] = set()
        for _, e in exprs:
            below |= e.columns()
        return dataclasses.replace(node, input=_prune(node.input, below, wrap), exprs=tuple(exprs))
    if isinstance(node, Filter):
        return dataclasses.replace(node, input=_prune(node.input, need | node.predicate.columns(), wrap))
    if isinstance(node, Aggregate):
        aggs = [(f, a) for f, a in node.aggs if f.cid in need]
        if not aggs and not node.keys and node.aggs:
            aggs = list(node.aggs[:1])  # a global aggregate still returns its one row
        below: set[str] = set()
        for _, e in node.keys:
            below |= e.columns()
        for _, a in aggs:
            below |= a.columns()
        return dataclasses.replace(node, input=_prune(node.input, below, wrap), aggs=tuple(aggs))
    if isinstance(node, (Sort, TopN)):
        below = set(need)
        for k in node.keys:
            below |= k.expr.columns()
        return dataclasses.replace(node, input=_prune(node.input, below, wrap))
    if isinstance(node, Limit | Sample):
        return dataclasses.replace(node, input=_prune(node.input, need, wrap))
    if isinstance(node, Window):
        funcs = tuple((f, c) for f, c in node.funcs if f.cid in need)
        if not funcs:
            return _prune(node.input, need, wrap)
        node = dataclasses.replace(node, funcs=funcs)
        child = _prune(node.input, (need | node.reads()) - {f.cid for f, _ in funcs}, wrap)
        keep = tuple(f.cid for f in child.schema if f.cid in need and (node.keep is None or f.cid in node.keep))
        return dataclasses.replace(node, input=child, keep=None if len(keep) == len(child.schema) else keep)
    if isinstance(node, Unnest):
        lists = tuple((f, e) for f, e in node.lists if f.cid in need) or node.lists[:1]
        node = dataclasses.replace(node, lists=lists)
        return dataclasses.replace(node, input=_prune(node.input, (need | node.reads()) - {f.cid for f, _ in lists}, wrap))
    if isinstance(node, Join):
        lc = {f.cid for f in node.left.schema}
        rc = {f.cid for f in node.right.schema}
        extra: set[str] = set()
        for e in node.left_keys + node.right_keys:
            extra |= e.columns()
        if node.residual is not None:
            extra |= node.residual.columns()
        want = need | extra
        right_need = want & rc if node.kind not in ("semi", "anti", "mark") else extra & rc
        joined = dataclasses.replace(node, left=_prune(node.left, want & lc, wrap),
                                     right=_prune(node.right, right_need, wrap))
        if wrap:
            keep = [f for f in joined.schema if f.cid in need] or list(joined.schema[:1])
            if len(keep) < len(joined.schema):
                return Project(joined, tuple((f, ColumnRef(f.dtype, cid=f.cid, nullable=f.nullable))
                                             for f in keep))
        return joined
    if isinstance(node, Union):
        # Inputs map onto the union's columns by position: each keeps its whole schema.
        return dataclasses.replace(node, children=tuple(_prune(k, {f.cid for f in k.schema}, wrap)
                                                        for k in node.children))
    return node


def run(plan: Node, ctx) -> Node:
    return _prune(plan, {f.cid for f in plan.schema})


def run_late(plan: Node, ctx) -> Node:
    """After join ordering: prune again (the join tree changed) and drop join-only key columns."""
    return _prune(plan, {f.cid for f in plan.schema}, wrap=True)
