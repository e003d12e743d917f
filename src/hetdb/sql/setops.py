"""UNION ALL / UNION: both sides bound as queries, cast to common column types, concatenated by a
Union node; UNION (distinct) groups by every column. ORDER BY / LIMIT / OFFSET written after the last
SELECT apply to the whole union (sqlglot attaches them to the Union node) and name its output columns
(by name or position), as in DuckDB."""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import ColumnRef, Field, SortKey
from hetdb.plan.logical import Aggregate, Limit, Node, Project, Sort, Union
from hetdb.sql import typing as TY
from hetdb.sql.exprs import ExprContext, bind_expr
from hetdb.sql.scope import Rel, Scope


def _ref(f: Field) -> ColumnRef:
    return ColumnRef(f.dtype, f.cid, f.nullable)


def _conform(binder, plan: Node, fields: list[Field], types: list) -> Node:
    """``plan`` with its output cast to ``types`` (a Project only where a type differs)."""
    if all(f.dtype == t for f, t in zip(fields, types)):
        return plan
    exprs = tuple((Field(binder.new_cid("u"), f.name, t, f.nullable), TY.cast_to(_ref(f), t))
                  for f, t in zip(fields, types))
    return Project(plan, exprs)


def bind_union(binder, node: exp.Union, outer: Scope | None):
    """Bind ``left UNION [ALL] right`` (with its ORDER BY / LIMIT) into a BoundQuery."""
    from hetdb.sql.binder import BoundQuery, _int_clause

    sides = [binder.bind_query(node.this, outer), binder.bind_query(node.expression, outer)]
    if any(q.corr_keys or q.corr_residual for q in sides):
        raise UnsupportedError("correlated subqueries made of UNION")
    left, right = sides
    if len(left.fields) != len(right.fields):
        raise SqlError(f"the two sides of UNION return different numbers of columns: "
                       f"{len(left.fields)} and {len(right.fields)}")
    types = [TY.common_of([_ref(a), _ref(b)], "UNION") for a, b in zip(left.fields, right.fields)]
    fields = [Field(binder.new_cid("union"), a.name, t, a.nullable or b.nullable)
              for a, b, t in zip(left.fields, right.fields, types)]
    plan: Node = Union(tuple(_conform(binder, q.plan, q.fields, types) for q in sides), tuple(fields))
    if node.args.get("distinct"):
        new = [Field(binder.new_cid("union"), f.name, f.dtype, f.nullable) for f in fields]
        plan = Aggregate(plan, tuple((nf, _ref(f)) for nf, f in zip(new, fields)), ())
        fields = new

    order = node.args.get("order")
    if order is not None:
        scope = Scope([Rel("", [(f.name.lower(), f) for f in fields])])
        keys = []
        for o in order.expressions:
            e = o.this
            if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
                i = int(e.this)
                if not 1 <= i <= len(fields):
                    raise SqlError(f"ORDER BY position {i} is not in the select list (1..{len(fields)})")
                key = _ref(fields[i - 1])
            else:
                key = bind_expr(e, ExprContext(scope, binder, "ORDER BY of a UNION"))
            keys.append(SortKey(key, bool(o.args.get("desc")), bool(o.args.get("nulls_first"))))
        plan = Sort(plan, tuple(keys))
    limit = _int_clause(node.args.get("limit"), "LIMIT")
    offset = _int_clause(node.args.get("offset"), "OFFSET")
    if limit is not None or offset:
        plan = Limit(plan, limit, offset or 0)
    return BoundQuery(plan, fields, [_ref(f) for f in fields], limited=limit is not None or bool(offset))
