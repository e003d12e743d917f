"""DuckDB's lateral column aliases: a select item may use an alias defined by an item before it
(``SELECT x + 1 AS a, a * 2 AS b``). The select list is rewritten with each such name replaced by the
aliased expression; a real column of that name wins, as in DuckDB."""

from __future__ import annotations

from sqlglot import exp


def _hits(item: exp.Expression, aliases: dict[str, exp.Expression], scope) -> list[exp.Column]:
    """Names in ``item`` that are no column but an earlier alias (GROUPING(...) arguments and
    subqueries are left alone)."""
    hits = []
    stack = [item]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column) and not n.table and n.name.lower() in aliases:
            try:
                scope.resolve(None, n.name)
            except Exception:  # noqa: BLE001 - not a column: the alias
                hits.append(n)
        elif not isinstance(n, (exp.Subquery, exp.Select, exp.Exists, exp.Grouping, exp.GroupingId)):
            stack.extend(n.iter_expressions())
    return hits


def with_lateral_aliases(sel: exp.Select, scope, output_name) -> exp.Select:
    """``sel`` with later select items' references to earlier aliases replaced (``sel`` itself when
    there are none). ``output_name(node)`` is the binder's result-column name of an item."""
    if not any(isinstance(it, exp.Alias) for it in sel.expressions):
        return sel
    seen: dict[str, exp.Expression] = {}
    changed = False
    out = []
    for item in sel.expressions:
        if seen and _hits(item, seen, scope):
            name = output_name(item)
            new = item.copy()
            for col in _hits(new, seen, scope):
                col.replace(seen[col.name.lower()].copy())
            if not isinstance(new, exp.Alias):  # keep the name the user's text gives it
                new = exp.alias_(new, name, quoted=True)
            item, changed = new, True
        out.append(item)
        if isinstance(item, exp.Alias):
            seen[item.alias.lower()] = item.this
    if not changed:
        return sel
    sel = sel.copy()
    sel.set("expressions", out)
    return sel
