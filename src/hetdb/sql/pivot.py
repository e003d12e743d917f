"""PIVOT and UNPIVOT (DuckDB's simplified statements and the SQL-standard FROM clauses), rewritten
into the queries they mean before binding:

``PIVOT t ON c IN (v1, v2) USING agg(x) [AS a], ... [GROUP BY g]`` and
``FROM t PIVOT (agg(x) [AS a], ... FOR c IN (v1, v2) [GROUP BY g])`` ->
``SELECT g, agg(x) FILTER (WHERE c = v1) AS "v1[_a]", ... FROM t GROUP BY g`` (without GROUP BY:
every column of t that is neither ``c`` nor read by an aggregate; count is 0 where no row has the
value, as in DuckDB). The values must be listed (DuckDB finds them with a query of its own).

``UNPIVOT t ON c1, c2 [INTO NAME k VALUE v]`` and ``FROM t UNPIVOT [INCLUDE NULLS] (v FOR k IN
(c1, c2 [AS n]))`` -> ``SELECT <other columns>, 'c1' AS k, c1 AS v FROM t WHERE c1 IS NOT NULL
UNION ALL ...`` (rows with a NULL value dropped unless INCLUDE NULLS; the values take the columns'
common type).
"""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.sql.names import name_of


def _name_of(value: exp.Expression) -> str:
    if isinstance(value, exp.Alias):
        return value.alias
    if isinstance(value, exp.Literal):
        return value.this
    if isinstance(value, exp.Column):
        return value.name
    return value.sql(dialect="duckdb")


def _pivot(source: exp.Expression, columns: list[str], on: exp.Expression, aggs: list[exp.Expression],
           group: exp.Group | None) -> exp.Select:
    if not isinstance(on, exp.In) or not on.expressions:
        raise UnsupportedError("PIVOT without an IN list of values (list them: PIVOT t ON c IN ('a', 'b') ...)")
    if not aggs:
        raise UnsupportedError("PIVOT without USING aggregates")
    col = on.this
    if group is not None:
        keys = list(group.expressions)
    else:
        used = {col.name.lower()} | {c.name.lower() for a in aggs for c in a.find_all(exp.Column)}
        keys = [exp.column(n, quoted=True) for n in columns if n.lower() not in used]
    items: list[exp.Expression] = [k.copy() for k in keys]
    for value in on.expressions:
        v = value.this if isinstance(value, exp.Alias) else value
        for agg in aggs:
            fn = agg.this if isinstance(agg, exp.Alias) else agg
            name = _name_of(value) if len(aggs) == 1 and not isinstance(agg, exp.Alias) \
                else f"{_name_of(value)}_{agg.alias if isinstance(agg, exp.Alias) else name_of(fn)}"
            cond = exp.EQ(this=col.copy(), expression=v.copy())
            items.append(exp.alias_(exp.Filter(this=fn.copy(), expression=exp.Where(this=cond)), name, quoted=True))
    out = exp.select(*items).from_(source)
    return out.group_by(*[k.copy() for k in keys]) if keys else out


def _unpivot(source: exp.Expression, columns: list[str], targets: list[exp.Expression], name: str, value: str,
             include_nulls: bool) -> exp.Expression:
    if not targets:
        raise SqlError("UNPIVOT needs the columns to unpivot")
    picked = [(t.this if isinstance(t, exp.Alias) else t) for t in targets]
    if any(not isinstance(p, exp.Column) for p in picked):
        raise UnsupportedError("UNPIVOT of expressions or COLUMNS(...) (name the columns)")
    lower = {p.name.lower() for p in picked}
    others = [exp.column(n, quoted=True) for n in columns if n.lower() not in lower]
    parts = []
    for t, p in zip(targets, picked):
        sel = exp.select(*[o.copy() for o in others], exp.alias_(exp.Literal.string(_name_of(t)), name, quoted=True),
                         exp.alias_(p.copy(), value, quoted=True)).from_(source.copy())
        parts.append(sel if include_nulls else sel.where(exp.Not(this=exp.Is(this=p.copy(), expression=exp.Null()))))
    out = parts[0]
    for p in parts[1:]:
        out = exp.union(out, p, distinct=False)
    return out


def pivoted(binder, source: exp.Expression, pivot: exp.Pivot) -> exp.Expression:
    """The query a PIVOT/UNPIVOT of ``source`` means, given ``source``'s columns."""
    if isinstance(source, exp.Table) and source.alias:
        source = source.copy()
        source.set("alias", None)
    _, rel = binder._from_item(source)
    return rewrite(pivot, source, [n for n, _ in rel.columns if n not in rel.hidden])


def pivot_item(binder, node: exp.Expression) -> tuple[exp.Expression, str]:
    """``FROM x PIVOT (...) / UNPIVOT (...) [AS alias]``: the query it means and its alias."""
    if len(node.args["pivots"]) != 1:
        raise UnsupportedError("several PIVOT/UNPIVOT clauses on one FROM item")
    pivot = node.args["pivots"][0]
    bare = node.copy()
    bare.set("pivots", None)
    alias = pivot.alias or node.alias or ("unpivot" if pivot.args.get("unpivot") else "pivot")
    return pivoted(binder, bare, pivot), alias.lower()


def rewrite(node: exp.Pivot, source: exp.Expression, columns: list[str]) -> exp.Expression:
    """The query ``node`` (applied to ``source``, whose columns are ``columns``) means."""
    if node.args.get("unpivot"):
        into = node.args.get("into")
        if node.args.get("fields"):  # FROM t UNPIVOT (v FOR k IN (c1, c2))
            field = node.args["fields"][0]
            if len(node.args["fields"]) != 1 or len(node.expressions) != 1:
                raise UnsupportedError("UNPIVOT into several value columns")
            return _unpivot(source, columns, list(field.expressions), field.this.name, node.expressions[0].name,
                            bool(node.args.get("include_nulls")))
        name = into.this.name if into is not None else "name"
        if into is not None and len(into.expressions) != 1:
            raise UnsupportedError("UNPIVOT into several value columns")
        value = into.expressions[0].name if into is not None else "value"
        return _unpivot(source, columns, list(node.expressions), name, value, bool(node.args.get("include_nulls")))
    if node.args.get("fields"):  # FROM t PIVOT (agg FOR c IN (...))
        if len(node.args["fields"]) != 1:
            raise UnsupportedError("PIVOT on several columns")
        return _pivot(source, columns, node.args["fields"][0], list(node.expressions), node.args.get("group"))
    if len(node.expressions) != 1:
        raise UnsupportedError("PIVOT on several columns")
    return _pivot(source, columns, node.expressions[0], list(node.args.get("using") or []), node.args.get("group"))
