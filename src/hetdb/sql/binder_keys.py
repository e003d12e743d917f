"""GROUP BY / ORDER BY binding of one SELECT: keys by expression, ordinal or select-list alias,
GROUP BY ALL, grouping sets, and aliases of the select list in WHERE/HAVING/QUALIFY.

`KeyBinding` is a part of `hetdb.sql.binder.Binder` (its methods use the binder's `new_cid`).
"""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError
from hetdb.plan.expr import ColumnRef, Expr, Field
from hetdb.sql import interval as IV
from hetdb.sql.bit_aggs import NODES as BIT_AGGS
from hetdb.sql.exprs import ExprContext, bind_expr
from hetdb.sql.first_last import NODES as FL_NODES
from hetdb.sql.holistic import HOLISTIC, REWRITTEN
from hetdb.sql.holistic_stats import STATS
from hetdb.sql.names import name_of
from hetdb.sql.scope import Scope
from hetdb.sql.window import window_operands


def _contains_agg(node: exp.Expression | None) -> bool:
    """Aggregate calls in ``node``, not counting those inside subqueries."""
    if node is None:
        return False
    if isinstance(node, exp.Window):  # only aggregates inside the window call's operands count
        return any(_contains_agg(c) for c in window_operands(node))
    if isinstance(node, (exp.Sum, exp.Count, exp.Avg, exp.Min, exp.Max, *HOLISTIC, *REWRITTEN, *STATS, *FL_NODES, *BIT_AGGS)):
        return True
    if isinstance(node, (exp.Subquery, exp.Exists, exp.Select)):
        return False
    return any(_contains_agg(c) for c in node.iter_expressions())


def _output_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Alias):
        return node.alias
    return name_of(node)


def _cid_name(name: str) -> str:
    s = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name.lower()).strip("_")
    return s[:24] or "col"


def _nullable(e: Expr) -> bool:
    return getattr(e, "nullable", True) if isinstance(e, ColumnRef) else True


class KeyBinding:
    """The key-binding methods of the binder."""

    def _group_keys(self, group: exp.Group, sel_items, scope: Scope) -> list[tuple[Expr, Field]]:
        keys: list[tuple[Expr, Field]] = []
        ctx = ExprContext(scope, self, "GROUP BY")
        exprs = list(group.expressions)
        if group.args.get("all"):
            # GROUP BY ALL: every select item that contains no aggregate (DuckDB's rule); next to an
            # aggregate, constant items are no keys (so over no rows the aggregate's one row remains)
            aggs = any(isinstance(n, exp.Expression) and _contains_agg(n) for _, n in sel_items)
            exprs = [exp.Literal.number(i + 1) for i, (_, n) in enumerate(sel_items)
                     if not (isinstance(n, exp.Expression) and _contains_agg(n))
                     and not (aggs and isinstance(n, exp.Expression) and n.find(exp.Column) is None)]
        for g in exprs:
            node = self._select_ref(g, sel_items, scope)
            e = node if isinstance(node, Expr) else bind_expr(node, ctx)
            if any(k == e for k, _ in keys):
                continue
            IV.refuse_keys([e], "GROUP BY")
            name = _output_name(g) if isinstance(g, exp.Column) else "group"
            keys.append((e, Field(self.new_cid(_cid_name(name)), name, e.dtype, _nullable(e))))
        return keys

    def _with_aliases(self, node: exp.Expression, sel_items, scope: Scope) -> exp.Expression:
        """``node`` with names that are no column but a select-list alias replaced by the aliased
        expression (DuckDB allows aliases in WHERE, HAVING and QUALIFY); subqueries are left alone."""
        # One walk from the top that stops at subqueries (asking each column for its ancestors was
        # quadratic in a long AND/OR chain: 5,000 terms spent 5 s there).
        node = node.copy()
        columns, stack = [], [node]
        while stack:
            n = stack.pop()
            if isinstance(n, exp.Column):
                columns.append(n)
            elif not isinstance(n, (exp.Subquery, exp.Select, exp.Exists)):
                stack.extend(n.iter_expressions())
        for col in columns:
            new = self._select_ref(col, sel_items, scope)
            if new is col:
                continue
            if col is node:
                node = new
            else:
                col.replace(new)
        return node

    def _grouping_keys(self, sets, sel_items, scope: Scope):
        """Bound keys of every grouping set (each distinct once) and each set as key positions."""
        keys: list[tuple[Expr, Field]] = []
        ctx = ExprContext(scope, self, "GROUP BY")
        set_idx = []
        for s in sets:
            idx = []
            for g in s:
                node = self._select_ref(g, sel_items, scope)
                e = node if isinstance(node, Expr) else bind_expr(node, ctx)
                hit = [i for i, (k, _) in enumerate(keys) if k == e]
                if not hit:
                    IV.refuse_keys([e], "GROUP BY")
                    name = _output_name(g) if isinstance(g, exp.Column) else "group"
                    keys.append((e, Field(self.new_cid(_cid_name(name)), name, e.dtype, True)))
                    hit = [len(keys) - 1]
                if hit[0] not in idx:
                    idx.append(hit[0])
            set_idx.append(tuple(idx))
        return keys, set_idx

    @staticmethod
    def _select_ref(node: exp.Expression, sel_items, scope: Scope):
        """GROUP BY / ORDER BY by ordinal or by select alias -> that select item."""
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            i = int(node.this)
            if not 1 <= i <= len(sel_items):
                raise SqlError(f"position {i} is not in the select list (1..{len(sel_items)})")
            item = sel_items[i - 1][1]
            return item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Column) and not node.table:
            try:
                scope.resolve(None, node.name)
            except Exception:  # noqa: BLE001 - not a column: maybe an alias of the select list
                for name, item in sel_items:
                    if isinstance(item, exp.Alias) and name.lower() == node.name.lower():
                        return item.this
        return node

    def _order_exprs(self, order, names, exprs, scope, holder, agg_state, windows=None):
        out: list[tuple[Expr, bool, bool]] = []
        if order is None:
            return out
        ctx = ExprContext(scope, self, "ORDER BY", holder=holder, agg=agg_state, window=windows)
        lower = [n.lower() for n in names]
        first = order.expressions[0].this if order.expressions else None
        if len(order.expressions) == 1 and isinstance(first, exp.Var) and first.name.upper() == "ALL":
            o = order.expressions[0]
            return [(e, bool(o.args.get("desc")), bool(o.args.get("nulls_first"))) for e in exprs]
        for o in order.expressions:
            node = o.this
            desc = bool(o.args.get("desc"))
            nf = bool(o.args.get("nulls_first"))
            if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
                i = int(node.this)
                if not 1 <= i <= len(exprs):
                    raise SqlError(f"ORDER BY position {i} is not in the select list (1..{len(exprs)})")
                out.append((exprs[i - 1], desc, nf))
            elif isinstance(node, exp.Column) and not node.table and node.name.lower() in lower:
                out.append((exprs[lower.index(node.name.lower())], desc, nf))
            else:
                out.append((bind_expr(node, ctx), desc, nf))
        return out
