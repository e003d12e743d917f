"""IN / NOT IN / EXISTS over nullable columns, correlated and not, against DuckDB (issue 15, item 1).

A NULL in the subquery's correlation column or a NULL outer key is an empty correlation group
(IN -> FALSE, NOT IN -> TRUE); inside a group, SQL's three-valued IN applies.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from sem_check import build, check

import hetdb

A = pa.table({"id": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
              "k": pa.array([1, 2, None, 2, 3, 4], pa.int32()),
              "v": pa.array([10, None, 10, 20, 7, None], pa.int32()),
              "s": pa.array(["x", None, "y", "z", "x", "w"])})
B = pa.table({"k": pa.array([1, None, 2, 3, 3], pa.int32()),
              "x": pa.array([10, 99, 30, None, 7], pa.int32()),
              "s": pa.array(["x", "y", None, "x", "q"])})

QUERIES = [
    # the issue's reproductions
    "SELECT id FROM a WHERE v NOT IN (SELECT x FROM b WHERE b.k = a.k)",
    "SELECT id, v IN (SELECT x FROM b WHERE b.k = a.k) FROM a",
    # correlated, in every position
    "SELECT id, v NOT IN (SELECT x FROM b WHERE b.k = a.k) FROM a",
    "SELECT id FROM a WHERE v IN (SELECT x FROM b WHERE b.k = a.k)",
    "SELECT id, k IN (SELECT k FROM b WHERE b.x = a.v) FROM a",
    "SELECT id FROM a WHERE k NOT IN (SELECT k FROM b WHERE b.x = a.v)",
    "SELECT id, v IN (SELECT x FROM b WHERE b.k = a.k) OR id = 3 FROM a",
    "SELECT id FROM a WHERE NOT (v IN (SELECT x FROM b WHERE b.k = a.k) OR id = 1)",
    "SELECT id, v NOT IN (SELECT x FROM b WHERE b.k <> a.k) FROM a",
    "SELECT id, v IN (SELECT x FROM b WHERE b.k = a.k AND b.x > a.id) FROM a",
    "SELECT id, 7 IN (SELECT x FROM b WHERE b.k = a.k) FROM a",
    "SELECT id FROM a WHERE 7 NOT IN (SELECT x FROM b WHERE b.k = a.k)",
    "SELECT id, s IN (SELECT s FROM b WHERE b.k = a.k) FROM a",
    "SELECT id, s NOT IN (SELECT s FROM b WHERE b.x = a.v) FROM a",
    "SELECT count(*) FROM a WHERE v NOT IN (SELECT x FROM b WHERE b.k = a.k)",
    # uncorrelated
    "SELECT id, v IN (SELECT x FROM b) FROM a",
    "SELECT id, v NOT IN (SELECT x FROM b) FROM a",
    "SELECT id FROM a WHERE v NOT IN (SELECT x FROM b)",
    "SELECT id FROM a WHERE v NOT IN (SELECT x FROM b WHERE x IS NOT NULL)",
    "SELECT id, v IN (SELECT x FROM b WHERE x > 1000) FROM a",
    "SELECT id, v NOT IN (SELECT x FROM b WHERE x > 1000) FROM a",
    "SELECT id, s IN (SELECT s FROM b) FROM a",
    # EXISTS / NOT EXISTS around NULLs
    "SELECT id, EXISTS (SELECT 1 FROM b WHERE b.k = a.k) FROM a",
    "SELECT id, NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k) FROM a",
    "SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "SELECT id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.x = a.v)",
    "SELECT id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.x = a.v AND b.k <> a.k)",
    "SELECT id, EXISTS (SELECT 1 FROM b WHERE b.x > a.v) FROM a",
]

@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    path = tmp_path_factory.mktemp("sem-subq")
    return str(path), build(str(path), {"a": A, "b": B})


def test_in_not_in_exists_over_nulls(tables, device) -> None:
    path, duck = tables
    with hetdb.connect(path, device=device) as con:
        rows = sum(len(check(con, duck, sql).rows) for sql in QUERIES)
    assert rows > len(QUERIES)


def test_issue_reproductions_exact(tables) -> None:
    path, _ = tables
    with hetdb.connect(path, device="cpu") as con:
        got = con.sql("SELECT id FROM a WHERE v NOT IN (SELECT x FROM b WHERE b.k = a.k) AND id <= 4 "
                      "ORDER BY id")
        assert got.fetchall() == [(3,), (4,)]
        got = con.sql("SELECT id, v IN (SELECT x FROM b WHERE b.k = a.k) FROM a WHERE id <= 4 ORDER BY id")
        assert got.fetchall() == [(1, True), (2, None), (3, False), (4, False)]
