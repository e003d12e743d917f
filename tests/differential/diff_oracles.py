"""Metamorphic oracles (SQLancer's TLP and NoREC) over the fuzz tables, checked on hetdb against itself.

TLP (ternary logic partitioning): for any predicate p, every row of a query satisfies exactly one of
``p``, ``NOT p`` and ``p IS NULL``, so
  - WHERE:     rows(Q) = rows(Q WHERE p) + rows(Q WHERE NOT p) + rows(Q WHERE (p) IS NULL) (multisets);
  - DISTINCT:  the distinct rows of the three partitions together = SELECT DISTINCT of the whole;
  - aggregate: count/sum of the partitions add up, min/max of the partitions' min/max;
  - GROUP BY:  the same per group (groups matched by key, NULL/NaN keys included; a group may be
               missing from some partitions).
NoREC (non-optimizing reference engine): ``count(*) ... WHERE p`` equals
``sum(CASE WHEN p THEN 1 ELSE 0 END)`` over the unfiltered rows, which no optimizer pass can push down.

The unpartitioned query is also compared with DuckDB (by the runner), so an oracle checks hetdb twice.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass

import pyarrow as pa
from diff_check import pylist
from diff_fuzzgen import DATE, DBL, DEC, INT, STR, TSTAMP, E, FuzzGen, Query

TLP_WHERE, TLP_DISTINCT, TLP_AGGREGATE, TLP_GROUP, NOREC = (
    "tlp-where", "tlp-distinct", "tlp-aggregate", "tlp-group", "norec")


@dataclass
class Oracle:
    kind: str
    base: Query          # compared with DuckDB, and the whole the parts must add up to
    parts: list[str]     # hetdb queries whose answers, combined, must equal base's answer
    combine: str         # "concat" | "distinct" | "aggregate:<op>,<op>..." | "group:<keys>:<op>,..." | "norec"


def draw_oracle(gen: FuzzGen) -> Oracle:
    scope, from_sql = gen.from_clause()
    p = gen.pred(scope)
    kind = gen.pick([TLP_WHERE, TLP_WHERE, TLP_DISTINCT, TLP_AGGREGATE, TLP_AGGREGATE, TLP_GROUP, NOREC])
    fixed = f" WHERE {gen.pred(scope, 1, subqueries=False)}" if gen.chance(0.2) else ""
    partitions = [f"({p})", f"NOT ({p})", f"({p}) IS NULL"]

    def where(part: str) -> str:
        return f"{fixed} AND {part}" if fixed else f" WHERE {part}"

    if kind == NOREC:
        base = f"SELECT count(*) FROM {from_sql}{fixed}{' AND' if fixed else ' WHERE'} ({p})"
        # the predicate as a projected value: no pass can use it to filter (nor push it down)
        ref = (f"SELECT sum(CASE WHEN m THEN 1 ELSE 0 END) FROM (SELECT ({p}) AS m FROM {from_sql}{fixed}) "
               f"AS norec")
        return Oracle(kind, Query(base, None, [1e-9]), [ref], "norec")
    if kind in (TLP_AGGREGATE, TLP_GROUP):
        keys = [e.sql for e in (gen.expr(scope) for _ in range(gen.r.randint(1, 2)))
                if e is not None] if kind == TLP_GROUP else []
        ops, items = [], []
        for _ in range(gen.r.randint(1, 4)):
            op = gen.pick(["count", "sum", "min", "max", "count_star"])
            e = gen.expr(scope, (INT, DEC) if op == "sum" else (INT, DEC, DBL, STR, DATE, TSTAMP))
            if e is None or (op == "sum" and e.tags):
                op, e = "count_star", None
            ops.append(op)
            items.append("count(*)" if op == "count_star" else f"{op}({e.sql})")
        select = ", ".join(keys + items)
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
        base = Query(f"SELECT {select} FROM {from_sql}{fixed}{group}", None, [1e-9] * (len(keys) + len(items)))
        how = f"group:{len(keys)}:" if keys else "aggregate:"
        return Oracle(kind, base, [f"SELECT {select} FROM {from_sql}{where(x)}{group}" for x in partitions],
                      how + ",".join(ops))
    items = [e for e in (gen.expr(scope)
                         for _ in range(gen.r.randint(1, 3))) if e is not None]
    if kind == TLP_DISTINCT:
        items = items or [E(f"t0.{_first_col(scope)}", INT)]
    select = ", ".join(f"{e.sql} AS c{i}" for i, e in enumerate(items))
    distinct = "DISTINCT " if kind == TLP_DISTINCT else ""
    base = Query(f"SELECT {distinct}{select} FROM {from_sql}{fixed}", None,
                 [1e-9] * len(items))
    parts = [f"SELECT {distinct}{select} FROM {from_sql}{where(x)}" for x in partitions]
    return Oracle(kind, base, parts, "distinct" if distinct else "concat")


def _first_col(scope) -> str:
    from diff_fuzzgen import TABLES

    return TABLES[scope.tables[0][1]][0].name


def _row_key(row: tuple) -> tuple:
    """A hashable key that compares values as the differential check does (NaN = NaN, -0.0 = 0.0)."""
    out = []
    for v in row:
        if isinstance(v, float):
            out.append(("nan",) if math.isnan(v) else (float(v) + 0.0,))
        else:
            out.append((v,))
    return tuple(out)


def combine(oracle: Oracle, answers: list[pa.Table], like: pa.Table) -> pa.Table:
    """The answer the parts add up to, as a table of ``like``'s schema (column names and types)."""
    if oracle.combine == "norec":
        value = answers[0].column(0)[0].as_py()
        return pa.table([pa.array([value or 0], like.schema.field(0).type)], names=like.column_names)
    rows = [r for t in answers for r in zip(*[pylist(c) for c in t.columns])]
    if oracle.combine == "distinct":
        seen: dict[tuple, tuple] = {}
        for r in rows:
            seen.setdefault(_row_key(r), r)
        rows = list(seen.values())
    elif oracle.combine.startswith("aggregate:"):
        ops = oracle.combine.split(":", 1)[1].split(",")
        rows = [tuple(_merge(op, [r[i] for r in rows]) for i, op in enumerate(ops))]
    elif oracle.combine.startswith("group:"):
        _, nkeys, names = oracle.combine.split(":", 2)
        n, ops = int(nkeys), names.split(",")
        groups: dict[tuple, list[tuple]] = {}
        for r in rows:
            groups.setdefault(_row_key(r[:n]), []).append(r)
        rows = [members[0][:n] + tuple(_merge(op, [r[n + i] for r in members]) for i, op in enumerate(ops))
                for members in groups.values()]
    columns = list(zip(*rows)) if rows else [[] for _ in like.columns]
    return pa.table([_array(list(col), like.schema.field(i).type) for i, col in enumerate(columns)],
                    names=like.column_names)


def _array(values: list, typ: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array(values)  # e.g. a sum of partitions past the base type: compare by value


def _merge(op: str, values: list):
    present = [v for v in values if v is not None]
    if op in ("count", "count_star"):
        return sum(present)
    if not present:
        return None
    if op == "sum":
        with decimal.localcontext(prec=80):  # DECIMAL(38) sums: Python's default 28 digits round
            return sum(present)
    return min(present, key=_duck_order) if op == "min" else max(present, key=_duck_order)


def _duck_order(v) -> tuple:
    """DuckDB's order: NaN above every number (Python's min/max depend on where a NaN stands)."""
    nan = isinstance(v, float) and math.isnan(v)
    return (nan, 0.0 if nan else v)
