"""Long AND/OR chains and deeply nested expressions: an answer equal to DuckDB's (or, past what DuckDB
accepts, to the value computed here), or a typed UnsupportedError — never RecursionError or a crash."""

from __future__ import annotations

import sys

import duckdb
import pyarrow as pa
import pytest

from hetdb import deepstack
from hetdb import types as T
from hetdb.connection import Connection
from hetdb.errors import UnsupportedError
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


@pytest.mark.parametrize("n", [5_000, pytest.param(20_000, marks=pytest.mark.slow)])
def test_deep_parentheses(engines, n):
    # DuckDB refuses expressions deeper than 1,000 levels (max_expression_depth); hetdb answers.
    con, _ = engines
    present = [v for v in VALUES if v is not None]
    assert con.sql("SELECT " + "1+(" * n + "1" + ")" * n).fetchall() == [(n + 1,)]
    query = "SELECT count(*) FROM t WHERE " + "(" * n + "a > 5" + ")" * n
    assert con.sql(query).fetchall() == [(len([v for v in present if v > 5]),)]
    assert "a" in con.explain(query)


@pytest.mark.parametrize("n", [2_000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_deep_column_expressions(engines, n):
    con, _ = engines
    present = [v for v in VALUES if v is not None]
    got = con.sql("SELECT " + "a+(" * n + "a" + ")" * n + " AS s FROM t ORDER BY s DESC NULLS LAST LIMIT 1")
    assert got.fetchall() == [(max(present) * (n + 1),)]
    assert con.sql("SELECT count(*) FROM t WHERE " + "NOT " * (n + 1) + "a > 5").fetchall() == [
        (len([v for v in present if v <= 5]),)]
    case = "SELECT sum(" + "CASE WHEN a > 3 THEN " * n + "1" + " ELSE 0 END" * n + ") FROM t"
    assert con.sql(case).fetchall() == [(len([v for v in present if v > 3]),)]


def test_nesting_past_the_deep_stack_is_a_typed_error(engines, monkeypatch):
    # a lower limit for the deep thread reaches the refusal quickly (100,000 levels do with the real one)
    monkeypatch.setattr(deepstack, "DEEP_RECURSION_LIMIT", 20_000)
    con, _ = engines
    n = 5_000
    with pytest.raises(UnsupportedError, match="nested too deeply"):
        con.sql("SELECT count(*) FROM t WHERE " + "(" * n + "a > 7" + ")" * n)
    assert con.sql("SELECT count(*) FROM t WHERE a > 90").fetchall() == [(8,)]
