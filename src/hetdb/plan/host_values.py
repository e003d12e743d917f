"""Value types only the host computes with (LIST: Python object arrays, exec/lists.py; TIME:
exec/functions_time.py): a GPU connection runs plans holding them on the CPU (exec/engine.py)."""

from __future__ import annotations

import dataclasses

from hetdb.plan.expr import Expr, SortKey
from hetdb.plan.logical import Node
from hetdb.plan.unnest import Unnest

HOST_KINDS = {"list": "LIST", "time": "TIME"}


def _exprs(value: object):
    if isinstance(value, Expr):
        yield value
    elif isinstance(value, SortKey):
        yield value.expr
    elif isinstance(value, tuple):
        for v in value:
            yield from _exprs(v)


def host_kind(node: Node) -> str:
    """The SQL name of a host-only type ``node`` itself (not its inputs) outputs or computes with
    ("" if none): an expression's parts count (``len(string_split(s, ','))`` has no LIST column in
    any schema), and an Unnest reads lists."""
    if isinstance(node, Unnest):
        return "LIST"
    for f in node.schema:
        if f.dtype.kind in HOST_KINDS:
            return HOST_KINDS[f.dtype.kind]
    for f in dataclasses.fields(node):
        for e in _exprs(getattr(node, f.name)):
            stack = [e]
            while stack:
                x = stack.pop()
                if x.dtype.kind in HOST_KINDS:
                    return HOST_KINDS[x.dtype.kind]
                stack.extend(x.children())
    return ""
