"""VALUES lists (``VALUES (1, 'a'), (2, NULL)`` as a query or a FROM item): every cell a constant,
each column cast to the common type of its cells, columns named col0, col1, ... as in DuckDB unless
the alias names them."""

from __future__ import annotations

from sqlglot import exp

from hetdb.errors import SqlError, UnsupportedError
from hetdb.plan.expr import ColumnRef, Field, Literal
from hetdb.plan.logical import Values
from hetdb.sql import typing as TY
from hetdb.sql.exprs import ExprContext, bind_expr
from hetdb.sql.scope import Scope


def bind_values(binder, node: exp.Values):
    from hetdb.sql.binder import BoundQuery

    rows = [list(t.expressions) if isinstance(t, exp.Tuple) else [t] for t in node.expressions]
    if not rows:
        raise SqlError("VALUES needs at least one row")
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise SqlError("every row of a VALUES list must have the same number of values")
    ctx = ExprContext(Scope([]), binder, "VALUES")
    bound = []
    for r in rows:
        cells = []
        for cell in r:
            e = bind_expr(cell, ctx)
            if not isinstance(e, Literal):
                raise UnsupportedError(f"VALUES cell {cell.sql(dialect='duckdb')!r} that is not a constant")
            cells.append(e)
        bound.append(cells)
    alias = node.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
    fields, out_rows = [], [[] for _ in bound]
    for j in range(width):
        col = [r[j] for r in bound]
        t = TY.common_of(col, "VALUES")
        cast = [TY.cast_to(c, t) for c in col]
        name = names[j] if j < len(names) else f"col{j}"
        fields.append(Field(binder.new_cid(name), name, t, any(c.value is None for c in cast)))
        for out, c in zip(out_rows, cast):
            out.append(c.value)
    plan = Values(tuple(fields), tuple(tuple(r) for r in out_rows))
    return BoundQuery(plan, fields, [ColumnRef(f.dtype, f.cid, f.nullable) for f in fields])
