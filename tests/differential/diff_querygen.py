"""A random SQL query generator (driven by hypothesis) over the SSB, TPC-H and NULL-table schemas.

It stays inside hetdb's documented coverage (sql-common.md): filters (comparisons, BETWEEN, IN lists,
LIKE/NOT LIKE, IS [NOT] NULL, AND/OR/NOT), inner and left joins along foreign keys (ON or comma
joins, optional residual conditions), GROUP BY with SUM/COUNT/COUNT DISTINCT/AVG/MIN/MAX, HAVING,
DISTINCT, ORDER BY (ASC/DESC, NULLS FIRST/LAST, by alias or ordinal), LIMIT/OFFSET, scalar, IN/NOT IN
and EXISTS/NOT EXISTS subqueries (correlated and not), CASE, COALESCE, SUBSTRING, EXTRACT(year),
date +- INTERVAL on literals, arithmetic (+ - * / // %), derived tables and CTEs; date functions
(date_trunc, last_day, date_diff, dayname, DATE + INTERVAL, DATE + to_months(n) - to_days(n), parts and
epoch of TIMESTAMP differences and of age()), gcd, trunc, quantile_disc, and window functions whose answer does
not depend on row order among ties (count/sum/max OVER a partition, rank/dense_rank, percent_rank/
cume_dist, RANGE frames, entropy OVER a partition), and the entropy aggregate.

Every query is deterministic, so DuckDB's answer is the truth: LIMIT/OFFSET only come with an ORDER BY
over every output column; divisors are non-zero constants; products stay far from int32 overflow;
float aggregates only read columns whose values are multiples of 1/4 (exact sums in any order).
Literals are drawn from values that occur in the data, so filters select something.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa
from diff_check import TOTAL, Ordering, OrderKey
from diff_data import Dataset
from hypothesis import strategies as st

INT, DEC, FLOAT, STR, DATE, BOOL, TS = "int", "dec", "float", "str", "date", "bool", "ts"
NUMERIC = (INT, DEC, FLOAT)
ORDERABLE = (INT, DEC, FLOAT, STR, DATE, TS)

# Foreign keys (child table, child column, parent table, parent column) per schema.
SSB_FKS = [("lineorder", "lo_custkey", "customer", "c_custkey"),
           ("lineorder", "lo_partkey", "part", "p_partkey"),
           ("lineorder", "lo_suppkey", "supplier", "s_suppkey"),
           ("lineorder", "lo_orderdate", "date", "d_datekey"),
           ("lineorder", "lo_commitdate", "date", "d_datekey")]
TPCH_FKS = [("lineitem", "l_orderkey", "orders", "o_orderkey"),
            ("lineitem", "l_partkey", "part", "p_partkey"),
            ("lineitem", "l_suppkey", "supplier", "s_suppkey"),
            ("orders", "o_custkey", "customer", "c_custkey"),
            ("customer", "c_nationkey", "nation", "n_nationkey"),
            ("supplier", "s_nationkey", "nation", "n_nationkey"),
            ("nation", "n_regionkey", "region", "r_regionkey"),
            ("partsupp", "ps_partkey", "part", "p_partkey"),
            ("partsupp", "ps_suppkey", "supplier", "s_suppkey")]
NULLS_FKS = [("nulls", "k", "nulls2", "k")]
# Tables a query may start from (a fact table keeps joins n:1 and results small).
SSB_ROOTS = ["lineorder", "customer", "part", "supplier", "date"]
TPCH_ROOTS = ["lineitem", "orders", "customer", "partsupp", "part", "supplier", "nation"]
NULLS_ROOTS = ["nulls", "nulls2"]
# Columns a float aggregate may read: values are exact multiples of 1/4.
EXACT_FLOAT_COLUMNS = {"f64"}


@dataclass(frozen=True)
class Col:
    table: str
    name: str
    kind: str
    samples: tuple  # non-NULL values occurring in the data, in order


@dataclass
class Schema:
    name: str
    tables: dict[str, list[Col]]
    fks: list[tuple[str, str, str, str]]
    roots: list[str]

    def col(self, table: str, name: str) -> Col:
        return next(c for c in self.tables[table] if c.name == name)


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t):
        return INT
    if pa.types.is_decimal(t):
        return DEC
    if pa.types.is_floating(t):
        return FLOAT
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return STR
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_boolean(t):
        return BOOL
    if pa.types.is_timestamp(t):
        return TS
    return None


def build_schema(data: Dataset, fks, roots, samples_per_column: int = 16) -> Schema:
    """The generator's view of a data set: typed columns with sample values taken from DuckDB."""
    tables: dict[str, list[Col]] = {}
    for table, schema in data.arrow_schemas.items():
        cols = []
        for f in schema:
            kind = _kind(f.type)
            if kind is None:
                continue
            distinct = [r[0] for r in data.duck.sql(
                f'SELECT DISTINCT "{f.name}" FROM "{table}" WHERE "{f.name}" IS NOT NULL '
                f'ORDER BY 1').fetchall()]
            if len(distinct) > samples_per_column:
                step = (len(distinct) - 1) / (samples_per_column - 1)
                distinct = [distinct[round(i * step)] for i in range(samples_per_column)]
            cols.append(Col(table, f.name, kind, tuple(distinct)))
        tables[table] = cols
    return Schema(data.name, tables, fks, roots)


def literal(kind: str, value) -> str:
    """SQL text of a non-NULL value of ``kind`` (negative numbers parenthesized)."""
    if kind == INT:
        return f"({value})" if value < 0 else str(value)
    if kind == DEC:
        text = format(Decimal(value), "f")
        return f"({text})" if text.startswith("-") else text
    if kind == FLOAT:
        text = repr(float(value))
        return f"({text})" if text.startswith("-") else text
    if kind == STR:
        return "'" + str(value).replace("'", "''") + "'"
    if kind == DATE:
        return f"DATE '{value.isoformat()}'"
    if kind == BOOL:
        return "TRUE" if value else "FALSE"
    raise ValueError(f"no literals of kind {kind}")


@dataclass
class Item:
    """One expression of a SELECT list: SQL text, kind, and whether it is a float aggregate."""

    sql: str
    kind: str
    float_agg: bool = False


@dataclass
class Query:
    sql: str
    ordering: Ordering
    tolerances: list[float] = field(default_factory=list)


@dataclass
class Scope:
    """The tables visible to expressions: (alias, table) pairs."""

    tables: list[tuple[str, str]]


class QueryGen:
    """Draws one query through hypothesis' ``data`` object (so failures shrink to small queries)."""

    def __init__(self, data, schema: Schema):
        self.data = data
        self.schema = schema
        self.subquery_counter = 0

    # ---- drawing helpers -------------------------------------------------------------------------
    def pick(self, seq):
        return self.data.draw(st.sampled_from(list(seq)))

    def chance(self, p: float) -> bool:
        # integers() shrinks towards 0, i.e. towards "no": failing queries shrink to plain ones
        return self.data.draw(st.integers(0, 999)) < p * 1000

    def num(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    # ---- columns and literals ------------------------------------------------------------------
    def columns(self, scope: Scope, kinds=None) -> list[tuple[str, Col]]:
        return [(alias, c) for alias, t in scope.tables for c in self.schema.tables[t]
                if kinds is None or c.kind in kinds]

    def column(self, scope: Scope, kinds=None) -> tuple[str, Col] | None:
        cols = self.columns(scope, kinds)
        return self.pick(cols) if cols else None

    def sample(self, col: Col):
        return self.pick(col.samples) if col.samples else None

    def lit_for(self, col: Col) -> str:
        v = self.sample(col)
        if v is None:  # an all-NULL column: any literal of its kind will do
            return {INT: "1", DEC: "1.5", FLOAT: "2.25", STR: "'a'", DATE: "DATE '1995-06-01'",
                    BOOL: "TRUE"}[col.kind]
        if col.kind == INT and self.chance(0.1):
            return literal(DEC, Decimal(v) + Decimal("0.5"))  # mixed int/decimal comparison
        return literal(col.kind, v)

    # ---- scalar expressions --------------------------------------------------------------------
    def scalar(self, scope: Scope, kinds=ORDERABLE, depth: int = 0) -> Item | None:
        """A row-level expression of one of ``kinds`` (None when the scope has no such column)."""
        ref = self.column(scope, [k for k in kinds if k != TS] if self.chance(0.9) else kinds)
        if ref is None:
            return None
        alias, col = ref
        base = Item(f"{alias}.{col.name}", col.kind)
        if depth >= 2 or not self.chance(0.35):
            return base
        k = col.kind
        form = self.num(0, 5)
        if form == 0 and k in (INT, DEC):
            other = self.column(scope, [k])
            op = self.pick(["+", "-"])
            return Item(f"({base.sql} {op} {other[0]}.{other[1].name})", k)
        if form == 1 and k in (INT, DEC, FLOAT):
            op = self.pick(["+", "-", "*", "/", "//", "%"] if k == INT else ["+", "-", "*", "/"])
            c = self.num(1, 9)
            out = FLOAT if op == "/" or k == FLOAT else k
            if op in ("//", "%") and k != INT:
                op = "*"
            if k == INT and self.chance(0.15):
                return Item(f"gcd({base.sql}, {c})", INT)
            if k != INT and op == "/" and self.chance(0.2):
                return Item(f"trunc({base.sql} / {c})", FLOAT)
            return Item(f"({base.sql} {op} {c})", out)
        if form == 2 and k == DATE and INT in kinds:
            return Item(f"EXTRACT(year FROM {base.sql})", INT)
        if form == 2 and k == STR:
            start, length = self.num(1, 3), self.num(1, 4)
            text = (f"SUBSTRING({base.sql}, {start}, {length})" if self.chance(0.5)
                    else f"substring({base.sql} from {start} for {length})")
            return Item(text, STR)
        if form == 3 and k != TS:
            return Item(f"COALESCE({base.sql}, {self.lit_for(col)})", k)
        if form == 4 and k != TS:
            cond = self.predicate(scope, depth + 1, allow_subquery=False)
            other = self.scalar(scope, [k], depth + 1)
            if other is not None and other.kind == k:
                alt = other.sql if self.chance(0.5) else "NULL"
                return Item(f"CASE WHEN {cond} THEN {base.sql} ELSE {alt} END", k)
        if form == 5 and k == DEC:
            other = self.column(scope, [DEC])
            return Item(f"({base.sql} * (1 - {other[0]}.{other[1].name}))", DEC)
        if form == 5 and k == DATE:
            options = [(f"date_trunc('{self.pick(['month', 'quarter', 'year', 'week'])}', {base.sql})", TS),
                       (f"({base.sql} + INTERVAL '{self.num(1, 14)}' {self.pick(['DAY', 'MONTH', 'YEAR'])})", TS),
                       (f"last_day({base.sql})", DATE),
                       (f"date_diff('{self.pick(['day', 'month', 'year'])}', {base.sql}, DATE '1996-02-29')", INT),
                       (f"dayname({base.sql})", STR),
                       (f"({base.sql} + to_months({self.num(1, 14)}) - to_days({self.num(0, 40)}))", TS),
                       (f"epoch(CAST({base.sql} AS TIMESTAMP) - TIMESTAMP '1996-02-29 12:00:00')", FLOAT),
                       (f"extract(day FROM TIMESTAMP '1995-03-31 06:00:00' - {base.sql})", INT),
                       (f"date_part('{self.pick(['year', 'month', 'day'])}', "
                        f"age(CAST({base.sql} AS TIMESTAMP), TIMESTAMP '1995-01-31 18:00:00'))", INT)]
            options = [o for o in options if o[1] in kinds]
            if options:
                return Item(*self.pick(options))
        return base

    def window_item(self, scope: Scope) -> Item | None:
        """A window function whose value does not depend on the order of tied rows."""
        part = self.scalar(scope, [INT, STR, DATE, BOOL])
        arg = self.column(scope, [INT, DEC])
        order = self.column(scope, [INT, DEC, DATE, STR])
        if part is None or arg is None or order is None:
            return None
        a, o = f"{arg[0]}.{arg[1].name}", f"{order[0]}.{order[1].name} {self.pick(['ASC', 'DESC'])}"
        form = self.num(0, 7)
        if form == 5:
            return Item(f"{self.pick(['percent_rank', 'cume_dist'])}() OVER (PARTITION BY {part.sql} ORDER BY {o})",
                        FLOAT)
        if form == 6:
            bounds = self.pick(["UNBOUNDED PRECEDING AND CURRENT ROW", "CURRENT ROW AND UNBOUNDED FOLLOWING"])
            fn = self.pick(["sum", "count"])
            return Item(f"{fn}({a}) OVER (PARTITION BY {part.sql} ORDER BY {o} RANGE BETWEEN {bounds})",
                        arg[1].kind if fn == "sum" else INT)
        if form == 7:
            return Item(f"entropy({o.split()[0]}) OVER (PARTITION BY {part.sql})", FLOAT, float_agg=True)
        if form == 0:
            return Item(f"count(*) OVER (PARTITION BY {part.sql})", INT)
        if form == 1:
            return Item(f"sum({a}) OVER (PARTITION BY {part.sql})", arg[1].kind)
        if form == 2:
            return Item(f"rank() OVER (PARTITION BY {part.sql} ORDER BY {o})", INT)
        if form == 3:
            return Item(f"dense_rank() OVER (PARTITION BY {part.sql} ORDER BY {o})", INT)
        return Item(f"max({a}) OVER (PARTITION BY {part.sql} ORDER BY {o} "
                    f"RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)", arg[1].kind)

    # ---- predicates ------------------------------------------------------------------------------
    def comparison(self, scope: Scope, depth: int) -> str:
        ref = self.column(scope, [INT, DEC, FLOAT, STR, DATE, BOOL, TS])
        alias, col = ref
        name = f"{alias}.{col.name}"
        form = self.num(0, 7)
        if col.kind == TS or form == 7:
            if col.kind == TS and self.chance(0.5):
                other = self.column(scope, [TS])
                return f"{name} {self.pick(['<', '<=', '=', '<>', '>'])} {other[0]}.{other[1].name}"
            return f"{name} IS {self.pick(['NULL', 'NOT NULL'])}"
        if col.kind == BOOL:
            return self.pick([name, f"NOT {name}", f"{name} = {self.lit_for(col)}"])
        if form == 1 and col.samples:
            lo, hi = sorted([self.sample(col), self.sample(col)])
            neg = "NOT " if self.chance(0.15) else ""
            return f"{name} {neg}BETWEEN {literal(col.kind, lo)} AND {literal(col.kind, hi)}"
        if form == 2:
            values = [self.lit_for(col) for _ in range(self.num(1, 5))]
            if self.chance(0.1):
                values.append("NULL")
            neg = "NOT " if self.chance(0.3) else ""
            return f"{name} {neg}IN ({', '.join(values)})"
        if form == 3 and col.kind == STR:
            neg = "NOT " if self.chance(0.25) else ""
            return f"{name} {neg}LIKE {self.like_pattern(col)}"
        if form == 4:
            other = self.column(scope, [col.kind])
            return f"{name} {self.pick(['=', '<>', '<', '<=', '>', '>='])} {other[0]}.{other[1].name}"
        if form == 5 and col.kind == DATE:
            base = self.sample(col) or dt.date(1995, 6, 1)
            n = self.num(1, 40)
            unit = self.pick(["DAY", "MONTH", "YEAR"])
            sign = self.pick(["+", "-"])
            return (f"{name} {self.pick(['<', '>=', '>'])} DATE '{base.isoformat()}' {sign} "
                    f"INTERVAL '{n}' {unit}")
        if form == 6:
            item = self.scalar(scope, [col.kind], depth + 1)
            if item is not None and item.kind in (INT, DEC, FLOAT, STR, DATE):
                probe = self.column(scope, [item.kind])
                lit = self.lit_for(probe[1]) if probe else self.lit_for(col)
                return f"{item.sql} {self.pick(['=', '<>', '<', '<=', '>', '>='])} {lit}"
        return f"{name} {self.pick(['<=', '=', '<>', '<', '>', '>='])} {self.lit_for(col)}"

    def like_pattern(self, col: Col) -> str:
        v = str(self.sample(col) or "a")
        i = self.num(0, max(0, len(v) - 1))
        j = self.num(i, len(v))
        form = self.num(0, 4)
        pat = {0: v[:j] + "%", 1: "%" + v[i:], 2: "%" + v[i:j] + "%",
               3: v[:i] + "_" + v[i + 1:] if v else "_", 4: v}[form]
        return literal(STR, pat)

    def predicate(self, scope: Scope, depth: int = 0, allow_subquery: bool = True) -> str:
        roll = self.num(0, 9)
        if depth < 2 and roll <= 2:
            op = self.pick(["AND", "OR"])
            left = self.predicate(scope, depth + 1, allow_subquery)
            right = self.predicate(scope, depth + 1, allow_subquery)
            return f"({left} {op} {right})"
        if depth < 2 and roll == 3:
            return f"NOT ({self.predicate(scope, depth + 1, allow_subquery)})"
        if allow_subquery and roll == 4 and self.chance(0.6):
            sub = self.subquery_predicate(scope)
            if sub is not None:
                return sub
        return self.comparison(scope, depth)

    # ---- subqueries ------------------------------------------------------------------------------
    def _alias(self) -> str:
        self.subquery_counter += 1
        return f"s{self.subquery_counter}"

    def _links(self, scope: Scope) -> list[tuple[str, str, str, str]]:
        """(outer alias, outer column, inner table, inner column) pairs along foreign keys."""
        out = []
        for alias, table in scope.tables:
            for child, ccol, parent, pcol in self.schema.fks:
                if child == table:
                    out.append((alias, ccol, parent, pcol))
                if parent == table:
                    out.append((alias, pcol, child, ccol))
        return out

    def subquery_predicate(self, scope: Scope) -> str | None:
        links = self._links(scope)
        if not links:
            return None
        outer_alias, outer_col, inner_table, inner_col = self.pick(links)
        s = self._alias()
        inner = Scope([(s, inner_table)])
        where = self.predicate(inner, 1, allow_subquery=False)
        form = self.num(0, 3)
        if form == 0:
            neg = "NOT " if self.chance(0.4) else ""
            return f"{outer_alias}.{outer_col} {neg}IN (SELECT {s}.{inner_col} FROM {inner_table} {s} WHERE {where})"
        if form == 1:
            neg = "NOT " if self.chance(0.4) else ""
            return (f"{neg}EXISTS (SELECT 1 FROM {inner_table} {s} WHERE {s}.{inner_col} = "
                    f"{outer_alias}.{outer_col} AND {where})")
        # scalar subquery compared with an outer numeric column, correlated or not
        ref = self.column(inner, [INT, DEC])
        outer = self.column(scope, [INT, DEC])
        if ref is None or outer is None:
            return None
        agg = self.pick(["MIN", "MAX", "AVG", "SUM", "COUNT"])
        correlated = form == 3
        cond = f"{s}.{inner_col} = {outer_alias}.{outer_col} AND {where}" if correlated else where
        return (f"{outer[0]}.{outer[1].name} {self.pick(['<', '<=', '>', '>=', '=', '<>'])} "
                f"(SELECT {agg}({ref[0]}.{ref[1].name}) FROM {inner_table} {s} WHERE {cond})")

    # ---- FROM ------------------------------------------------------------------------------------
    def from_clause(self) -> tuple[Scope, str, list[str]]:
        """FROM text plus WHERE conjuncts that comma joins need."""
        root = self.pick(self.schema.roots)
        scope = Scope([("t0", root)])
        joins = self.num(0, 3 if len(self.schema.fks) > 1 else 1)
        comma = self.chance(0.3)
        parts = [f"{root} t0"]
        conds: list[str] = []
        for i in range(1, joins + 1):
            # no table twice: keeps every join along a key and the result small
            links = [lk for lk in self._links(scope) if lk[2] not in {t for _, t in scope.tables}]
            if not links:
                break
            outer_alias, outer_col, table, col = self.pick(links)
            alias = f"t{i}"
            on = f"{outer_alias}.{outer_col} = {alias}.{col}"
            new_scope = Scope(scope.tables + [(alias, table)])
            if comma:
                parts.append(f", {table} {alias}")
                conds.append(on)
            else:
                kind = self.pick(["JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN"])
                if self.chance(0.2):
                    on += f" AND {self.predicate(Scope([(alias, table)]), 1, allow_subquery=False)}"
                parts.append(f" {kind} {table} {alias} ON {on}")
            scope = new_scope
        return scope, "".join(parts), conds

    # ---- whole queries ---------------------------------------------------------------------------
    def aggregate(self, scope: Scope) -> Item:
        form = self.num(0, 6)
        if form == 0:
            return Item("COUNT(*)", INT)
        if form == 1:
            item = self.scalar(scope)
            distinct = "DISTINCT " if self.chance(0.4) else ""
            return Item(f"COUNT({distinct}{item.sql})", INT)
        if form in (2, 3):
            ref = self.column(scope, [INT, DEC]) if self.chance(0.7) else None
            exact_floats = [(a, c) for a, c in self.columns(scope, [FLOAT]) if c.name in EXACT_FLOAT_COLUMNS]
            if ref is None and exact_floats:
                ref = self.pick(exact_floats)
            if ref is None:
                ref = self.column(scope, [INT, DEC])
            if ref is None:
                return Item("COUNT(*)", INT)
            arg = f"{ref[0]}.{ref[1].name}"
            if ref[1].kind != FLOAT and self.chance(0.3):
                item = self.scalar(Scope([s for s in scope.tables if s[0] == ref[0]]), [ref[1].kind])
                if item is not None and item.kind == ref[1].kind:
                    arg = item.sql
            if form == 2:
                return Item(f"SUM({arg})", ref[1].kind, float_agg=ref[1].kind == FLOAT)
            return Item(f"AVG({arg})", FLOAT, float_agg=True)
        ref = self.column(scope, [INT, DEC, STR, DATE, TS])
        if self.chance(0.1):
            return Item(f"entropy({ref[0]}.{ref[1].name})", FLOAT, float_agg=True)
        if self.chance(0.2):
            return Item(f"quantile_disc({ref[0]}.{ref[1].name}, {self.pick(['0', '0.25', '0.5', '0.9', '1'])})",
                        ref[1].kind)
        op = self.pick(["MIN", "MAX"])
        return Item(f"{op}({ref[0]}.{ref[1].name})", ref[1].kind)

    def select_block(self, allow_order: bool = True) -> tuple[str, list[Item], bool]:
        """One SELECT ... FROM ... [WHERE] [GROUP BY/HAVING]; returns (sql, items, grouped)."""
        scope, from_sql, conds = self.from_clause()
        if self.chance(0.8):
            conds.append(self.predicate(scope))
        grouped = self.chance(0.5)
        distinct = False
        tail = ""
        if grouped:
            keys = [k for k in (self.scalar(scope, [INT, DEC, STR, DATE, BOOL])
                                for _ in range(self.num(0, 3))) if k is not None]
            aggs = [self.aggregate(scope) for _ in range(self.num(1, 3))]
            items = keys + aggs
            if keys:
                tail += " GROUP BY " + ", ".join(k.sql for k in keys)
            if self.chance(0.3):
                agg = self.aggregate(scope)
                if agg.sql.startswith("COUNT") or agg.kind in (FLOAT, TS):
                    tail += f" HAVING COUNT(*) > {self.num(0, 5)}"
                else:
                    probe = self.column(scope, [agg.kind])
                    lit = self.lit_for(probe[1]) if probe else "1"
                    tail += f" HAVING {agg.sql} {self.pick(['>', '<', '>=', '<>'])} {lit}"
        else:
            items = []
            for _ in range(self.num(1, 4)):
                if self.chance(0.08):
                    sub = self.scalar_subquery_item()
                    if sub is not None:
                        items.append(sub)
                        continue
                if self.chance(0.06):
                    pred = self.subquery_predicate(scope)
                    if pred is not None:
                        items.append(Item(f"CASE WHEN {pred} THEN 1 ELSE 0 END", INT))
                        continue
                if self.chance(0.1):
                    win = self.window_item(scope)
                    if win is not None:
                        items.append(win)
                        continue
                item = self.scalar(scope)
                if item is not None:
                    items.append(item)
            distinct = self.chance(0.25)
        select = ", ".join(f"{it.sql} AS c{i}" for i, it in enumerate(items))
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{select} FROM {from_sql}{where}{tail}"
        return sql, items, grouped

    def scalar_subquery_item(self) -> Item | None:
        table = self.pick(list(self.schema.tables))
        s = self._alias()
        inner = Scope([(s, table)])
        ref = self.column(inner, [INT, DEC, STR, DATE])
        if ref is None:
            return None
        where = self.predicate(inner, 1, allow_subquery=False)
        return Item(f"(SELECT MAX({s}.{ref[1].name}) FROM {table} {s} WHERE {where})", ref[1].kind)

    def order_by(self, items: list[Item]) -> tuple[str, Ordering, bool]:
        """ORDER BY text, the ordering contract, and whether LIMIT/OFFSET may follow."""
        if not items or self.chance(0.35):
            return "", None, False
        exact = [i for i, it in enumerate(items) if it.kind != FLOAT]
        floats = [i for i, it in enumerate(items) if it.kind == FLOAT]
        total = self.chance(0.7) or not exact
        if total:
            perm = self.data.draw(st.permutations(exact)) + floats
        else:
            perm = self.data.draw(st.permutations(exact))[: self.num(1, len(exact))]
        keys, text = [], []
        for i in perm:
            desc = self.chance(0.4)
            nulls = self.pick([None, "NULLS FIRST", "NULLS LAST"])
            nulls_first = nulls == "NULLS FIRST"
            ref = f"c{i}" if self.chance(0.5) else str(i + 1)
            text.append(ref + (" DESC" if desc else "") + (f" {nulls}" if nulls else ""))
            keys.append(OrderKey(i, desc, nulls_first))
        sql = " ORDER BY " + ", ".join(text)
        if total and len(floats) <= 1:
            return sql, TOTAL, True
        # several float columns: near-equal float values may order differently -> check exact keys only
        return sql, tuple(k for k in keys if k.column not in floats) or None, False

    def query(self) -> Query:
        sql, items, grouped = self.select_block()
        if self.chance(0.15):
            sql, items = self.wrap(sql, items)
        order_sql, ordering, limit_ok = self.order_by(items)
        sql += order_sql
        if limit_ok and self.chance(0.5):
            sql += f" LIMIT {self.num(0, 30)}"
            if self.chance(0.3):
                sql += f" OFFSET {self.num(0, 10)}"
        tols = [1e-6 if it.float_agg else 1e-9 for it in items]
        return Query(sql, ordering, tols)

    def wrap(self, inner_sql: str, items: list[Item]) -> tuple[str, list[Item]]:
        """Use the block as a derived table or CTE and select from it again."""
        cols = [f"c{i}" for i in range(len(items))]
        cte = self.chance(0.5)
        source = "q d" if cte else f"({inner_sql}) AS d"
        prefix = f"WITH q AS ({inner_sql}) " if cte else ""
        exact = [i for i, it in enumerate(items) if it.kind in (INT, DEC, STR, DATE, BOOL)]
        if exact and self.chance(0.5):
            key = self.pick(exact)
            return (f"{prefix}SELECT d.{cols[key]} AS c0, COUNT(*) AS c1 FROM {source} "
                    f"GROUP BY d.{cols[key]}", [Item("", items[key].kind), Item("", INT)])
        where = f" WHERE d.{cols[0]} IS NOT NULL" if self.chance(0.5) else ""
        select = ", ".join(f"d.{c} AS {c}" for c in cols)
        return f"{prefix}SELECT {select} FROM {source}{where}", items
