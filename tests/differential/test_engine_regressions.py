"""Minimal differential cases for engine bugs the suites found (each one query vs DuckDB)."""

from __future__ import annotations

import pytest
from diff_check import TOTAL, run_differential

# (data set fixture, SQL, ordering): the smallest queries reproducing each bug found so far
CASES = [
    # cardinality sampling joins pages of different row counts (plain-string column over several
    # row groups): ValueError "column d_date#19 has 1000 rows, batch has 2557"
    ("ssb_small", "select count(*) from lineorder, date where lo_orderdate = d_datekey and d_date like 'J%'",
     TOTAL),
    ("nulls_db", "select count(*) from nulls t0, nulls2 t1 where t0.k = t1.k and t0.s_hi like 'v1%'", TOTAL),
    # TopN with OFFSET past the end slices a plain-string column out of range: IndexError
    ("tpch_small", "select min(o_comment) from orders group by o_orderstatus order by 1 limit 25 offset 8",
     TOTAL),
]


@pytest.mark.parametrize("fixture,sql,ordering", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_regression_case(fixture, sql, ordering, request, hetdb_runner) -> None:
    data = request.getfixturevalue(fixture)
    outcome = run_differential("regression", sql, hetdb_runner(data.path), data.reference(sql), ordering)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared
