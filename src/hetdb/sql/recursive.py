"""Binding of WITH RECURSIVE: ``name AS (anchor UNION [ALL] recursive term)`` where the recursive term
reads ``name`` (the rows the previous iteration added). The result is a RecursiveCTE leaf whose two
plans are optimized here; the executor iterates them (bounded by the option recursion_limit)."""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import ColumnRef, Field
from hetdb.plan.logical import Output, Project
from hetdb.plan.recursive import RecursiveCTE, WorkingScan
from hetdb.sql import typing as TY

MARK = "hetdb_recursive"


def mark_recursive(with_: exp.With) -> None:
    """Flag the CTEs of a WITH RECURSIVE that read themselves (the others bind as plain CTEs)."""
    if not with_.args.get("recursive"):
        return
    for cte in with_.expressions:
        if _reads(cte.this, cte.alias.lower()):
            cte.this.meta[MARK] = True


def is_recursive(query: exp.Expression) -> bool:
    return bool(query.meta.get(MARK))


def _reads(node: exp.Expression, name: str) -> bool:
    return any(isinstance(t, exp.Table) and t.args.get("db") is None and t.name.lower() == name
               for t in node.find_all(exp.Table))


def working_scan(binder, name: str) -> tuple[WorkingScan, list[str]]:
    """A scan of the previous iteration's rows, with fresh column ids, and the column names."""
    key, names, types = binder.working[name]
    fields = tuple(Field(binder.new_cid(n), n, t, True) for n, t in zip(names, types))
    return WorkingScan(key, fields), names


def bind_recursive(binder, name: str, query: exp.Expression, env: dict, cols: list[str]):
    """The BoundQuery of recursive CTE ``name`` (its columns named ``cols`` where given)."""
    from hetdb.plan.optimizer import optimize
    from hetdb.sql.binder import BoundQuery

    if not isinstance(query, exp.Union) or _reads(query.this, name):
        raise UnsupportedError(f"WITH RECURSIVE {name}: write it as <anchor query> UNION [ALL] <recursive "
                               f"query>, where only the recursive query reads {name}")
    for clause in ("order", "limit", "offset"):
        if query.args.get(clause) is not None:
            raise UnsupportedError(f"{clause.upper()} on the UNION of recursive CTE {name}")
    saved_ctes, saved_working = binder.ctes, dict(binder.working)
    binder.ctes = env
    try:
        anchor = binder.bind_query(query.this, None)
        names = [c for c in cols] + [f.name.lower() for f in anchor.fields[len(cols):]]
        if len(names) > len(anchor.fields):
            raise SqlError(f"'{name}' names {len(cols)} columns but its query returns {len(anchor.fields)}")
        types = [f.dtype for f in anchor.fields]
        key = binder.new_cid(name)
        binder.working[name] = (key, names, types)
        step = binder.bind_query(query.expression, None)
    finally:
        binder.ctes, binder.working = saved_ctes, saved_working
    if len(step.fields) != len(anchor.fields):
        raise SqlError(f"recursive CTE {name}: the recursive query returns {len(step.fields)} columns, "
                       f"the anchor {len(anchor.fields)}")
    step_plan = step.plan
    step_fields = tuple(step.fields)
    if any(f.dtype != t for f, t in zip(step_fields, types)):
        # the recursive query's columns take the anchor's types (DuckDB casts them the same way)
        cast = tuple((Field(binder.new_cid(n), n, t, True), TY.cast_to(ColumnRef(f.dtype, f.cid, True), t))
                     for f, n, t in zip(step_fields, names, types))
        step_plan, step_fields = Project(step.plan, cast), tuple(f for f, _ in cast)
    fields = tuple(Field(binder.new_cid(n), n, t, True) for n, t in zip(names, types))
    node = RecursiveCTE(key, optimize(Output(anchor.plan, tuple(anchor.fields)), binder.db),
                        optimize(Output(step_plan, step_fields), binder.db), fields,
                        bool(query.args.get("distinct")))
    return BoundQuery(node, list(fields), [ColumnRef(f.dtype, f.cid, True) for f in fields])
