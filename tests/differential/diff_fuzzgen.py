"""A seeded random query generator over the fuzz tables (``diff_fuzzdata``), for hetdb vs DuckDB and
for metamorphic checks of hetdb against itself.

Each case is drawn from two seeded streams, so case ``i`` of a campaign can be replayed on its own:
its *shape* (tables, joins, operators, expression forms, literal types, the number of IN items) from
``random.Random(case_seed(seed, i // FAMILY))`` and its *values* (which literals, constants, LIMIT) from
``random.Random(f"values {case_seed(seed, i)}")``. FAMILY consecutive cases share a shape and differ in their
constants: compiled CPU loops take literals as parameters, so the family compiles its loops once
(compiling is most of a case's time) and checks the same loop with FAMILY sets of values. A case is either a differential query (hetdb's answer must equal DuckDB's) or a
metamorphic oracle (``diff_oracles``): TLP over WHERE, aggregates and DISTINCT, and NoREC.

Shapes: filters with three-valued logic (AND/OR/NOT, IS [NOT] NULL, BETWEEN, IN lists with NULL,
LIKE), inner/left/right/full/cross joins on nullable keys, semi/anti joins as IN/NOT IN/EXISTS/
NOT EXISTS subqueries (correlated and not), scalar subqueries, GROUP BY with COUNT/COUNT DISTINCT/SUM/
AVG/MIN/MAX and HAVING, DISTINCT, ORDER BY ... LIMIT/OFFSET over every output column, window
functions whose value does not depend on tie order (count/rank/dense_rank/percent_rank/cume_dist,
RANGE sum/count, min/max over a partition; NULL/NaN/-0.0 partition and order keys), CASE,
COALESCE, NULLIF, integer // and % by values that may be zero (both engines must raise the same
error), arithmetic and sums on BIGINT values near 2^63 and DECIMALs past 18 digits (both must widen
or raise Out of Range), NaN in every comparison, key and ordering; and (``diff_fuzzexpr``) constants
at the edges of their types (NaN/±inf/-0.0, BIGINT limits, first/last dates), casts (to DECIMAL(38),
text, integers from non-finite doubles), DECIMAL(38) products, timestamp/date arithmetic and
truncation, NULL arguments of concat/concat_ws/||.

A shape of an open bug can be left out while it is fixed: a named entry of ``KNOWN_ISSUES`` that the
generator consults; ``HETDB_FUZZ_ALLOW=name,...`` (or ``allow=``) draws it again. The list is empty:
every shape is drawn in every configuration.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from decimal import Decimal

from diff_check import TOTAL, Ordering

# Open bug shapes the generator leaves out until they are fixed (name -> what and where); each name
# is consulted by the generator where it draws that shape (``name in self.allow``).
KNOWN_ISSUES: dict[str, str] = {}

INT, BIG, DEC, DBL, STR, DATE, TSTAMP, BOOL = (
    "int", "bigint", "decimal", "double", "string", "date", "timestamp", "bool")
CLASS = {INT: "num", BIG: "num", DEC: "num", DBL: "num", STR: STR, DATE: DATE, TSTAMP: TSTAMP, BOOL: BOOL}


@dataclass(frozen=True)
class Col:
    name: str
    kind: str
    tag: str = ""  # "nan": holds NaN; "big": near 2^63; "wide": DECIMAL(18,4) up to 18 digits


TABLES: dict[str, list[Col]] = {
    "fa": [Col("id", INT), Col("k", INT), Col("i", INT), Col("big", BIG, "big"), Col("f", DBL),
           Col("fn", DBL, "nan"), Col("dc", DEC), Col("dw", DEC, "wide"), Col("dn", DEC), Col("d", DATE),
           Col("ts", TSTAMP), Col("s", STR), Col("sl", STR), Col("b", BOOL)],
    "fb": [Col("id", INT), Col("k", INT), Col("v", INT), Col("f", DBL), Col("dc", DEC), Col("s", STR),
           Col("d", DATE)],
    "fc": [Col("k", INT), Col("x", INT), Col("s", STR)],
}
TABLES["fe"] = TABLES["fb"]
# join keys shared by the tables (column name -> tables holding it)
JOIN_KEYS = {"k": ("fa", "fb", "fc", "fe"), "s": ("fa", "fb", "fc", "fe"), "d": ("fa", "fb", "fe"),
             "dc": ("fa", "fb", "fe"), "f": ("fa", "fb", "fe")}


def _names(variable: str) -> set[str]:
    names = {n.strip() for n in os.environ.get(variable, "").split(",") if n.strip()}
    unknown = names - set(KNOWN_ISSUES)
    if unknown:
        raise ValueError(f"{variable}: unknown names {sorted(unknown)} (known: {sorted(KNOWN_ISSUES)})")
    return names


def allowed_from_env() -> frozenset[str]:
    """The KNOWN_ISSUES shapes to draw: HETDB_FUZZ_ALLOW, less HETDB_FUZZ_DENY."""
    return frozenset(_names("HETDB_FUZZ_ALLOW") - _names("HETDB_FUZZ_DENY"))


# consecutive cases that share a shape (see the module's docstring)
FAMILY = 4


def case_seed(seed: int, index: int) -> int:
    return seed * 1_000_003 + index


def case_generator(seed: int, index: int, samples: dict, allow: frozenset[str] = frozenset(),
                   variant: str = "") -> FuzzGen:
    """The generator of case ``index``: the shape of its family, values of its own (and of ``variant``:
    a campaign's configurations each draw their own values for a case's shape)."""
    values = f"values {case_seed(seed, index)}" + (f" {variant}" if variant else "")
    return FuzzGen(random.Random(case_seed(seed, index // FAMILY)), samples, allow, values=random.Random(values))


@dataclass(frozen=True)
class E:
    """An expression: SQL text, kind, and tags of the columns it reads."""

    sql: str
    kind: str
    tags: frozenset = frozenset()


@dataclass
class Query:
    sql: str
    ordering: Ordering = None
    tolerances: list[float] = field(default_factory=list)


@dataclass
class Scope:
    tables: list[tuple[str, str]]  # (alias, table)


def literal(kind: str, value) -> str:
    if value is None:
        return "NULL"
    if kind in (INT, BIG):
        return f"({value})" if value < 0 else str(value)
    if kind == DEC:
        text = format(Decimal(value), "f")
        return f"({text})" if text.startswith("-") else text
    if kind == DBL:
        text = repr(float(value))
        return f"({text})" if text.startswith("-") else text
    if kind == STR:
        return "'" + str(value).replace("'", "''") + "'"
    if kind == DATE:
        return f"DATE '{value.isoformat()}'"
    if kind == TSTAMP:
        return f"'{value.isoformat(sep=' ')}'"
    if kind == BOOL:
        return "TRUE" if value else "FALSE"
    raise ValueError(kind)


def sample_values(duck) -> dict[tuple[str, str], tuple]:
    """Finite non-NULL values of every column (literals drawn from them make filters select rows)."""
    out = {}
    for table, cols in TABLES.items():
        for c in cols:
            rows = duck.sql(f'SELECT DISTINCT "{c.name}" FROM {table} WHERE "{c.name}" IS NOT NULL '
                            f'ORDER BY 1').fetchall()
            values = [r[0] for r in rows if not (c.kind == DBL and not math.isfinite(r[0]))]
            out[(table, c.name)] = tuple(values)
    return out


class FuzzGen:
    """Draws queries over the fuzz tables; ``allow`` names KNOWN_ISSUES shapes to draw anyway."""

    def __init__(self, rng: random.Random, samples: dict, allow: frozenset[str] = frozenset(),
                 values: random.Random | None = None):
        self.r = rng                    # the shape
        self.v = values or rng          # the values: never decides what the shape draws next
        self.samples = samples
        self.allow = allow
        self.n_alias = 0

    # ---- helpers ----------------------------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def pick(self, seq):
        return self.r.choice(list(seq))

    def value(self, seq):
        return self.v.choice(list(seq))

    def alias(self) -> str:
        self.n_alias += 1
        return f"q{self.n_alias}"

    def cols(self, scope: Scope, kinds) -> list[tuple[str, str, Col]]:
        return [(a, t, c) for a, t in scope.tables for c in TABLES[t] if c.kind in kinds]

    def lit(self, table: str, col: Col, kind: str | None = None) -> str:
        values = self.samples.get((table, col.name)) or ()
        kind = kind or col.kind
        if self.chance(0.15):
            from diff_fuzzexpr import edge_literal

            edge = edge_literal(self, kind)
            if edge is not None:
                return edge
        if not values or self.chance(0.05):
            return {INT: "0", BIG: "0", DEC: "0.5", DBL: "0.25", STR: "'a'", DATE: "DATE '1995-06-01'",
                    TSTAMP: "'1995-06-01 12:00:00'", BOOL: "TRUE"}[kind]
        return literal(kind, self.value(values))

    # ---- scalar expressions -------------------------------------------------------------------------
    def expr(self, scope: Scope, kinds=(INT, DEC, DBL, STR, DATE, TSTAMP, BOOL), depth: int = 0) -> E | None:
        refs = self.cols(scope, kinds)
        if not refs:
            return None
        a, t, c = self.pick(refs)
        base = E(f"{a}.{c.name}", c.kind, frozenset({c.tag} - {""}))
        if depth >= 2 or not self.chance(0.3):
            return base
        form = self.r.randrange(10)
        k = c.kind
        if form == 0 and k in (INT, BIG):
            op = self.pick(["+", "-", "*"])
            if self.chance(0.1):
                return E(f"({base.sql} {op} NULL)", k, base.tags)
            other = self.expr(scope, [INT] if c.tag != "big" else [INT, BIG], depth + 1)
            rhs = other.sql if other is not None and self.chance(0.5) else str(self.v.randint(1, 9))
            tags = base.tags | (other.tags if other is not None else frozenset())
            return E(f"({base.sql} {op} {rhs})", k if other is None or other.kind == INT else BIG, tags)
        if form == 1 and k in (INT, BIG):
            op = self.pick(["//", "%"])
            if self.chance(0.15):  # a divisor that is sometimes 0: both engines must raise
                div = self.pick(self.cols(scope, [INT]))
                return E(f"({base.sql} {op} {div[0]}.{div[2].name})", k, base.tags)
            return E(f"({base.sql} {op} {self.value([2, 3, 7, -4])})", k, base.tags)
        if form == 2 and k in (DEC, DBL):
            op = self.pick(["+", "-", "*"])
            if k == DEC and op == "*" and c.name == "dn" and self.chance(0.5):
                return E(f"({base.sql} * {base.sql})", DEC, base.tags)
            if k == DEC and op == "*" and self.chance(0.3):
                other = self.expr(scope, [DEC], depth + 1)
                return E(f"({base.sql} * {other.sql})", DEC, base.tags | other.tags)
            return E(f"({base.sql} {op} {self.pick(['2', '0.5', '3'])})", k, base.tags)
        if form == 3 and k != BOOL:
            other = self.expr(scope, [k], depth + 1)
            alt = other.sql if other is not None and other.kind == k else self.lit(t, c)
            return E(f"COALESCE({base.sql}, {alt})", k, base.tags)
        if form == 4:
            cond = self.pred(scope, depth + 1, subqueries=False)
            other = self.expr(scope, [k], depth + 1)
            alt = other.sql if other is not None and other.kind == k and self.chance(0.6) else "NULL"
            return E(f"CASE WHEN {cond} THEN {base.sql} ELSE {alt} END", k, base.tags)
        if form == 5 and k != BOOL:
            return E(f"NULLIF({base.sql}, {self.lit(t, c)})", k, base.tags)
        if form == 6 and k == STR:
            f = self.pick([f"lower({base.sql})", f"upper({base.sql})",
                           f"substring({base.sql}, {self.v.randint(1, 3)}, {self.v.randint(0, 4)})"])
            return E(f, STR, base.tags)
        if form == 6 and k in (INT, DEC) and c.tag == "":
            return E(self.pick([f"abs({base.sql})", f"(-{base.sql})"]), k, base.tags)
        if form == 7 and k in (DATE, TSTAMP):
            return E(f"EXTRACT({self.pick(['year', 'month', 'day'])} FROM {base.sql})", INT, base.tags)
        if form == 7 and k == STR:
            other = self.expr(scope, [STR], depth + 1)
            return self.pick([E(f"length({base.sql})", INT, base.tags),
                              E(f"({base.sql} || {other.sql if other else repr('x')})", STR, base.tags)])
        if form == 7 and k in (INT, DEC) and c.tag == "":
            # a divisor column holds 0: 0 / 0 is NaN
            div = self.pick(self.cols(scope, [INT])) if self.chance(0.2) else None
            return E(f"({base.sql} / {f'{div[0]}.{div[2].name}' if div else self.pick(['4', '2.5'])})",
                     DBL, base.tags | {"avg"})
        if form == 7 and k == INT:
            whens = " ".join(f"WHEN {self.lit(t, c)} THEN {self.v.randint(0, 9)}" for _ in range(self.r.randint(1, 3)))
            return E(f"CASE {base.sql} {whens} ELSE {self.pick(['NULL', '-1'])} END", INT, base.tags)
        if form >= 8:
            from diff_fuzzexpr import more_expr

            return more_expr(self, scope, base, t, c, depth) or base
        return base

    # ---- predicates -----------------------------------------------------------------------------------
    def comparison(self, scope: Scope, depth: int) -> str:
        a, t, c = self.pick(self.cols(scope, (INT, BIG, DEC, DBL, STR, DATE, TSTAMP, BOOL)))
        name = f"{a}.{c.name}"
        form = self.r.randrange(9)
        if c.kind == BOOL:
            return self.pick([name, f"NOT {name}", f"{name} = {self.lit(t, c)}", f"{name} IS NULL"])
        if form == 0:
            return f"{name} IS {self.pick(['NULL', 'NOT NULL'])}"
        if form == 1:
            lo, hi = sorted([self.lit_value(t, c), self.lit_value(t, c)], key=lambda v: (v is None, v))
            neg = "NOT " if self.chance(0.2) else ""
            if self.chance(0.1):
                lo, hi = self.pick([(None, hi), (lo, None)])
            return f"{name} {neg}BETWEEN {literal(c.kind, lo)} AND {literal(c.kind, hi)}"
        if form == 2:
            values = [self.lit(t, c) for _ in range(self.r.randint(1, 4))]
            if self.chance(0.25):
                values.insert(self.r.randint(0, len(values)), "NULL")
            neg = "NOT " if self.chance(0.35) else ""
            return f"{name} {neg}IN ({', '.join(values)})"
        if form == 3 and c.kind == STR:
            v = str(self.lit_value(t, c) or "a")
            i = self.v.randint(0, len(v))
            pat = self.pick([v[:i] + "%", "%" + v[i:], "%" + v[i:i + 2] + "%", "_" + v[1:], v, "%"])
            return f"{name} {'NOT ' if self.chance(0.3) else ''}LIKE {literal(STR, pat)}"
        if form in (4, 5):
            others = [o for o in self.cols(scope, (INT, BIG, DEC, DBL, STR, DATE, TSTAMP))
                      if CLASS[o[2].kind] == CLASS[c.kind]]
            o = self.pick(others)
            return f"{name} {self.cmp_op()} {o[0]}.{o[2].name}"
        if form == 6:
            e = self.expr(scope, [c.kind], depth + 1)
            if e is not None and CLASS[e.kind] == CLASS[c.kind] and e.kind not in (BOOL,):
                return f"{e.sql} {self.cmp_op()} {self.lit(t, c) if e.kind == c.kind else '2'}"
        return f"{name} {self.cmp_op()} {self.lit(t, c)}"

    def lit_value(self, table: str, col: Col):
        values = self.samples.get((table, col.name)) or ()
        return self.value(values) if values else None

    def cmp_op(self) -> str:
        return self.pick(["=", "<>", "<", "<=", ">", ">="])

    def pred(self, scope: Scope, depth: int = 0, subqueries: bool = True) -> str:
        roll = self.r.randrange(12)
        if depth < 3 and roll <= 2:
            left = self.pred(scope, depth + 1, subqueries)
            right = self.pred(scope, depth + 1, subqueries)
            return f"({left} {self.pick(['AND', 'OR'])} {right})"
        if depth < 3 and roll == 3:
            return f"NOT ({self.pred(scope, depth + 1, subqueries)})"
        if depth < 3 and roll == 4:
            return f"({self.pred(scope, depth + 1, subqueries)}) IS {self.pick(['NULL', 'NOT NULL'])}"
        if subqueries and roll in (5, 6):
            return self.subquery_pred(scope)
        return self.comparison(scope, depth)

    # ---- subqueries ---------------------------------------------------------------------------------
    def subquery_pred(self, scope: Scope) -> str:
        table = self.pick(["fb", "fc", "fe", "fc"])
        s = self.alias()
        inner = Scope([(s, table)])
        key = self.pick([n for n, ts in JOIN_KEYS.items() if table in ts
                         and any(t in ts for _, t in scope.tables) and n != "f"])
        outer = self.pick([(a, t) for a, t in scope.tables if t in JOIN_KEYS[key]])
        where = self.pred(inner, 2, subqueries=False) if self.chance(0.6) else None
        correlated = self.chance(0.5)
        corr = f"{s}.{key} = {outer[0]}.{key}"
        conds = [x for x in (corr if correlated else None, where) if x]
        wsql = f" WHERE {' AND '.join(conds)}" if conds else ""
        form = self.r.randrange(4)
        if form == 0:
            neg = "NOT " if self.chance(0.5) else ""
            return f"{outer[0]}.{key} {neg}IN (SELECT {s}.{key} FROM {table} {s}{wsql})"
        if form in (0, 1):
            neg = "NOT " if self.chance(0.5) else ""
            return f"{neg}EXISTS (SELECT 1 FROM {table} {s}{wsql})"
        num = [c for c in TABLES[table] if c.kind in (INT, DEC)]
        agg = self.pick(["min", "max", "sum", "count", "avg"])
        c = self.pick(num)
        outer_num = self.pick(self.cols(scope, (INT, DEC)))
        return (f"{outer_num[0]}.{outer_num[2].name} {self.cmp_op()} "
                f"(SELECT {agg}({s}.{c.name}) FROM {table} {s}{wsql})")

    def scalar_subquery(self, scope: Scope) -> E:
        table = self.pick(["fb", "fc", "fe"])
        s = self.alias()
        key = "k"
        outer = self.pick([(a, t) for a, t in scope.tables if t in JOIN_KEYS[key]] or [None])
        conds = []
        if outer is not None and self.chance(0.7):
            conds.append(f"{s}.{key} = {outer[0]}.{key}")
        if self.chance(0.5):
            conds.append(self.pred(Scope([(s, table)]), 2, subqueries=False))
        c = self.pick([c for c in TABLES[table] if c.kind in (INT, DEC, STR)])
        agg = self.pick(["min", "max", "count"] + (["sum"] if c.kind != STR else []))
        wsql = f" WHERE {' AND '.join(conds)}" if conds else ""
        return E(f"(SELECT {agg}({s}.{c.name}) FROM {table} {s}{wsql})", INT if agg == "count" else c.kind)

    # ---- FROM -----------------------------------------------------------------------------------------
    def from_clause(self) -> tuple[Scope, str]:
        root = self.pick(["fa", "fa", "fb", "fc", "fe"])
        scope = Scope([("t0", root)])
        sql = f"{root} t0"
        for i in range(1, self.pick([0, 0, 1, 1, 2]) + 1):
            table = self.pick(["fa", "fb", "fc", "fe"] if i == 1 else ["fc", "fb", "fe"])
            alias = f"t{i}"
            keys = [n for n, ts in JOIN_KEYS.items() if table in ts
                    and any(t in ts for _, t in scope.tables)]
            kind = self.pick(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "INNER JOIN", "LEFT OUTER JOIN",
                              "FULL OUTER JOIN", "CROSS JOIN"])
            if kind == "CROSS JOIN" and (table != "fc" or len(scope.tables) > 1):
                kind = "JOIN"
            new = Scope(scope.tables + [(alias, table)])
            if kind == "CROSS JOIN":
                sql += f" CROSS JOIN {table} {alias}"
            else:
                key = self.pick(keys)
                prev = self.pick([a for a, t in scope.tables if t in JOIN_KEYS[key]])
                on = f"{prev}.{key} = {alias}.{key}"
                if key == "k" and self.chance(0.2):  # an expression key, or an inequality join
                    on = self.pick([f"{prev}.k + 1 = {alias}.k", f"{prev}.k = {alias}.k * 2",
                                    f"{prev}.k < {alias}.k", f"{prev}.k <> {alias}.k AND {prev}.k > 5"])
                if self.chance(0.25):
                    on += f" AND {self.pred(new, 2, subqueries=False)}"
                elif self.chance(0.15):  # a second key column
                    second = self.pick([n for n in keys if n != key] or [key])
                    if any(a == prev and t in JOIN_KEYS[second] for a, t in scope.tables):
                        on += f" AND {prev}.{second} = {alias}.{second}"
                sql += f" {kind} {table} {alias} ON {on}"
            scope = new
        return scope, sql

    # ---- whole queries --------------------------------------------------------------------------------
    def aggregate(self, scope: Scope) -> E:
        form = self.r.randrange(7)
        if form == 0:
            return E("count(*)", INT)
        if form == 1:
            e = self.expr(scope)
            return E(f"count({'DISTINCT ' if self.chance(0.4) else ''}{e.sql})", INT)
        if form in (2, 3):
            e = self.expr(scope, (INT, BIG, DEC, DBL))
            if e is None:
                return E("count(*)", INT)
            # a double sum meets +inf and -inf in some groups: NaN
            tags = e.tags | ({"nan"} if e.kind == DBL else set())
            distinct = "DISTINCT " if self.chance(0.15) else ""
            if form == 2:
                return E(f"sum({distinct}{e.sql})", e.kind if e.kind != BIG else INT, frozenset(tags))
            return E(f"avg({distinct}{e.sql})", DBL, frozenset(tags | {"avg"}))
        e = self.expr(scope, (INT, BIG, DEC, DBL, STR, DATE, TSTAMP))
        return E(f"{self.pick(['min', 'max'])}({e.sql})", e.kind, e.tags)

    def window_item(self, scope: Scope) -> E | None:
        """A window function whose value does not depend on the order of tied rows, over the
        NULL/NaN-heavy columns: partitions and peers of NULL, NaN and -0.0 keys; or one ordered
        totally (the table's unique id last), with ROWS frames at partition edges and offsets."""
        part = self.expr(scope, (INT, DEC, DBL, STR, DATE, BOOL))
        order = self.pick(self.cols(scope, (INT, BIG, DEC, DBL, STR, DATE, TSTAMP)))
        if part is None or order is None:
            return None
        o = (f"{order[0]}.{order[2].name}{self.pick(['', ' ASC', ' DESC'])}"
             f"{self.pick(['', ' NULLS FIRST', ' NULLS LAST'])}")
        over = f"OVER (PARTITION BY {part.sql} ORDER BY {o}"
        alias, table = scope.tables[0]
        if any(c.name == "id" for c in TABLES[table]) and self.chance(0.5):
            return self.ordered_window_item(scope, f"{over}, {alias}.id{self.pick(['', ' DESC'])}")
        form = self.r.randrange(6)
        if form == 5:  # bool_and/bool_or, count(DISTINCT), median/quantiles (diff_fuzzfuncs)
            from diff_fuzzfuncs import surface_window_item

            return surface_window_item(self, scope, part)
        if form == 0:
            return E(f"count(*) OVER (PARTITION BY {part.sql})", INT)
        if form == 1:
            return E(f"{self.pick(['rank', 'dense_rank'])}() {over})", INT)
        if form == 2:
            return E(f"{self.pick(['percent_rank', 'cume_dist'])}() {over})", DBL)
        x = self.expr(scope, (INT, BIG, DEC) if form == 3 else (INT, BIG, DEC, DBL, STR, DATE))
        if x is None:
            return None
        if form == 3:
            bounds = self.pick(["UNBOUNDED PRECEDING AND CURRENT ROW", "CURRENT ROW AND UNBOUNDED FOLLOWING"])
            op = self.pick(["sum", "count"])
            return E(f"{op}({x.sql}) {over} RANGE BETWEEN {bounds})", x.kind if op == "sum" else INT,
                     x.tags)
        return E(f"{self.pick(['min', 'max'])}({x.sql}) OVER (PARTITION BY {part.sql})", x.kind, x.tags)

    def ordered_window_item(self, scope: Scope, over: str) -> E | None:
        """A window function over a total order (``over`` ends with a unique key, no parenthesis):
        row_number/ntile, lag/lead with offsets, first/last/nth_value and aggregates (mode, count(DISTINCT),
        quantile_disc too) over ROWS frames (n PRECEDING/FOLLOWING, the partition's edges), a quarter of
        them with an EXCLUDE."""
        form = self.r.randrange(4)
        if form == 0:
            if self.chance(0.5):
                return E(f"row_number() {over})", INT)
            return E(f"ntile({self.v.randint(1, 9)}) {over})", INT)
        x = self.expr(scope, (INT, BIG, DEC, DBL, STR, DATE))
        if x is None:
            return None
        if form == 1:
            return E(f"{self.pick(['lag', 'lead'])}({x.sql}, {self.v.randint(0, 4)}) {over})", x.kind, x.tags)
        a, b = self.v.randint(0, 3), self.v.randint(0, 3)
        frame = self.pick([f"{a} PRECEDING AND {b} FOLLOWING", f"{a} PRECEDING AND CURRENT ROW",
                           f"CURRENT ROW AND {b} FOLLOWING", f"UNBOUNDED PRECEDING AND {b} FOLLOWING",
                           f"{a} PRECEDING AND UNBOUNDED FOLLOWING", f"{a + b + 1} PRECEDING AND {a} PRECEDING",
                           f"{b} FOLLOWING AND {a + b + 1} FOLLOWING"])
        if self.chance(0.25):  # over a total order GROUP is the row itself and TIES excludes nothing
            frame += " EXCLUDE " + self.pick(["CURRENT ROW", "GROUP", "TIES", "NO OTHERS"])
        if form == 2:
            f = self.pick(["first_value", "last_value", f"nth_value|{self.v.randint(1, 3)}"])
            call = f"{x.sql}" if "|" not in f else f"{x.sql}, {f.split('|')[1]}"
            return E(f"{f.split('|')[0]}({call}) {over} ROWS BETWEEN {frame})", x.kind, x.tags)
        if x.kind in (STR, DATE):
            op = self.pick(["min", "max", "count", "mode", "count_distinct", "quantile_disc"])
        else:
            op = self.pick(["min", "max", "count", "sum", "mode", "count_distinct", "quantile_disc"]
                           + (["avg"] if "big" not in x.tags else []))
        kind = INT if op in ("count", "count_distinct") else DBL if op == "avg" else x.kind
        call = {"count_distinct": f"count(DISTINCT {x.sql})", "quantile_disc": f"quantile_disc({x.sql}, 0.3)"}.get(
            op, f"{op}({x.sql})")
        return E(f"{call} {over} ROWS BETWEEN {frame})", kind, x.tags)

    def select(self) -> tuple[str, list[E], Scope]:
        scope, from_sql = self.from_clause()
        where = f" WHERE {self.pred(scope)}" if self.chance(0.7) else ""
        tail, distinct = "", ""
        if self.chance(0.4):
            keys = [e for e in (self.expr(scope, (INT, BIG, DEC, DBL, STR, DATE, TSTAMP, BOOL))
                                for _ in range(self.r.randint(0, 2))) if e is not None]
            items = keys + [self.aggregate(scope) for _ in range(self.r.randint(1, 3))]
            if keys:
                tail = " GROUP BY " + ", ".join(k.sql for k in keys)
            if self.chance(0.35):
                agg = self.aggregate(scope)
                if agg.kind in (INT, DEC) and "avg" not in agg.tags:
                    tail += f" HAVING {agg.sql} {self.cmp_op()} {self.v.randint(-5, 40)}"
                else:
                    tail += f" HAVING count(*) {self.cmp_op()} {self.v.randint(0, 6)}"
        else:
            items = []
            for _ in range(self.r.randint(1, 4)):
                # one table only: its partitions stay within the window operator's in-memory floor
                # (1,024 rows), which a configuration of 16KB needs (a larger one is OutOfMemoryError)
                if len(scope.tables) == 1 and self.chance(0.06):
                    items.append(self.window_item(scope) or E("count(*) OVER ()", INT))
                elif self.chance(0.08):
                    items.append(self.scalar_subquery(scope))
                elif self.chance(0.06):
                    items.append(E(f"CASE WHEN {self.subquery_pred(scope)} THEN 1 ELSE 0 END", INT))
                elif self.chance(0.06):
                    items.append(E(f"({self.pred(scope, 1, subqueries=False)})", BOOL))
                else:
                    items.append(self.expr(scope))
            if self.chance(0.25):
                distinct = "DISTINCT "
        select = ", ".join(f"{e.sql} AS c{i}" for i, e in enumerate(items))
        return f"SELECT {distinct}{select} FROM {from_sql}{where}{tail}", items, scope

    def wrap(self, inner: str, items: list[E]) -> tuple[str, list[E]]:
        """The block as a derived table or CTE, filtered or grouped again."""
        source = self.pick([(f"({inner}) AS w", ""), ("w", f"WITH w AS ({inner}) ")])
        keys = [i for i, e in enumerate(items) if "avg" not in e.tags]
        if keys and self.chance(0.5):
            key = self.pick(keys)
            return (f"{source[1]}SELECT w.c{key} AS c0, count(*) AS c1 FROM {source[0]} GROUP BY w.c{key}",
                    [items[key], E("count(*)", INT)])
        cond = f" WHERE w.c0 IS {self.pick(['NULL', 'NOT NULL'])}" if self.chance(0.5) else ""
        select = ", ".join(f"w.c{i} AS c{i}" for i in range(len(items)))
        return f"{source[1]}SELECT {select} FROM {source[0]}{cond}", items

    def query(self) -> Query:
        sql, items, _ = self.select()
        if self.chance(0.1):
            sql, items = self.wrap(sql, items)
        tols = [1e-6 if "avg" in e.tags or e.kind == DBL else 1e-9 for e in items]
        ordering: Ordering = None
        if self.chance(0.45):
            parts = []
            for i in self.r.sample(range(len(items)), len(items)):
                parts.append(f"{self.pick([f'c{i}', str(i + 1)])}{self.pick(['', ' ASC', ' DESC'])}"
                             f"{self.pick(['', ' NULLS FIRST', ' NULLS LAST'])}")
            sql += " ORDER BY " + ", ".join(parts)
            # avg: near-equal doubles may order differently between the engines
            if not any("avg" in e.tags for e in items):
                ordering = TOTAL
                if self.chance(0.6):
                    sql += f" LIMIT {self.v.randint(0, 25)}"
                    if self.chance(0.3):
                        sql += f" OFFSET {self.v.randint(0, 10)}"
        return Query(sql, ordering, tols)
