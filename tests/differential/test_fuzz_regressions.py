"""Minimal reproductions of the engine bugs the fuzz campaigns found (outside rel-sem's issue-15 list),
each against DuckDB on the fuzz tables, or for refusals, the typed error hetdb must raise."""

from __future__ import annotations

import pytest
from diff_check import TOTAL, run_differential

from hetdb.errors import UnsupportedError

# (SQL, ordering): each was a wrong answer or a crash
CASES: list[tuple[str, object]] = [
]

# (SQL, error type): refusals that must name the construct
REFUSALS = [
    # the subquery inside an aggregate argument was reported as a nested aggregate (SqlError)
    ("SELECT sum(CASE WHEN v = (SELECT count(x) FROM fc) THEN 1 ELSE 0 END) FROM fb", UnsupportedError),
]


@pytest.mark.parametrize("sql,ordering", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_fuzz_regression(sql, ordering, fuzz_db, hetdb_runner) -> None:
    outcome = run_differential("fuzz regression", sql, hetdb_runner(fuzz_db.path), fuzz_db.reference(sql),
                               ordering)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared


@pytest.mark.parametrize("sql,error", REFUSALS, ids=[f"refusal{i}" for i in range(len(REFUSALS))])
def test_fuzz_refusal(sql, error, fuzz_db, hetdb_runner) -> None:
    fuzz_db.reference(sql)  # DuckDB answers it: hetdb refuses what it does not support, by name
    with pytest.raises(error, match="subqueries inside aggregate"):
        hetdb_runner(fuzz_db.path)(sql)


def test_fuzz_regression_cases_are_ordered_queries() -> None:
    assert all(ordering in (TOTAL, None) for _, ordering in CASES)
