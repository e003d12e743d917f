"""A DDL/DML sequence (create, insert several times, create as, insert, drop) killed at a commit of
each statement in a real subprocess: the database then holds exactly DuckDB's state before or after
that statement, and the next statements run on it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import duckdb
import pytest

import hetdb

SEQUENCE = [
    "CREATE TABLE t (a BIGINT, s VARCHAR, p DECIMAL(10,2))",
    "INSERT INTO t VALUES (1, 'a', 1.50), (2, NULL, -3)",
    "INSERT INTO t SELECT a + 10, s, p * 2 FROM t",
    "CREATE TABLE u AS SELECT s, count(*) AS n FROM t GROUP BY s",
    "INSERT INTO t VALUES (100, 'z', NULL)",
    "DROP TABLE u",
]


def _state(con) -> dict:
    tables = sorted(r[0] for r in con.sql("SHOW TABLES").fetchall())
    return {name: sorted(con.sql(f"SELECT * FROM {name}").fetchall(), key=str) for name in tables}


def _duck_states() -> list[dict]:
    duck = duckdb.connect()
    states = [_state(duck)]
    for st in SEQUENCE:
        duck.execute(st)
        states.append(_state(duck))
    return states


# (commit number, kill step): every statement but DROP commits one table version; killed before
# CURRENT names it the state is the one before, killed after it the one after the statement
CASES = [pytest.param(1, "before_current", marks=pytest.mark.slow), (2, "after_publish"), (3, "before_current"),
         pytest.param(3, "after_link", marks=pytest.mark.slow),
         pytest.param(4, "after_publish", marks=pytest.mark.slow),
         pytest.param(5, "before_current", marks=pytest.mark.slow),
         pytest.param(5, "after_publish", marks=pytest.mark.slow)]


def _devices():
    from hetdb.backend.gpu import gpu_available

    return ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(
        not gpu_available(), reason="no CUDA GPU visible to CuPy")])]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize(("commit", "step"), CASES)
def test_sequence_killed_at_a_commit_leaves_old_or_new_state(tmp_path, device, commit, step):
    db = str(tmp_path / "db")
    code = textwrap.dedent(f"""
        import hetdb
        con = hetdb.connect({db!r}, device={device!r})
        for st in {SEQUENCE!r}:
            con.execute(st)
    """)
    env = dict(os.environ, HETDB_TEST_KILL_AT=f"{step}#{commit}")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=300)
    assert proc.returncode == 137, proc.stderr.decode()[-2000:]
    states = _duck_states()
    # statement k (0-based) makes commit k + 1
    before, after = states[commit - 1], states[commit]
    with hetdb.connect(db, device=device) as con:
        got = _state(con)
        assert got == (before if step != "after_publish" else after)
        assert got != {} or commit == 1
        done = commit if step == "after_publish" else commit - 1
        for st in SEQUENCE[done:]:  # the rest of the sequence runs on the recovered database
            con.execute(st)
        assert _state(con) == states[-1]
        assert len(states[-1]["t"]) == 5
