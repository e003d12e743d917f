"""Structural checks run after every optimizer pass: every column an expression reads is produced by
the node's inputs, and cids are unique within each schema."""

from __future__ import annotations

from hetdb.errors import HetdbError
from hetdb.plan.logical import Aggregate, Filter, Join, Node, Output, Project, Scan, Sort, TopN, Union
from hetdb.plan.unnest import Unnest
from hetdb.plan.window import Window


def _need(node: Node) -> set[str]:
    out: set[str] = set()
    if isinstance(node, Filter):
        out |= node.predicate.columns()
    elif isinstance(node, Project):
        for _, e in node.exprs:
            out |= e.columns()
    elif isinstance(node, Aggregate):
        for _, e in node.keys:
            out |= e.columns()
        for _, a in node.aggs:
            out |= a.columns()
    elif isinstance(node, Join):
        for e in node.left_keys + node.right_keys:
            out |= e.columns()
        if node.residual is not None:
            out |= node.residual.columns()
    elif isinstance(node, (Sort, TopN)):
        for k in node.keys:
            out |= k.expr.columns()
    elif isinstance(node, Output):
        out |= {f.cid for f in node.fields}
    elif isinstance(node, Scan):
        for e in node.filters:
            out |= e.columns()
    elif isinstance(node, Window | Unnest):
        out |= node.reads()
    return out


def validate(node: Node, where: str = "plan", checked: dict[int, Node] | None = None) -> None:
    """Raise HetdbError naming ``where`` if the plan is malformed. ``checked``: nodes already found
    well-formed (by id; the dict keeps them alive so ids stay unique); plan nodes are immutable and a
    node's check reads only its subtree, so a subtree an earlier pass left unchanged is not checked
    again (the optimizer validates after every pass)."""
    if checked is not None:
        if checked.get(id(node)) is node:
            return
        for k in node.inputs():
            validate(k, where, checked)
        _check(node, where)
        checked[id(node)] = node
        return
    for k in node.inputs():
        validate(k, where)
    _check(node, where)


def _check(node: Node, where: str) -> None:
    schema = [f.cid for f in node.schema]
    if len(schema) != len(set(schema)):
        raise HetdbError(f"internal error after {where}: duplicate columns in {node.label()}")
    avail = {f.cid for k in node.inputs() for f in k.schema}
    if isinstance(node, Scan):
        avail = set(schema)
    if isinstance(node, Join):
        lc = {f.cid for f in node.left.schema}
        rc = {f.cid for f in node.right.schema}
        for a, b in zip(node.left_keys, node.right_keys):
            if not (a.columns() <= lc and b.columns() <= rc):
                raise HetdbError(f"internal error after {where}: join keys on the wrong side in "
                                 f"{node.label()}")
            if a.dtype != b.dtype:
                raise HetdbError(f"internal error after {where}: join key types differ in {node.label()}")
    if isinstance(node, Union):
        for k in node.inputs():
            if [f.dtype for f in k.schema] != [f.dtype for f in node.fields]:
                raise HetdbError(f"internal error after {where}: UNION input types differ in "
                                 f"{node.label()}")
    missing = _need(node) - avail
    if missing:
        raise HetdbError(f"internal error after {where}: {node.label()} reads unknown columns "
                         f"{sorted(missing)}")
