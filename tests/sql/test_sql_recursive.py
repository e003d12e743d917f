"""WITH RECURSIVE's iteration bound (connection option recursion_limit, also via SET) and its
place in EXPLAIN; answers are checked against DuckDB in corpus/recursive.test."""

from __future__ import annotations

import pytest

import hetdb
from hetdb.errors import RecursionLimitError

ENDLESS = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"
CYCLE = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n % 3 + 1 FROM t) SELECT count(*) FROM t"


def test_endless_recursion_stops_at_the_limit_naming_the_option() -> None:
    with hetdb.connect(device="cpu", recursion_limit=25) as con:
        for sql in (ENDLESS, CYCLE):
            with pytest.raises(RecursionLimitError, match="recursion_limit") as info:
                con.sql(sql)
            assert "25 iterations" in str(info.value)


def test_set_recursion_limit_changes_the_bound() -> None:
    sql = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 40) SELECT count(*) FROM t"
    with hetdb.connect(device="cpu") as con:
        con.execute("SET recursion_limit = 10")
        with pytest.raises(RecursionLimitError):
            con.sql(sql)
        con.execute("SET recursion_limit = 39")  # 39 iterations add n = 2..40, a 40th adds none
        assert con.sql(sql).fetchall() == [(40,)]


def test_explain_shows_the_recursive_cte() -> None:
    with hetdb.connect(device="cpu") as con:
        text = con.explain("WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n + 1 FROM t WHERE n < 3) "
                           "SELECT * FROM t", analyze=True)
    assert "RecursiveCTE t" in text and "UNION" in text, text
