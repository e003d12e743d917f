"""Outer joins whose NULL-extended rows a filter above rejects (``outer_join_simplification``), against
DuckDB on the fuzz tables, on each device.

Found by the issue-15 campaign (seed 24111902, case 25002, a TLP partition): hetdb kept
``fc t0 FULL JOIN fc t1`` a full join under ``... JOIN fe t2 ON t0.k = t2.k WHERE t1.x BETWEEN -10
AND 0 AND t0.k // t1.x <= 0``, so the join could not be reordered and the division ran on the full
join's rows before the join with the empty ``fe``: "Division by zero". DuckDB (like hetdb now) makes
the full join an inner one and joins the empty table first, so the division never sees a row.
"""

from __future__ import annotations

import pytest
from diff_check import run_differential

from hetdb.config import Options
from hetdb.plan.logical import Join
from hetdb.plan.optimizer import optimize
from hetdb.sql import bind
from hetdb.storage import Database

EMPTY_JOIN_DIVISION = (
    "SELECT sum(t1.x), count(t2.f) FROM fc t0 FULL OUTER JOIN fc t1 ON t0.s = t1.s JOIN fe t2 ON t0.k = t2.k "
    "WHERE (t1.x BETWEEN (-10) AND 0 AND t2.dc < 0.5) AND ((t0.k // t1.x) <= 0)")

# (SQL, join kinds the optimized plan must hold): answers that the simplification must keep; the
# last ones reject no NULL (IS NULL, COALESCE, OR with a side that accepts NULL): nothing changes
CASES: list[tuple[str, list[str]]] = [
    (EMPTY_JOIN_DIVISION, ["inner", "inner"]),
    ("SELECT t0.id, t1.k, t1.x FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k WHERE t1.x > 15", ["inner"]),
    ("SELECT t0.id, t1.x FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k WHERE t1.x + t0.i > 0 OR t1.x < 30",
     ["inner"]),
    ("SELECT t0.k, t1.k, t1.v FROM fc t0 FULL JOIN fb t1 ON t0.k = t1.k WHERE t0.x >= 0", ["left"]),
    ("SELECT t0.k, t1.id FROM fc t0 FULL JOIN fb t1 ON t0.k = t1.k WHERE t1.v < 100", ["right"]),
    ("SELECT t0.k, t1.id FROM fc t0 RIGHT JOIN fb t1 ON t0.s = t1.s WHERE NOT (t0.x = 10)", ["inner"]),
    ("SELECT t0.id, t1.id, t2.x FROM fa t0 LEFT JOIN fb t1 ON t0.k = t1.k JOIN fc t2 ON t1.v // 100 = t2.x",
     ["inner", "inner"]),
    ("SELECT w.id, w.x FROM (SELECT t0.id, t1.x + 1 AS x FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k) w "
     "WHERE w.x IS NOT NULL", ["inner"]),
    ("SELECT t0.id, t1.x FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k WHERE t1.x IS NULL", ["left"]),
    ("SELECT t0.id, t1.x FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k WHERE COALESCE(t1.x, 5) = 5", ["left"]),
    ("SELECT t0.id, t1.x FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k WHERE t1.x > 15 OR t0.i > 0", ["left"]),
    ("SELECT t0.k, t1.id FROM fc t0 FULL JOIN fb t1 ON t0.k = t1.k WHERE (t1.v < 100) IS NULL OR t1.v < 100", ["full"]),
    ("SELECT t1.k, count(*) FROM fa t0 LEFT JOIN fc t1 ON t0.k = t1.k GROUP BY t1.k HAVING t1.k > 1",
     ["left"]),
]


def _join_kinds(sql: str, db_path: str) -> list[str]:
    db = Database.open(db_path)
    plan = optimize(bind(sql, db), db, Options())
    kinds, stack = [], [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, Join):
            kinds.append(node.kind)
        stack.extend(node.inputs())
    return sorted(kinds)


@pytest.mark.parametrize("sql,kinds", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_outer_join_simplification(sql, kinds, device, fuzz_db, hetdb_runner) -> None:
    truth = fuzz_db.reference(sql)
    assert truth.num_rows > 0
    outcome = run_differential(device, sql, hetdb_runner(fuzz_db.path, device=device), truth, None)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared
    assert _join_kinds(sql, fuzz_db.path) == sorted(kinds)


def test_the_pass_switched_off_keeps_the_full_join(fuzz_db, hetdb_runner) -> None:
    """Without the pass the plan still holds the full join (and still answers like DuckDB here, where
    the division runs after the join with the empty table)."""
    off = {"disabled_passes": {"outer_join_simplification", "predicate_pushdown"}}
    truth = fuzz_db.reference(EMPTY_JOIN_DIVISION)
    outcome = run_differential("pass off", EMPTY_JOIN_DIVISION, hetdb_runner(fuzz_db.path, **off), truth, None)
    assert outcome.failure is None, outcome.failure
    assert outcome.compared and truth.to_pylist() == [{"sum(t1.x)": None, "count(t2.f)": 0}]
