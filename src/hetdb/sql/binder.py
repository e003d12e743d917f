"""Bind a parsed SELECT (sqlglot tree) into hetdb's logical plan.

Plan shape of one SELECT: FROM items joined (fromclause.combine) -> Filter(WHERE) -> subquery joins ->
[Aggregate -> Filter(HAVING)] -> Project(select list + hidden ORDER BY / correlation columns) ->
[DISTINCT as Aggregate] -> Sort -> Limit; the statement's root is an Output naming the visible columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from hetdb.errors import CatalogError, SqlError, UnsupportedError
from hetdb.plan.expr import AggCall, ColumnRef, Expr, Field, SortKey
from hetdb.plan.exprutil import and_all, conjuncts, eq_sides, factor_or, substitute
from hetdb.plan.logical import Aggregate, Filter, Node, Output, Project, Sort, Values, limited
from hetdb.plan.window import Window
from hetdb.sql import fromclause as FC
from hetdb.sql import interval as IV
from hetdb.sql.binder_keys import KeyBinding, _cid_name, _contains_agg, _nullable, _output_name
from hetdb.sql.exprs import AggState, ExprContext, PlanHolder, as_condition, bind_expr, compare
from hetdb.sql.external import resolve_from
from hetdb.sql.grouping import grouping_plan, grouping_sets
from hetdb.sql.lateral_alias import with_lateral_aliases
from hetdb.sql.sample import sample
from hetdb.sql.scope import Rel, Scope
from hetdb.sql.unnest import UnnestState, from_unnest
from hetdb.sql.window import WindowState


@dataclass
class BoundQuery:
    """A bound SELECT: its plan, visible output fields and (for a correlated subquery) the
    correlation pulled out of its WHERE clause, rewritten over ``plan``'s output columns."""

    plan: Node
    fields: list[Field]
    exprs: list[Expr]  # bound select expressions (over the pre-projection plan), one per field
    aggs: list[tuple[Field, AggCall]] = field(default_factory=list)
    corr_keys: list[tuple[Expr, Expr]] = field(default_factory=list)  # (outer expr, inner expr)
    corr_residual: list[Expr] = field(default_factory=list)
    grouped: bool = False  # has GROUP BY (not just aggregates)
    limited: bool = False  # has LIMIT/OFFSET


class Holder(PlanHolder):
    """Collects joins that subqueries add, applied to the base plan once it exists."""

    def __init__(self) -> None:
        super().__init__(None)
        self.pending: list[Callable[[Node], Node]] = []
        self.added_cids: set[str] = set()  # columns the joins add (mark flags, scalar results)

    def add(self, fn: Callable[[Node], Node]) -> None:
        self.pending.append(fn)

    def build(self, base: Node) -> Node:
        for fn in self.pending:
            base = fn(base)
        self.pending = []
        return base


def _int_clause(node: exp.Expression | None, what: str) -> int | None:
    if node is None:
        return None
    e = node.expression if isinstance(node, (exp.Limit, exp.Offset)) else node
    if isinstance(e, exp.Literal) and not e.is_string and e.this.isdigit():
        return int(e.this)
    raise UnsupportedError(f"{what} that is not a non-negative integer constant")


class Binder(KeyBinding):
    """Binds statements against one database's catalog; cids are numbered per statement."""

    def __init__(self, db) -> None:
        self.db = db
        self._n = 0
        self.ctes: dict[str, tuple[exp.Expression, dict, list[str]]] = {}
        # recursive CTEs whose recursive term is being bound: name -> (key, column names, types)
        self.working: dict[str, tuple] = {}
        from hetdb.sql.subquery import SubqueryBinder

        self.subq = SubqueryBinder(self)

    def new_cid(self, name: str) -> str:
        self._n += 1
        return f"{name}#{self._n}"

    def subquery_expr(self, node: exp.Expression, ctx: ExprContext) -> Expr:
        return self.subq.subquery_expr(node, ctx)

    # ---- statement -------------------------------------------------------------------------------
    def bind_statement(self, tree: exp.Expression) -> Output:
        bq = self.bind_query(tree, None)
        return Output(bq.plan, tuple(bq.fields))

    def bind_query(self, node: exp.Expression, outer: Scope | None) -> BoundQuery:
        while isinstance(node, (exp.Subquery, exp.Paren)):
            node = node.this
        if isinstance(node, exp.Values):
            from hetdb.sql.values import bind_values

            return bind_values(self, node)
        if isinstance(node, exp.Pivot):  # PIVOT t ON ... / UNPIVOT t ON ... as a query
            from hetdb.sql.pivot import pivoted

            return self.bind_query(pivoted(self, node.this, node), outer)
        if not isinstance(node, (exp.Select, exp.SetOperation)):
            raise UnsupportedError(f"{type(node).__name__} queries (only SELECT, VALUES and set "
                                   "operations are supported)")
        saved = self.ctes
        try:
            with_ = node.args.get("with_") or node.args.get("with")
            if with_ is not None:
                from hetdb.sql.recursive import mark_recursive

                mark_recursive(with_)
                self.ctes = dict(self.ctes)
                for cte in with_.expressions:
                    cols = [c.name.lower() for c in (cte.args["alias"].columns or [])]
                    self.ctes[cte.alias.lower()] = (cte.this, self.ctes, cols)
            if isinstance(node, exp.SetOperation):
                from hetdb.sql.setops import bind_union

                return bind_union(self, node, outer)
            return self._bind_select(node, outer)
        finally:
            self.ctes = saved

    # ---- FROM --------------------------------------------------------------------------------------
    def _from_item(self, node: exp.Expression) -> tuple[Node, Rel]:
        if node.args.get("sample") is not None:  # FROM x TABLESAMPLE ...
            bare = node.copy()
            bare.set("sample", None)
            plan, rel = self._from_item(bare)
            return sample(plan, node.args["sample"]), rel
        if node.args.get("pivots"):  # FROM t PIVOT (...) / UNPIVOT (...) [AS alias]
            from hetdb.sql.pivot import pivot_item

            query, alias = pivot_item(self, node)
            return self._derived(self.bind_query(query, None), alias, [])
        if isinstance(node, exp.Table):
            if node.args.get("joins"):
                raise UnsupportedError("nested joins in FROM")
            name = node.name
            alias = (node.alias or name).lower()
            if node.args.get("db") is None and name.lower() in self.working:
                from hetdb.sql.recursive import working_scan

                scan, names = working_scan(self, name.lower())
                return scan, Rel(alias, list(zip(self._alias_columns(node) + names[len(self._alias_columns(node)):],
                                                 scan.fields)))
            if node.args.get("db") is None and name.lower() in self.ctes:
                query, env, cols = self.ctes[name.lower()]
                from hetdb.sql.recursive import bind_recursive, is_recursive

                if is_recursive(query):
                    bq = bind_recursive(self, name.lower(), query, env, cols)
                    return self._derived(bq, alias, cols or self._alias_columns(node))
                saved = self.ctes
                self.ctes = env  # a CTE sees only the CTEs defined before it
                try:
                    bq = self.bind_query(query, None)
                finally:
                    self.ctes = saved
                return self._derived(bq, alias, cols or self._alias_columns(node))
            found = resolve_from(self, node, name, alias)
            if found is not None:
                cols = self._alias_columns(node)  # FROM 'f.parquet' t(a, b) / range(5) t(r)
                plan, rel = found
                return plan, Rel(rel.alias, [(cols[i] if i < len(cols) else n, f)
                                             for i, (n, f) in enumerate(rel.columns)], rel.hidden)
            return FC.table_scan(self.db, name, alias, self.new_cid)
        if isinstance(node, exp.Unnest):
            return self._derived(self.bind_query(from_unnest(node), None), (node.alias or "unnest").lower(),
                                 self._alias_columns(node))
        if isinstance(node, exp.Values):
            from hetdb.sql.values import bind_values

            return self._derived(bind_values(self, node), (node.alias or "valueslist").lower(),
                                 self._alias_columns(node))
        if isinstance(node, exp.Subquery):
            if node.args.get("lateral"):
                raise UnsupportedError("LATERAL subqueries")
            bq = self.bind_query(node.this, None)
            return self._derived(bq, (node.alias or f"subquery{self._n}").lower(),
                                 self._alias_columns(node))
        raise UnsupportedError(f"FROM item {node.sql(dialect='duckdb')!r}")

    @staticmethod
    def _alias_columns(node: exp.Expression) -> list[str]:
        alias = node.args.get("alias")
        return [c.name.lower() for c in alias.columns] if alias is not None and alias.columns else []

    def _derived(self, bq: BoundQuery, alias: str, cols: list[str]) -> tuple[Node, Rel]:
        if len(cols) > len(bq.fields):
            raise SqlError(f"'{alias}' names {len(cols)} columns but its query returns {len(bq.fields)}")
        names = cols + [f.name.lower() for f in bq.fields[len(cols):]]
        return bq.plan, Rel(alias, list(zip(names, bq.fields)))

    def _bind_from(self, sel: exp.Select, scope: Scope) -> tuple[list[FC.Item], list[Expr]]:
        """FROM items (LEFT JOINs already applied) and the inner-join conditions to place."""
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_ is None:
            if sel.args.get("joins"):
                raise SqlError("JOIN without FROM")
            return [FC.item_of(Values((), ((),)))], []
        plan, rel = self._from_item(from_.this)
        self._add_rel(scope, rel)
        items, preds = [FC.item_of(plan)], []
        for j in sel.args.get("joins") or []:
            plan, rel = self._from_item(j.this)
            right = FC.item_of(plan)
            self._add_rel(scope, rel)
            ctx = ExprContext(scope, self, "JOIN ... ON")
            on = conjuncts(as_condition(bind_expr(j.args["on"], ctx), "JOIN ... ON")) if j.args.get("on") is not None else []
            method = str(j.args.get("method") or "").upper()
            using = j.args.get("using") or []
            for ident in using:
                name = ident.name.lower()
                prev = Scope(scope.rels[:-1]).resolve(None, name)
                # ASOF ... USING (k, t): the last column is the inequality l.t >= r.t
                op = "ge" if method == "ASOF" and ident is using[-1] else "eq"
                on.append(compare(op, prev, scope.resolve(rel.alias, name)))
                rel.hidden.add(name)
            side = (j.side or "").upper()
            if method in ("POSITIONAL", "ASOF"):
                from hetdb.sql.special_joins import method_join

                items, preds = [method_join(self.new_cid, method, side, items, preds, right, on)], []
                for r in scope.rels if method == "POSITIONAL" else scope.rels[-1:] if side == "LEFT" else []:
                    _make_nullable(r)
                continue
            if side in ("LEFT", "RIGHT", "FULL"):
                left, rest = FC.combine(items, preds)
                if rest:
                    left = FC.Item(Filter(left.plan, and_all(rest)), left.cids)
                if side == "LEFT":
                    items = [FC.left_join(left, right, on)]
                else:
                    items = [FC.outer_join(left, right, on, side.lower())]
                preds = []
                # Columns of a side that is NULL-extended can be NULL from here on.
                for r in (scope.rels[-1:] if side == "LEFT" else
                          scope.rels[:-1] if side == "RIGHT" else scope.rels):
                    _make_nullable(r)
            else:
                items.append(right)
                preds.extend(on)
        return items, preds

    @staticmethod
    def _add_rel(scope: Scope, rel: Rel) -> None:
        if any(r.alias == rel.alias for r in scope.rels):
            raise SqlError(f"table name or alias '{rel.alias}' is used twice in FROM; give one an alias")
        scope.rels.append(rel)

    # ---- SELECT ------------------------------------------------------------------------------------
    def _select_items(self, sel: exp.Select, scope: Scope) -> list[tuple[str, exp.Expression | Expr]]:
        """(output name, sqlglot node or already-bound column) per select item, stars expanded."""
        out: list[tuple[str, exp.Expression | Expr]] = []
        for node in sel.expressions:
            if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
                out.extend(self._expand_star(node, scope))
                continue
            if node.find(exp.Columns) is not None:
                from hetdb.sql.columns_expr import expand

                names = [(r.alias, n) for r in scope.rels for n, _ in r.columns if n not in r.hidden]
                unique = [(t if sum(m == n for _, m in names) > 1 else None, n) for t, n in names]
                out.extend(expand(node, unique))
                continue
            out.append((_output_name(node), node))
        if not out:
            raise SqlError("the SELECT list is empty")
        return out

    @staticmethod
    def _expand_star(node: exp.Expression, scope: Scope) -> list[tuple[str, exp.Expression | Expr]]:
        """``*`` / ``t.*`` with DuckDB's ``EXCLUDE (cols)`` and ``REPLACE (expr AS col)``."""
        star = node.this if isinstance(node, exp.Column) else node
        args = {**star.args, **node.args}
        if args.get("rename"):
            raise UnsupportedError("* RENAME")
        excluded = [c.name.lower() for c in args.get("except_") or args.get("except") or []]
        replaced = {a.alias.lower(): a.this for a in args.get("replace") or []}
        table = node.table.lower() if isinstance(node, exp.Column) else None
        rels = [r for r in scope.rels if table is None or r.alias == table]
        if table is not None and not rels:
            raise scope._unknown(table, "*")
        out: list[tuple[str, exp.Expression | Expr]] = []
        seen: set[str] = set()
        for r in rels:
            for n, f in r.columns:
                if table is None and n in r.hidden:
                    continue
                seen.add(n)
                if n in excluded:
                    continue
                out.append((n, replaced[n] if n in replaced else ColumnRef(f.dtype, f.cid, f.nullable)))
        for what, names in (("EXCLUDE", excluded), ("REPLACE", list(replaced))):
            missing = [n for n in names if n not in seen]
            if missing:
                raise CatalogError(f"column '{missing[0]}' in the * {what} list is not a column of "
                                   "the FROM clause")
        if not out:
            raise SqlError("* EXCLUDE removes every column: the SELECT list is empty")
        return out

    def _bind_select(self, sel: exp.Select, outer: Scope | None) -> BoundQuery:  # noqa: C901
        scope = Scope([], parent=outer)
        items, join_preds = self._bind_from(sel, scope)
        sel = with_lateral_aliases(sel, scope, _output_name)
        local = set().union(*(it.cids for it in items))

        # WHERE: plain conjuncts place joins; subquery conjuncts become joins on the holder.
        where_holder = Holder()
        plain, post, corr = [], [], []
        where = sel.args.get("where")
        alias_items = self._select_items(sel, scope)
        for c in _split_and(self._with_aliases(where.this, alias_items, scope)) if where is not None else []:
            ctx = ExprContext(scope, self, "WHERE", holder=where_holder)
            n_pending = len(where_holder.pending)
            handled = self.subq.where_conjunct(c, ctx)
            if handled is not None:
                post.extend(handled)
                continue
            bound = as_condition(bind_expr(c, ctx), "WHERE")
            for e in conjuncts(factor_or(bound)):
                if e.columns() - local - where_holder.added_cids:
                    corr.append(e)
                elif len(where_holder.pending) > n_pending:
                    post.append(e)
                else:
                    plain.append(e)
        if sel.args.get("sample") is not None:  # USING SAMPLE: after FROM and its joins, before WHERE
            joined, rest = FC.combine(items, join_preds)
            plan = sample(joined.plan, sel.args["sample"])
            rest = rest + plain
        else:
            joined, rest = FC.combine(items, join_preds + plain)
            plan = joined.plan
        if rest:
            plan = Filter(plan, and_all(rest))
        plan = where_holder.build(plan)
        if post:
            plan = Filter(plan, and_all(post))
        n_corr = len(scope.correlated)

        sel_items = self._select_items(sel, scope)
        group = sel.args.get("group")
        having = sel.args.get("having")
        order = sel.args.get("order")
        grouped = group is not None and (bool(group.expressions) or bool(group.args.get("all")))
        has_agg = grouped or having is not None or any(
            isinstance(n, exp.Expression) and _contains_agg(n) for _, n in sel_items) or (
            order is not None and any(_contains_agg(o) for o in order.expressions))
        holder = Holder()
        sets = None
        agg_state: AggState | None = None
        corr_eq: list[tuple[Expr, Expr]] = []
        if has_agg:
            sets = grouping_sets(group)
            if sets is not None:
                keys, set_idx = self._grouping_keys(sets, sel_items, scope)
            else:
                keys = self._group_keys(group, sel_items, scope) if grouped else []
            if corr:
                for p in corr:
                    sides = eq_sides(p, scope.correlated, local)
                    if sides is None:
                        raise UnsupportedError(
                            f"a correlated condition other than an equality ({p}) in a subquery "
                            "with aggregates")
                    corr_eq.append(sides)
                for _, inner in corr_eq:
                    if not any(k == inner for k, _ in keys):
                        keys.append((inner, Field(self.new_cid("corr"), "corr", inner.dtype)))
            agg_state = AggState(scope, keys, aliases={
                name.lower(): n.this for name, n in sel_items if isinstance(n, exp.Alias)})
        windows = WindowState()
        unnests = UnnestState(self.new_cid)
        ctx = ExprContext(scope, self, "the SELECT list", holder=holder, agg=agg_state, window=windows,
                          unnest=unnests)
        exprs: list[Expr] = []
        for _, n in sel_items:
            exprs.append(n if isinstance(n, Expr) else bind_expr(n, ctx))
        having_e = None
        if having is not None:
            having_e = as_condition(bind_expr(self._with_aliases(having.this, sel_items, scope), ExprContext(
                scope, self, "HAVING", holder=holder, agg=agg_state)), "HAVING")
        qualify = sel.args.get("qualify")
        qualify_e = None
        if qualify is not None:
            q = self._with_aliases(qualify.this, sel_items, scope)
            qualify_e = as_condition(bind_expr(q, ExprContext(
                scope, self, "QUALIFY", holder=holder, agg=agg_state, window=windows)), "QUALIFY")
        names = [n for n, _ in sel_items]
        order_keys = self._order_exprs(order, names, exprs, scope, holder, agg_state, windows)
        if len(scope.correlated) != n_corr:
            raise UnsupportedError("correlated column references outside the subquery's WHERE clause")

        if agg_state is not None and (agg_state.pre_windows or agg_state.ordered_windows):
            if sets is not None:
                raise UnsupportedError("median/quantile/stddev/var/arg_max/corr/covar/regr/first/last/any_value with ROLLUP, CUBE "
                                       "or GROUPING SETS")
            partition = tuple(e for e, _ in agg_state.keys)
            # the unordered window first: it sees the rows in input order (first(), string_agg), and
            # its row_number() can order the later windows (sql/first_last.py)
            if agg_state.pre_windows:
                plan = Window(plan, partition, (), tuple(agg_state.pre_windows))
            for order, funcs in agg_state.ordered_windows:
                plan = Window(plan, partition, order, tuple(funcs))
        if agg_state is not None and (sets is not None or agg_state.grouping):
            if corr_eq:
                raise UnsupportedError("grouping sets in a correlated subquery")
            plan = grouping_plan(self.new_cid, plan, agg_state,
                                 set_idx if sets is not None else [tuple(range(len(agg_state.keys)))])
        elif agg_state is not None:
            plan = Aggregate(plan, tuple((f, e) for e, f in agg_state.keys), tuple(agg_state.aggs))
        plan = holder.build(plan)
        if having_e is not None:
            plan = Filter(plan, having_e)
        plan = windows.apply(plan)
        if qualify_e is not None:
            plan = Filter(plan, qualify_e)
        plan = unnests.apply(plan)
        distinct = sel.args.get("distinct")
        on = distinct.args.get("on") if distinct is not None else None
        if on is not None:
            from hetdb.sql.rewrites import distinct_on

            on_ctx = ExprContext(scope, self, "DISTINCT ON", holder=holder, agg=agg_state)
            on_exprs = []
            for n in (on.expressions if isinstance(on, exp.Tuple) else [on]):
                item = self._select_ref(n, sel_items, scope)
                on_exprs.append(item if isinstance(item, Expr) else bind_expr(item, on_ctx))
            plan = distinct_on(self.new_cid, plan, on_exprs, order_keys)

        # Project: visible columns, then hidden ones (ORDER BY expressions, correlation columns).
        proj: list[tuple[Field, Expr]] = []
        for name, e in zip(names, exprs):
            proj.append((Field(self.new_cid(_cid_name(name)), name, e.dtype, _nullable(e)), e))
        visible = [f for f, _ in proj]
        hidden_map: dict[str, Expr] = {}

        def hide(e: Expr) -> ColumnRef:
            for f, pe in proj:
                if pe == e:
                    return ColumnRef(f.dtype, f.cid, f.nullable)
            f = Field(self.new_cid("hidden"), "hidden", e.dtype, _nullable(e))
            proj.append((f, e))
            return ColumnRef(f.dtype, f.cid, f.nullable)

        sort_keys = [SortKey(hide(IV.sort_key(e)), desc, nf) for e, desc, nf in order_keys]
        corr_keys: list[tuple[Expr, Expr]] = []
        corr_residual: list[Expr] = []
        if agg_state is not None:
            for outer_e, inner in corr_eq:
                kf = next(f for k, f in agg_state.keys if k == inner)
                corr_keys.append((outer_e, hide(ColumnRef(kf.dtype, kf.cid, kf.nullable))))
        elif corr:
            for cid in sorted(set().union(*(p.columns() for p in corr)) - scope.correlated):
                f = next(x for x in plan.schema if x.cid == cid)
                hidden_map[cid] = hide(ColumnRef(f.dtype, f.cid, f.nullable))
            for p in corr:
                q = substitute(p, hidden_map)
                sides = eq_sides(q, scope.correlated, {f.cid for f, _ in proj})
                if sides is not None:
                    corr_keys.append(sides)
                else:
                    corr_residual.append(q)
        plan = Project(plan, tuple(proj))

        if distinct is not None and on is None and not corr_keys and not corr_residual:
            IV.refuse_keys([f for f in visible], "SELECT DISTINCT")
            if len(proj) > len(visible):
                raise SqlError("with SELECT DISTINCT, ORDER BY expressions must appear in the select list")
            new = [Field(self.new_cid(_cid_name(f.name)), f.name, f.dtype, f.nullable) for f in visible]
            plan = Aggregate(plan, tuple((nf, ColumnRef(f.dtype, f.cid, f.nullable))
                                         for nf, f in zip(new, visible)), ())
            remap = {f.cid: ColumnRef(nf.dtype, nf.cid, nf.nullable) for f, nf in zip(visible, new)}
            sort_keys = [SortKey(substitute(k.expr, remap), k.descending, k.nulls_first) for k in sort_keys]
            visible = new
        if sort_keys:
            plan = Sort(plan, tuple(sort_keys))
        limit = _int_clause(sel.args.get("limit"), "LIMIT")
        offset = _int_clause(sel.args.get("offset"), "OFFSET")
        if limit is not None or offset:
            if corr_keys or corr_residual:
                raise UnsupportedError("LIMIT/OFFSET in a correlated subquery")
            plan = limited(plan, limit, offset or 0)
        return BoundQuery(plan, visible, exprs, list(agg_state.aggs) if agg_state else [],
                          corr_keys, corr_residual, grouped, limit is not None or bool(offset))


def _make_nullable(rel: Rel) -> None:
    rel.columns = [(n, f if f.nullable else Field(f.cid, f.name, f.dtype, True)) for n, f in rel.columns]


def _split_and(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _split_and(node.this) + _split_and(node.expression)
    return [node]
