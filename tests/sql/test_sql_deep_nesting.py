"""Long AND/OR chains and deeply nested expressions: an answer equal to DuckDB's (for chains DuckDB
cannot run, the value computed here), or a typed error where DuckDB refuses (expressions nested past
its max_expression_depth of 1000) — never RecursionError or a crash."""

from __future__ import annotations

import sys

import duckdb
import pyarrow as pa
import pytest

from hetdb import deepstack
from hetdb import types as T
from hetdb.connection import Connection
from hetdb.errors import SqlError, UnsupportedError
from hetdb.storage import Database
from hetdb.storage.format import ColumnSpec

VALUES = [None if i % 7 == 3 else i for i in range(100)]


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("deep") / "db")
    data = pa.table({"a": pa.array(VALUES, pa.int64())})
    with Database.open(path, create=True).create_table("t", [ColumnSpec("a", T.INT64, True)]) as w:
        w.append_arrow(data)
    duck = duckdb.connect()
    duck.register("src", data)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    con = Connection(path, device="cpu")
    yield con, duck
    con.close()


def and_chain(n: int) -> tuple[str, list[int]]:
    kept = [v for v in VALUES if v is not None and all(v != i * 3 for i in range(min(n, 40)))]
    return "SELECT count(*), sum(a) FROM t WHERE " + " AND ".join(f"a <> {i * 3}" for i in range(n)), kept


def or_chain(n: int) -> tuple[str, list[int]]:
    kept = [v for v in VALUES if v is not None and any(v == i * 3 for i in range(min(n, 40)))]
    return "SELECT count(*), sum(a) FROM t WHERE " + " OR ".join(f"a = {i * 3}" for i in range(n)), kept


def mixed_chain(n: int) -> tuple[str, list[int]]:
    kept = [v for v in VALUES if v is not None and any(i % 90 < v < i % 90 + 5 for i in range(min(n, 90)))]
    return "SELECT count(*), sum(a) FROM t WHERE " + " OR ".join(
        f"(a > {i % 90} AND a < {i % 90 + 5})" for i in range(n)), kept


CASES = [(make, n) for n in (300, 800) for make in (and_chain, or_chain, mixed_chain)] + [
    (and_chain, 10_000), pytest.param(or_chain, 10_000, marks=pytest.mark.slow),
    pytest.param(mixed_chain, 10_000, marks=pytest.mark.slow)]


@pytest.mark.parametrize(("make", "n"), CASES)
def test_long_boolean_chain(engines, make, n):
    """DuckDB is the reference up to 800 terms; at 10,000 it needs >20 GB (and crashes at 50,000), so
    there the expected rows are computed here (the chains repeat after 40/90 terms)."""
    con, duck = engines
    limit = sys.getrecursionlimit()
    query, kept = make(n)
    got = con.sql(query).fetchall()
    assert got == [(len(kept), sum(kept) if kept else None)] and kept
    if n <= 800:
        assert got == duck.execute(query).fetchall()
    assert sys.getrecursionlimit() == limit  # the deep-stack retry restores the interpreter's limit


@pytest.mark.slow
def test_fifty_thousand_term_chains(engines):
    con, _ = engines
    for make in (and_chain, or_chain):
        query, kept = make(50_000)
        assert con.sql(query).fetchall() == [(len(kept), sum(kept))] and kept


def test_nesting_up_to_duckdbs_limit_matches_duckdb(engines):
    """Expressions nested just under DuckDB's max_expression_depth (1000) overflowed Python's stack
    at 200 levels; they now give DuckDB's answers."""
    con, duck = engines
    queries = [
        "SELECT " + "1+(" * 495 + "1" + ")" * 495,
        "SELECT count(*) FROM t WHERE " + "(" * 990 + "a > 5" + ")" * 990,
        "SELECT max(" + "a+(" * 495 + "a" + ")" * 495 + ") FROM t",
        "SELECT count(*) FROM t WHERE " + "NOT " * 989 + "a > 5",
        "SELECT sum(" + "CASE WHEN a > 3 THEN " * 900 + "a" + " ELSE 0 END" * 900 + ") FROM t",
        "SELECT count(*) FROM t WHERE " + " AND ".join(f"(a <> {i} OR a > 50)" for i in range(300)),
    ]
    for query in queries:
        want = duck.execute(query).fetchall()
        assert con.sql(query).fetchall() == want and want[0][0] is not None


@pytest.mark.parametrize("n", [1_001, 5_000, pytest.param(20_000, marks=pytest.mark.slow)])
def test_nesting_past_duckdbs_limit_is_refused_like_duckdb(engines, n):
    con, duck = engines
    queries = ["SELECT " + "(" * n + "1" + ")" * n,
               "SELECT count(*) FROM t WHERE " + "NOT " * n + "a > 5",
               "SELECT max(" + "a+(" * (n // 2 + 1) + "a" + ")" * (n // 2 + 1) + ") FROM t"]
    for query in queries:
        with pytest.raises(duckdb.ParserException, match="Max expression depth"):
            duck.execute(query)
        with pytest.raises(SqlError, match="nested more than 1000 levels"):
            con.sql(query)
        with pytest.raises(SqlError, match="nested more than 1000 levels"):
            con.explain(query)


def test_nesting_past_the_deep_stack_is_a_typed_error(engines, monkeypatch):
    # a lower limit for the deep thread reaches the refusal quickly (100,000 levels do with the real one)
    monkeypatch.setattr(deepstack, "DEEP_RECURSION_LIMIT", 20_000)
    con, _ = engines
    n = 5_000
    with pytest.raises(UnsupportedError, match="nested too deeply"):
        con.sql("SELECT count(*) FROM t WHERE " + "(" * n + "a > 7" + ")" * n)
    assert con.sql("SELECT count(*) FROM t WHERE a > 90").fetchall() == [(8,)]
