"""GROUP BY ROLLUP / CUBE / GROUPING SETS and GROUPING(): one Aggregate per grouping set over the same
input, each projected onto every key (NULL for the keys not in its set) and the GROUPING() bitmasks
of its set, concatenated by a Union. GROUPING(a, b, ...) has one bit per argument, the first the most
significant, set where the argument is not grouped in the row's set (DuckDB's rule).
"""

from __future__ import annotations

import itertools

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import CatalogError, SqlError, UnsupportedError
from hetdb.plan.expr import ColumnRef, Expr, Field, Literal
from hetdb.plan.logical import Aggregate, Node, Project, Union

GROUPING_NODES = (exp.Rollup, exp.Cube, exp.GroupingSets)


def _members(e: exp.Expression) -> list[exp.Expression]:
    while isinstance(e, exp.Paren):
        e = e.this
    return list(e.expressions) if isinstance(e, exp.Tuple) else [e]


def grouping_sets(group: exp.Group | None) -> list[list[exp.Expression]] | None:
    """The grouping sets of ``group`` (lists of key expressions), None for a plain GROUP BY."""
    if group is None or not any(isinstance(g, GROUPING_NODES) for g in group.expressions):
        return None
    choices: list[list[list[exp.Expression]]] = []
    for g in group.expressions:
        if isinstance(g, exp.Rollup):
            parts = [_members(x) for x in g.expressions]
            choices.append([sum(parts[:i], []) for i in range(len(parts), -1, -1)])
        elif isinstance(g, exp.Cube):
            parts = [_members(x) for x in g.expressions]
            if len(parts) > 12:
                raise UnsupportedError("CUBE over more than 12 expressions")
            choices.append([sum((p for p, on in zip(parts, mask) if on), [])
                            for mask in itertools.product((True, False), repeat=len(parts))])
        elif isinstance(g, exp.GroupingSets):
            sets = []
            for s in g.expressions:
                if isinstance(s, GROUPING_NODES):
                    raise UnsupportedError("ROLLUP / CUBE nested inside GROUPING SETS")
                sets.append(_members(s))
            choices.append(sets)
        else:
            choices.append([[g]])
    return [sum(combo, []) for combo in itertools.product(*choices)]


def bind_grouping(node: exp.Grouping, ctx) -> Expr:
    """GROUPING(args) in aggregate mode: a column holding each row's bitmask."""
    from hetdb.sql.exprs import ExprContext, bind_expr

    agg = ctx.agg
    idx = []
    for a in node.expressions:
        try:
            e = bind_expr(a, ExprContext(agg.pre_scope, ctx.binder, "GROUPING"))
        except CatalogError:
            alias = agg.aliases.get(a.name.lower()) if isinstance(a, exp.Column) and not a.table else None
            if alias is None:
                raise
            e = bind_expr(alias, ExprContext(agg.pre_scope, ctx.binder, "GROUPING"))
        hit = [i for i, (k, _) in enumerate(agg.keys) if k == e]
        if not hit:
            raise SqlError(f"GROUPING argument {a.sql(dialect='duckdb')} is not a GROUP BY expression")
        idx.append(hit[0])
    for f, existing in agg.grouping:
        if existing == tuple(idx):
            return ColumnRef(f.dtype, f.cid, f.nullable)
    f = Field(ctx.binder.new_cid("grouping"), "grouping", T.INT64, False)
    agg.grouping.append((f, tuple(idx)))
    return ColumnRef(T.INT64, f.cid, False)


def grouping_plan(new_cid, plan: Node, agg, sets: list[tuple[int, ...]]) -> Node:
    """The Union of one Aggregate per set, on the AggState's key, aggregate and GROUPING() columns."""
    key_fields = [Field(f.cid, f.name, f.dtype, True) for _, f in agg.keys]
    out_fields = key_fields + [f for f, _ in agg.aggs] + [f for f, _ in agg.grouping]
    children = []
    for s in sets:
        in_set = set(s)
        keys = [(Field(new_cid(f.name), f.name, f.dtype, f.nullable), e)
                for i, (e, f) in enumerate(agg.keys) if i in in_set]
        aggs = [(Field(new_cid(f.name), f.name, f.dtype, f.nullable), a) for f, a in agg.aggs]
        node = Aggregate(plan, tuple(keys), tuple(aggs))
        by_key = iter(keys)
        exprs: list[tuple[Field, Expr]] = []
        for i, kf in enumerate(key_fields):
            if i in in_set:
                f, _ = next(by_key)
                exprs.append((Field(new_cid(kf.name), kf.name, kf.dtype, True), ColumnRef(f.dtype, f.cid, f.nullable)))
            else:
                exprs.append((Field(new_cid(kf.name), kf.name, kf.dtype, True), Literal(kf.dtype, None)))
        for (f, _), of in zip(aggs, [f for f, _ in agg.aggs]):
            exprs.append((Field(new_cid(of.name), of.name, of.dtype, of.nullable), ColumnRef(f.dtype, f.cid, f.nullable)))
        for _, idx in agg.grouping:
            mask = 0
            for i in idx:
                mask = (mask << 1) | (0 if i in in_set else 1)
            exprs.append((Field(new_cid("grouping"), "grouping", T.INT64, False), Literal(T.INT64, mask)))
        children.append(Project(node, tuple(exprs)))
    return Union(tuple(children), tuple(out_fields))
