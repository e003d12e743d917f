"""Set operations: both sides bound as queries and cast to common column types.

UNION ALL concatenates (a Union node); UNION groups by every column; UNION [ALL] BY NAME matches
columns by name (the left side's columns, then the right side's new ones; a column a side lacks is
NULL there). INTERSECT / EXCEPT are semi / anti joins of the (distinct) left rows on every column,
NULLs comparing equal (a NULL-safe key pair per nullable column: is-NULL flag, value or a constant);
INTERSECT ALL / EXCEPT ALL number the duplicates of each side (row_number over all columns) and join
on the number too, so a row is kept min(m, n) / max(m - n, 0) times. ORDER BY / LIMIT / OFFSET written
after the last SELECT apply to the whole result (sqlglot attaches them to the set operation node) and
name its output columns (by name or position), as in DuckDB."""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Field, Literal, SortKey
from hetdb.plan.logical import Aggregate, Join, Node, Project, Sort, Union, limited
from hetdb.plan.window import WHOLE_PARTITION, Window, WindowCall
from hetdb.sql import typing as TY
from hetdb.sql.exprs import ExprContext, bind_expr
from hetdb.sql.list_keys import sort_key
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


def _by_name(binder, left, right) -> None:
    """Rearrange both sides of ``UNION BY NAME`` onto one column list (in place)."""
    sides = [{f.name.lower(): f for f in q.fields} for q in (left, right)]
    names = [f.name.lower() for f in left.fields]
    names += [n for n in (f.name.lower() for f in right.fields) if n not in names]
    for q, mine, other in ((left, sides[0], sides[1]), (right, sides[1], sides[0])):
        exprs = []
        for n in names:
            f = mine.get(n)
            if f is None:
                o = other[n]
                exprs.append((Field(binder.new_cid("byname"), o.name, o.dtype, True), Literal(o.dtype, None)))
            else:
                exprs.append((Field(binder.new_cid("byname"), f.name, f.dtype, f.nullable), _ref(f)))
        q.plan = Project(q.plan, tuple(exprs))
        q.fields = [f for f, _ in exprs]


def _null_safe_keys(a: Field, b: Field) -> tuple[list[Expr], list[Expr]]:
    """Join keys under which ``a`` and ``b`` match when equal or both NULL."""
    if not (a.nullable or b.nullable):
        return [_ref(a)], [_ref(b)]
    zero: object = {"string": "", "bool": False, "float64": 0.0}.get(a.dtype.kind, 0)
    out: tuple[list[Expr], list[Expr]] = ([], [])
    for f, keys in ((a, out[0]), (b, out[1])):
        keys.append(Call(T.BOOL, "is_null", (_ref(f),)))
        ref = _ref(f)
        value = sort_key(ref)  # a LIST by its key text (sql/list_keys.py)
        keys.append(Call(value.dtype, "coalesce", (value, Literal(value.dtype, zero if value is ref else ""))))
    return out


def _numbered(binder, plan: Node, fields: list[Field]) -> tuple[Node, Field]:
    """``plan`` with a row number among the rows equal on every column (INTERSECT/EXCEPT ALL)."""
    rn = Field(binder.new_cid("dup"), "dup", T.INT64, False)
    return Window(plan, tuple(_ref(f) for f in fields), (), ((rn, WindowCall(T.INT64, "row_number",
                                                                           (), WHOLE_PARTITION)),)), rn


def _intersect_except(binder, node, plan_l: Node, plan_r: Node, left: list[Field], right: list[Field],
                      fields: list[Field]) -> tuple[Node, list[Field]]:
    every = not node.args.get("distinct")
    if every:
        plan_l, rn_l = _numbered(binder, plan_l, left)
        plan_r, rn_r = _numbered(binder, plan_r, right)
    else:
        new = [Field(binder.new_cid("setop"), f.name, f.dtype, f.nullable) for f in left]
        plan_l = Aggregate(plan_l, tuple((nf, _ref(f)) for nf, f in zip(new, left)), ())
        left = new
    lk: list[Expr] = []
    rk: list[Expr] = []
    for a, b in zip(left, right):
        x, y = _null_safe_keys(a, b)
        lk += x
        rk += y
    if every:
        lk.append(_ref(rn_l))
        rk.append(_ref(rn_r))
    kind = "semi" if isinstance(node, exp.Intersect) else "anti"
    plan: Node = Join(plan_l, plan_r, kind, tuple(lk), tuple(rk))
    out = [Field(binder.new_cid("setop"), f.name, f.dtype, f.nullable) for f in fields]
    plan = Project(plan, tuple((o, _ref(f)) for o, f in zip(out, left)))
    return plan, out


def bind_union(binder, node: exp.SetOperation, outer: Scope | None):
    """Bind ``left UNION|INTERSECT|EXCEPT [ALL] [BY NAME] right`` (with its ORDER BY / LIMIT) into a
    BoundQuery."""
    from hetdb.sql.binder import BoundQuery, _int_clause

    what = type(node).__name__.upper()
    sides = [binder.bind_query(node.this, outer), binder.bind_query(node.expression, outer)]
    if any(q.corr_keys or q.corr_residual for q in sides):
        raise UnsupportedError(f"correlated subqueries made of {what}")
    left, right = sides
    if node.args.get("by_name"):
        if not isinstance(node, exp.Union):
            raise UnsupportedError(f"{what} BY NAME")
        _by_name(binder, left, right)
    if len(left.fields) != len(right.fields):
        raise SqlError(f"the two sides of {what} return different numbers of columns: "
                       f"{len(left.fields)} and {len(right.fields)}")
    types = [TY.common_of([_ref(a), _ref(b)], what) for a, b in zip(left.fields, right.fields)]
    fields = [Field(binder.new_cid("union"), a.name, t, a.nullable or b.nullable)
              for a, b, t in zip(left.fields, right.fields, types)]
    plans = [_conform(binder, q.plan, q.fields, types) for q in sides]
    if isinstance(node, (exp.Intersect, exp.Except)) or node.args.get("distinct"):
        from hetdb.sql.interval import refuse_keys

        refuse_keys(fields, what if not isinstance(node, exp.Union) else "UNION (without ALL)")
    if isinstance(node, (exp.Intersect, exp.Except)):
        conformed = [q.fields if p is q.plan else list(p.schema) for p, q in zip(plans, sides)]
        plan, fields = _intersect_except(binder, node, plans[0], plans[1], conformed[0], conformed[1],
                                         fields)
    else:
        plan = Union(tuple(plans), tuple(fields))
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
        plan = limited(plan, limit, offset or 0)
    return BoundQuery(plan, fields, [_ref(f) for f in fields], limited=limit is not None or bool(offset))
