"""The shipped query texts and what the harness reads from them."""

from __future__ import annotations

import duckdb
import pytest

from hetdb.bench.compare import AGGREGATE_FLOAT_REL_TOL, DEFAULT_FLOAT_REL_TOL
from hetdb.bench.suites import (
    SUITES,
    float_tolerances,
    get_suite,
    load_queries,
    order_spec,
    referenced_columns,
)
from hetdb.errors import InputError


def test_every_suite_ships_its_queries():
    counts = {name: len(load_queries(name)) for name in SUITES}
    assert counts == {"ssb": 13, "tpch": 22, "scan": 3, "window": 7}
    assert [q.name for q in load_queries("ssb")][:3] == ["q1.1", "q1.2", "q1.3"]
    assert [q.name for q in load_queries("tpch")][-1] == "q22"


def test_tpch_texts_carry_the_note():
    for q in load_queries("tpch"):
        assert q.sql.startswith("-- derived from TPC-H, not comparable to published TPC-H results"), q.name


def test_subset_and_unknown_names():
    assert [q.name for q in load_queries("ssb", ["q2.1", "Q1.1"])] == ["q1.1", "q2.1"]
    with pytest.raises(InputError, match="q9.9"):
        load_queries("ssb", ["q9.9"])
    with pytest.raises(InputError, match="unknown benchmark suite"):
        get_suite("tpcds")


def test_scan_queries_run_on_duckdb():
    con = duckdb.connect()
    con.execute("create table t as select i::int as id, (i * 7919 % 1000)::double as x, "
                "(i * 104729 % 1000)::double as y, (i % 997)::double as z, md5(i::varchar) as memo "
                "from range(1, 20001) r(i)")
    rows = [con.sql(q.sql).to_arrow_table().num_rows for q in load_queries("scan")]
    assert len(rows) == 3 and rows[0] > 0


def test_referenced_columns():
    schema = {"lineorder": ["lo_orderdate", "lo_quantity", "lo_extendedprice", "lo_discount", "lo_tax"],
              "date": ["d_datekey", "d_year", "d_month"], "part": ["p_partkey"]}
    q11 = load_queries("ssb", ["q1.1"])[0].sql
    assert referenced_columns(q11, schema) == {
        "date": ["d_datekey", "d_year"],
        "lineorder": ["lo_orderdate", "lo_quantity", "lo_extendedprice", "lo_discount"]}
    star = referenced_columns("select * from t where x > 1", {"t": ["id", "x", "memo"]})
    assert star == {"t": ["id", "x", "memo"]}


def test_order_spec_and_tolerances():
    q31 = load_queries("ssb", ["q3.1"])[0].sql  # order by d_year asc, revenue desc
    assert order_spec(q31) == (True, [(2, False), (3, True)])
    assert order_spec("select a from t") == (False, None)
    assert order_spec("select a, b from t order by 2 desc") == (True, [(1, True)])
    assert order_spec("select a from t order by b") == (True, None)  # not an output: row by row
    assert float_tolerances("select a, sum(b) / 2, avg(c) from t group by a", 3) == [
        DEFAULT_FLOAT_REL_TOL, AGGREGATE_FLOAT_REL_TOL, AGGREGATE_FLOAT_REL_TOL]
    assert float_tolerances("select * from t", 5) == [DEFAULT_FLOAT_REL_TOL] * 5
