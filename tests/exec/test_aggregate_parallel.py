"""The final aggregation merge partitioned over the worker threads (exec/operators/aggregate_parallel.py)
gives DuckDB's answers: integer first keys (range partitions), float and NULL keys (hash partitions),
string keys beside a hashed one, every aggregate's state; compiled loops and operators alike."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402
from exec_plan_helpers import duck_tables, stored_tables  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.cpu import tuning  # noqa: E402
from hetdb.exec.operators import aggregate_parallel  # noqa: E402

QUERIES = [
    "SELECT k, count(*), sum(v), avg(f), min(s), max(v) FROM t GROUP BY k",
    "SELECT k, s, sum(v), count(v) FROM t GROUP BY k, s",
    "SELECT f, k % 50 AS m, count(*), min(k) FROM t GROUP BY f, m",
    "SELECT kn, sum(v), max(s) FROM t WHERE v > -50 GROUP BY kn",
    "SELECT d, k % 7 AS m, sum(f), count(*) FROM t GROUP BY d, m",
    "SELECT k, name, note, sum(v), count(*) FROM t GROUP BY k, name, note",  # strings that follow k
    "SELECT s, count(*) FROM t GROUP BY s",  # string keys only: the one merge
]


def _tables(rows: int) -> dict[str, pa.Table]:
    rng = np.random.default_rng(11)
    k = rng.integers(-5000, 60000, rows)
    kn = pa.array([None if x % 13 == 0 else int(x) for x in k], pa.int64())
    return {"t": pa.table({
        "k": pa.array(k, pa.int64()),
        "kn": kn,
        "v": pa.array(rng.integers(-99, 99, rows), pa.int64()),
        "f": pa.array(rng.integers(-40, 40, rows) / 4, pa.float64()),  # exact sums in any order
        "s": pa.array([f"s{x % 311}" for x in rng.integers(0, 10**6, rows)], pa.string()),
        "d": pa.array(rng.integers(18000, 18400, rows).astype("datetime64[D]"), pa.date32()),
        # fixed by k (a key and the columns describing it), NULL for some k
        "name": pa.array([f"customer#{x:09d}" for x in k], pa.string()),
        "note": pa.array([None if x % 17 == 0 else "n" * (x % 23) + str(x) for x in k], pa.string()),
    })}


@pytest.mark.parametrize("compile_cpu", [True, False])
def test_partitioned_final_merge_agrees_with_duckdb(tmp_path, monkeypatch, compile_cpu: bool) -> None:
    tables = _tables(60_000)
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    calls: list[int] = []
    final = aggregate_parallel.parallel_final

    def spy(*args, **kwargs):
        out = final(*args, **kwargs)
        if out is not None:
            calls.append(len(out))
        return out

    monkeypatch.setitem(tuning.values, "parallel_merge_rows", 16)
    monkeypatch.setitem(tuning.values, "merge_small_domain", 0)
    # partitions' results of fewer rows are concatenated (3 partitions of ~20k groups: 2 batches)
    monkeypatch.setitem(tuning.values, "result_morsel_rows", 30_000)
    monkeypatch.setattr("hetdb.exec.operators.aggregate.parallel_final", spy)
    with hetdb.connect(db.path, device="cpu", threads=3, cpu_compile=compile_cpu) as con:
        for sql in QUERIES:
            got = con.sql(sql).arrow()
            want = duck.sql(sql).to_arrow_table()
            assert got.num_rows == want.num_rows > 50, sql
            assert mismatch(got, want, ()) is None, sql
    assert len(calls) >= len(QUERIES) - 1, calls  # every query but the strings-only one partitioned
    assert min(calls) < 3, calls


def test_one_merge_when_switched_off_or_single_threaded(tmp_path, monkeypatch) -> None:
    tables = _tables(20_000)
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    monkeypatch.setitem(tuning.values, "parallel_merge_rows", 16)
    calls: list[int] = []
    final = aggregate_parallel.parallel_final
    monkeypatch.setattr("hetdb.exec.operators.aggregate.parallel_final",
                        lambda *a, **k: calls.append(1) or final(*a, **k))
    sql = QUERIES[0]
    want = duck_tables(tables).sql(sql).to_arrow_table()
    with hetdb.connect(db.path, device="cpu", threads=1) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
    # one integer key spanning fewer values than merge_small_domain (k: 65k): the one merge
    declined: list[int] = []
    monkeypatch.setattr("hetdb.exec.operators.aggregate.parallel_final",
                        lambda *a, **k: declined.append(final(*a, **k) is None) or None)
    with hetdb.connect(db.path, device="cpu", threads=3) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
    assert declined == [True], declined
    monkeypatch.setattr("hetdb.exec.operators.aggregate.parallel_final",
                        lambda *a, **k: calls.append(1) or final(*a, **k))
    monkeypatch.setitem(tuning.values, "parallel_merge_rows", tuning.OFF)
    with hetdb.connect(db.path, device="cpu", threads=3) as con:
        assert mismatch(con.sql(sql).arrow(), want, ()) is None
    assert calls  # asked, and declined both times (the answers above are the one merge's)


@pytest.mark.parametrize("compile_cpu", [True, False])
def test_plain_string_keys_stay_in_place_when_they_follow(tmp_path, monkeypatch, compile_cpu: bool) -> None:
    """Plain-string keys fixed by the other keys are merged without moving them into the partitions;
    a string key that does not follow (s beside k) is merged the other way, with the same answers."""
    tables = _tables(40_000)
    db = stored_tables(tmp_path / "db", tables, rows_per_page=4096)
    duck = duck_tables(tables)
    following: list[bool] = []
    inner = aggregate_parallel._merge_following
    monkeypatch.setattr(aggregate_parallel, "_merge_following",
                        lambda *a, **k: (lambda out: following.append(out is not None) or out)(inner(*a, **k)))
    monkeypatch.setitem(tuning.values, "parallel_merge_rows", 16)
    monkeypatch.setitem(tuning.values, "merge_small_domain", 0)
    sqls = ["SELECT k, name, note, sum(v), count(*) FROM t GROUP BY k, name, note",
            "SELECT name, k, max(note), min(v) FROM t WHERE v > 0 GROUP BY name, k",
            "SELECT k, s, sum(v) FROM t GROUP BY k, s"]
    with hetdb.connect(db.path, device="cpu", threads=4, cpu_compile=compile_cpu) as con:
        for sql in sqls:
            got, want = con.sql(sql).arrow(), duck.sql(sql).to_arrow_table()
            assert got.num_rows == want.num_rows > 50, sql
            assert mismatch(got, want, ()) is None, sql
    assert following == [True, True, False], following
