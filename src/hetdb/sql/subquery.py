"""Decorrelation: every subquery becomes a join.

  EXISTS / NOT EXISTS as a WHERE conjunct   -> semi / anti join (correlation equalities are the keys,
                                               other correlated conditions the residual)
  x IN (SELECT y ...) as a WHERE conjunct   -> semi join on x = y (+ correlation)
  x NOT IN (SELECT y ...) as a WHERE conjunct -> anti join when neither x nor y can be NULL, else a mark
                                               join filtered by NOT mark (SQL's three-valued NOT IN)
  IN / EXISTS anywhere else                 -> mark join; the expression reads the mark column
  a correlated IN that is a mark join       -> keys = the correlation equalities only, residual =
                                               "group condition IS TRUE AND x = y" (mark_by_residual):
                                               three-valued per correlation group, an empty group FALSE
  scalar subquery, uncorrelated             -> single join (at most one row) against its plan
  scalar subquery, correlated by equalities -> its aggregate grouped by the correlation columns, then
                                               a left join on them (COUNT over no rows -> 0)
"""

from __future__ import annotations

from sqlglot import exp

from hetdb import types as T
from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import Call, ColumnRef, Expr, Field, Literal
from hetdb.plan.exprutil import and_all
from hetdb.plan.logical import Join
from hetdb.sql.exprs import ExprContext, bind_expr, compare


class SubqueryBinder:
    def __init__(self, binder) -> None:
        self.b = binder

    def _holder(self, ctx: ExprContext):
        if ctx.holder is None:
            raise UnsupportedError(f"subqueries in {ctx.clause}")
        return ctx.holder

    def _bind(self, node: exp.Expression, ctx: ExprContext):
        while isinstance(node, (exp.Subquery, exp.Paren)):
            node = node.this
        bq = self.b.bind_query(node, ctx.scope)
        if ctx.agg is not None and (bq.corr_keys or bq.corr_residual):
            raise UnsupportedError(f"correlated subqueries in {ctx.clause} of an aggregating query")
        return bq

    def _join(self, ctx: ExprContext, bq, kind: str, extra_keys: list[tuple[Expr, Expr]] = (),
              mark: Field | None = None) -> None:
        keys = list(extra_keys) + list(bq.corr_keys)
        lk = tuple(k for k, _ in keys)
        rk = tuple(k for _, k in keys)
        residual = and_all(list(bq.corr_residual))
        right = bq.plan
        holder = self._holder(ctx)
        holder.add(lambda left: Join(left, right, kind, lk, rk, residual, mark))
        if mark is not None:
            holder.added_cids.add(mark.cid)

    def _in_mark(self, ctx: ExprContext, bq, probe: Expr, inner: Expr) -> Expr:
        """The mark column of ``probe IN (subquery)`` with SQL's three-valued IN; a correlated
        subquery is judged per correlation group (a NULL correlation key is an empty group)."""
        mark = Field(self.b.new_cid("in"), "in", T.BOOL, True)
        if not bq.corr_keys and not bq.corr_residual:
            self._join(ctx, bq, "mark", [(probe, inner)], mark=mark)
            return ColumnRef(T.BOOL, mark.cid, True)
        lk = tuple(k for k, _ in bq.corr_keys)
        rk = tuple(k for _, k in bq.corr_keys)
        conds = []
        group = and_all(list(bq.corr_residual))
        if group is not None:
            conds.append(Call(T.BOOL, "coalesce", (group, Literal(T.BOOL, False))))
        conds.append(Call(T.BOOL, "eq", (probe, inner)))
        residual = and_all(conds)
        right = bq.plan
        self._holder(ctx).add(lambda left: Join(left, right, "mark", lk, rk, residual, mark,
                                                mark_by_residual=True))
        self._holder(ctx).added_cids.add(mark.cid)
        return ColumnRef(T.BOOL, mark.cid, True)

    def _in_keys(self, n: exp.In, ctx: ExprContext, bq) -> tuple[Expr, Expr]:
        if len(bq.fields) != 1:
            raise SqlError(f"the subquery of IN must return one column, it returns {len(bq.fields)}")
        f = bq.fields[0]
        eq = compare("eq", bind_expr(n.this, ctx), ColumnRef(f.dtype, f.cid, f.nullable))
        return eq.args[0], eq.args[1]

    def where_conjunct(self, node: exp.Expression, ctx: ExprContext) -> list[Expr] | None:
        """Turn a top-level WHERE conjunct [NOT] EXISTS / [NOT] IN (subquery) into a semi, anti or
        mark join; returns the filters to apply after the join, or None when ``node`` is not one."""
        neg = False
        n = node
        while isinstance(n, exp.Paren):
            n = n.this
        if isinstance(n, exp.Not):
            neg, n = True, n.this
            while isinstance(n, exp.Paren):
                n = n.this
        if isinstance(n, exp.Exists):
            self._holder(ctx)
            bq = self._bind(n.this, ctx)
            self._join(ctx, bq, "anti" if neg else "semi")
            return []
        if isinstance(n, exp.In) and n.args.get("query") is not None:
            self._holder(ctx)
            bq = self._bind(n.args["query"], ctx)
            probe, inner = self._in_keys(n, ctx, bq)
            if not neg:
                self._join(ctx, bq, "semi", [(probe, inner)])
                return []
            if not _nullable(probe) and not bq.fields[0].nullable:
                self._join(ctx, bq, "anti", [(probe, inner)])
                return []
            return [Call(T.BOOL, "not", (self._in_mark(ctx, bq, probe, inner),))]
        return None

    def subquery_expr(self, node: exp.Expression, ctx: ExprContext) -> Expr:
        """A subquery used as a value: joined onto ctx.holder, returns the expression to read."""
        self._holder(ctx)
        if isinstance(node, exp.Exists):
            bq = self._bind(node.this, ctx)
            mark = Field(self.b.new_cid("exists"), "exists", T.BOOL, True)
            self._join(ctx, bq, "mark", mark=mark)
            # A NULL correlation key means "no match" for EXISTS (never NULL).
            return Call(T.BOOL, "coalesce", (ColumnRef(T.BOOL, mark.cid, True), Literal(T.BOOL, False)))
        if isinstance(node, exp.In):
            bq = self._bind(node.args["query"], ctx)
            probe, inner = self._in_keys(node, ctx, bq)
            return self._in_mark(ctx, bq, probe, inner)
        bq = self._bind(node, ctx)
        if len(bq.fields) != 1:
            raise SqlError(f"a scalar subquery must return one column, it returns {len(bq.fields)}")
        f = bq.fields[0]
        ref = ColumnRef(f.dtype, f.cid, True)
        holder = ctx.holder
        if not bq.corr_keys and not bq.corr_residual:
            self._join(ctx, bq, "single")
            holder.added_cids.add(f.cid)
            return ref
        if not bq.aggs or bq.corr_residual:
            raise UnsupportedError("correlated scalar subqueries other than an aggregate correlated by "
                                   "equalities (e.g. SELECT min(x) FROM t WHERE t.k = outer.k)")
        self._join(ctx, bq, "single" if bq.grouped else "left")
        holder.added_cids.add(f.cid)
        counts = {af.cid for af, a in bq.aggs if a.op in ("count", "count_star")}
        value = bq.exprs[0]
        if counts & value.columns():
            if isinstance(value, ColumnRef):
                return Call(T.INT64, "coalesce", (ref, Literal(T.INT64, 0)))
            raise UnsupportedError("a correlated scalar subquery computing an expression over COUNT")
        return ref


def _nullable(e: Expr) -> bool:
    if isinstance(e, Literal):
        return e.value is None
    if isinstance(e, ColumnRef):
        return e.nullable
    return True
