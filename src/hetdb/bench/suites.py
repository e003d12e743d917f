"""The benchmark suites that ship with hetdb (ssb, tpch, scan, window) and what the harness learns from a
query's text with sqlglot: the base-table columns it references, whether its answer is ordered (and
by which output columns), and which output columns are float aggregates (looser tolerance)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import sqlglot
from sqlglot import exp

from hetdb.errors import InputError


@dataclass(frozen=True)
class Suite:
    name: str
    tables: tuple[str, ...]   # the tables its generator makes (all must exist in the database)
    generator: str            # module with generate(db, sf, progress=...)
    description: str
    dataset: str = ""         # the suite whose data set it reads (default: its own)

    @property
    def data_name(self) -> str:
        return self.dataset or self.name


SUITES: dict[str, Suite] = {
    "ssb": Suite("ssb", ("lineorder", "customer", "supplier", "part", "date"), "hetdb.datagen.ssb",
                 "Star Schema Benchmark, 13 queries (O'Neil et al., rev. 3)"),
    "tpch": Suite("tpch", ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation",
                           "region"), "hetdb.datagen.tpch",
                  "22 queries derived from TPC-H, not comparable to published TPC-H results"),
    "scan": Suite("scan", ("t",), "hetdb.datagen.scan",
                  "wide-table scans with selective WHERE clauses (PG-Strom / NVMe-Strom workload)"),
    "window": Suite("window", ("orders", "lineitem"), "hetdb.datagen.tpch",
                    "window-heavy workload over TPC-H orders and lineitem: top-3 per customer, ranks, "
                    "running sums, lag/lead, moving averages, ntile (reads the tpch data set)",
                    dataset="tpch"),
}


@dataclass(frozen=True)
class Query:
    name: str   # e.g. "q1.1", "q07", "s2"
    sql: str
    path: str   # where the text came from (inside the package)


def get_suite(name: str) -> Suite:
    """The suite called ``name``; InputError naming the known suites otherwise."""
    try:
        return SUITES[name]
    except KeyError:
        raise InputError(f"unknown benchmark suite {name!r}: choose one of {', '.join(SUITES)}") from None


def load_queries(suite: str, only: list[str] | None = None) -> list[Query]:
    """The suite's queries in file-name order; ``only`` keeps those named (e.g. ["q1.1", "q2.1"])."""
    get_suite(suite)
    folder = resources.files("hetdb.bench") / "queries" / suite
    queries = [Query(f.name[:-4], f.read_text(encoding="utf-8"), f"hetdb/bench/queries/{suite}/{f.name}")
               for f in sorted(folder.iterdir(), key=lambda f: _natural_key(f.name))
               if f.name.endswith(".sql")]
    if only:
        wanted = {q.lower() for q in only}
        unknown = wanted - {q.name for q in queries}
        if unknown:
            raise InputError(f"unknown {suite} queries: {', '.join(sorted(unknown))}; known: "
                             f"{', '.join(q.name for q in queries)}")
        queries = [q for q in queries if q.name in wanted]
    return queries


def _natural_key(name: str) -> list:
    import re

    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _parse(sql: str) -> exp.Expression:
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError as e:
        raise InputError(f"cannot parse benchmark query: {e}") from None
    return tree


def referenced_columns(sql: str, schema: dict[str, list[str]]) -> dict[str, list[str]]:
    """Base-table columns the query reads: {table: [columns]} for tables in ``schema`` ({table: columns}).

    A column counts for every referenced table that has a column of that name (the suites' column
    names are unique across tables); ``*`` counts every column of the tables it ranges over.
    """
    tree = _parse(sql)
    cte_names = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    tables = {t.name for t in tree.find_all(exp.Table) if t.name in schema and t.name not in cte_names}
    names = {c.name for c in tree.find_all(exp.Column)}
    star = any(isinstance(e, exp.Star) for s in tree.find_all(exp.Select) for e in s.expressions)
    out: dict[str, list[str]] = {}
    for table in sorted(tables):
        cols = list(schema[table]) if star else [c for c in schema[table] if c in names]
        if cols:
            out[table] = cols
    return out


def order_spec(sql: str) -> tuple[bool, list[tuple[int, bool]] | None]:
    """(ordered, keys): whether the outermost query has ORDER BY, and its keys as (output position,
    descending) when every key names an output column (else None: compare row by row)."""
    tree = _parse(sql)
    order = tree.args.get("order")
    if order is None or not isinstance(tree, exp.Select):
        return (order is not None), None
    outputs = tree.expressions
    keys: list[tuple[int, bool]] = []
    for ordered in order.expressions:
        pos = _output_position(ordered.this, outputs)
        if pos is None:
            return True, None
        keys.append((pos, bool(ordered.args.get("desc"))))
    return True, keys


def _output_position(key: exp.Expression, outputs: list[exp.Expression]) -> int | None:
    if isinstance(key, exp.Literal) and key.is_int:
        pos = int(key.name) - 1
        return pos if 0 <= pos < len(outputs) else None
    if isinstance(key, exp.Column) and not key.table:
        for i, out in enumerate(outputs):
            if out.alias_or_name == key.name:
                return i
    text = key.sql(dialect="duckdb")
    for i, out in enumerate(outputs):
        inner = out.this if isinstance(out, exp.Alias) else out
        if inner.sql(dialect="duckdb") == text:
            return i
    return None


def float_tolerances(sql: str, num_columns: int) -> list[float]:
    """Relative float tolerance per output column: looser for SUM/AVG outputs (summation order)."""
    # imported here: numpy and pyarrow are not needed to build the `hetdb` parser
    from hetdb.bench.compare import AGGREGATE_FLOAT_REL_TOL, DEFAULT_FLOAT_REL_TOL

    tree = _parse(sql)
    outputs = tree.expressions if isinstance(tree, exp.Select) else []
    if len(outputs) != num_columns or any(isinstance(o, exp.Star) for o in outputs):
        return [DEFAULT_FLOAT_REL_TOL] * num_columns
    return [AGGREGATE_FLOAT_REL_TOL if o.find(exp.Sum, exp.Avg) is not None else DEFAULT_FLOAT_REL_TOL
            for o in outputs]
