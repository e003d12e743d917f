"""Small helpers shared by the measurement scripts in this folder."""

from __future__ import annotations

import os


def dir_bytes(path: str) -> int:
    """Bytes of every file under ``path`` (a database's size on disk)."""
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def parse_options(pairs: list[str]) -> dict:
    """``name=value`` connection options (``hetdb bench --set``'s parser: int/bool/None values)."""
    from hetdb.bench.cli import parse_settings

    return parse_settings(pairs)


def add_suite_arguments(ap) -> None:
    """The arguments the GPU-budget scripts share: database, suite, queries, the GPU memory limit as a
    share of the database's size, repetitions."""
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q2.1,q3.1,q4.1")
    ap.add_argument("--limit-fraction", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)


SUITE_TABLES = {"ssb": ["lineorder", "date", "part", "supplier", "customer"],
                "tpch": ["lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region"]}


def load_into_duckdb(con, duck, suite: str) -> None:
    """Copy every table of ``suite`` from the hetdb connection ``con`` into the DuckDB connection ``duck``."""
    for t in SUITE_TABLES[suite]:
        duck.register("incoming", con.sql(f'SELECT * FROM "{t}"').arrow())
        duck.execute(f'CREATE TABLE "{t}" AS SELECT * FROM incoming')
        duck.unregister("incoming")
