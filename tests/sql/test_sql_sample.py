"""USING SAMPLE / TABLESAMPLE with REPEATABLE(seed): the same rows on every executor configuration
(thread counts, batch sizes, memory budgets); another seed or no seed draws other rows; bernoulli
sizes follow the percentage; a sample's rows are rows of the table."""

from __future__ import annotations

import pytest

import hetdb

CONFIGS = [{}, {"threads": 1, "batch_rows": 7}, {"batch_rows": 1000}, {"host_memory_limit": "256KB", "batch_rows": 50}]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("sample") / "db")
    with hetdb.connect(path) as con:
        con.sql("CREATE TABLE t AS SELECT range AS i, range % 7 AS g FROM range(20000)")
    return path


def _ids(con, sql: str) -> list[int]:
    return sorted(r[0] for r in con.sql(sql).fetchall())


@pytest.mark.parametrize("clause", ["USING SAMPLE 10% (bernoulli, 11)", "USING SAMPLE reservoir(5%) REPEATABLE (11)",
                                    "USING SAMPLE 300 ROWS REPEATABLE (11)", "TABLESAMPLE 10% REPEATABLE (11)"])
def test_seeded_sample_is_the_same_on_every_configuration(db, clause):
    answers = []
    for options in CONFIGS:
        with hetdb.connect(db, **options) as con:
            answers.append(_ids(con, f"SELECT i FROM t {clause}"))
    assert len(answers) == len(CONFIGS) and answers[0]
    assert all(a == answers[0] for a in answers)
    assert len(set(answers[0])) == len(answers[0]) and all(0 <= i < 20000 for i in answers[0])


def test_other_seeds_and_no_seed_draw_other_rows(db):
    with hetdb.connect(db) as con:
        a = _ids(con, "SELECT i FROM t USING SAMPLE 10% (bernoulli, 1)")
        b = _ids(con, "SELECT i FROM t USING SAMPLE 10% (bernoulli, 2)")
        c = _ids(con, "SELECT i FROM t USING SAMPLE 10%")
        d = _ids(con, "SELECT i FROM t USING SAMPLE 10%")
    assert a != b and c != d
    for sample in (a, b, c, d):
        assert 1600 < len(sample) < 2400  # 2000 expected; 9 standard deviations either side


def test_sample_runs_before_where_and_sees_joins(db):
    with hetdb.connect(db) as con:
        n, = con.sql("SELECT count(*) FROM t WHERE g = 0 USING SAMPLE 700 ROWS REPEATABLE (5)").fetchall()[0]
        joined = con.sql("SELECT count(*), count(DISTINCT a.i) FROM t a JOIN t b ON a.i = b.i "
                         "USING SAMPLE 50 ROWS").fetchall()
    assert 40 < n < 170  # a seventh of 700 (100) when the WHERE applies after the sample
    assert joined == [(50, 50)]
