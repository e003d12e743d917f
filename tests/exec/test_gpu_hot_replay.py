"""Hot replay on a GPU (exec/hot_replay.py): hot runs of the SSB queries replay their last full run's
fused launches and give DuckDB's answers, run after run, with the queries' two literal sets
(scripts/gpu_literal_kernels.SSB_VARIANTS) alternating in one connection; and after an INSERT changes
lineorder, the next runs give the new answers (the replay record belonged to the old plan)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))
sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))

from diff_data import build_ssb, dataset  # noqa: E402
from diff_queries import load_queries  # noqa: E402
from gpu_literal_kernels import variant  # noqa: E402

import hetdb  # noqa: E402
from hetdb.backend.gpu import gpu_available  # noqa: E402
from hetdb.bench.compare import compare_tables  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="no CUDA GPU visible to CuPy")]

@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("gpu-hot-replay"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))


def _check(con, name: str, sql: str, want) -> int:
    res = con.sql(sql)
    diff = compare_tables(res.arrow(), want, ordered=False, float_rel_tol=1e-9)
    assert diff is None, (name, diff)
    return int(res.stats.get("hot_replayed", 0))


def test_hot_replays_give_duckdbs_answers_with_both_literal_sets(ssb_db):
    queries = load_queries("ssb")
    replayed: dict[str, int] = {}
    answered = 0  # queries with rows in either set (q3.3's cities find none at SF 0.01)
    with hetdb.connect(ssb_db.path, device="gpu") as con:
        for name, sql in queries.items():
            other = variant(name, sql)
            want_a, want_b = ssb_db.reference(sql), ssb_db.reference(other)
            answered += want_a.num_rows > 0 or want_b.num_rows > 0
            n = 0
            for text, want in [(sql, want_a)] * 4 + [(other, want_b)] * 4 + [(sql, want_a), (other, want_b)] * 3:
                n += _check(con, name, text, want)
            replayed[name] = n
    print("fused launches replayed per query", replayed)
    assert len(replayed) == 13 and answered >= 10, (answered, replayed)
    # q1.x: one fused aggregation over lineorder's resident pages, the date table kept
    assert all(replayed[q] > 0 for q in ("q1.1", "q1.2", "q1.3")), replayed


def test_an_insert_ends_the_replay_and_the_new_rows_count(tmp_path_factory):
    ds = dataset(tmp_path_factory.mktemp("gpu-hot-replay-insert"), "ssb-0.01-insert",
                 lambda p: build_ssb(p, 0.01, 4096))
    sql = load_queries("ssb")["q1.1"]
    insert = "INSERT INTO lineorder SELECT * FROM lineorder WHERE lo_orderkey < 3000"
    with hetdb.connect(ds.path, device="gpu") as con:
        want = ds.reference(sql)
        before = [_check(con, "q1.1", sql, want) for _ in range(5)]
        assert before[-1] > 0, before
        con.sql(insert)
        ds.duck.sql(insert)
        want_after = ds.reference(sql)
        assert compare_tables(want_after, want, ordered=False) is not None  # (the insert changed the answer)
        after = [_check(con, "q1.1", sql, want_after) for _ in range(5)]
        assert after[0] == 0 and after[-1] > 0, after


def test_a_replay_finishes_without_the_driver_and_copies_the_groups_once(ssb_db, monkeypatch):
    """Host work of a hot replay, counted: a replayed run whose groups finish on the host makes no
    pipeline driver run (exec/pipeline._Run), no aggregation or sort global state (the direct
    finish: exec/hot_replay.DIRECT, exec/small_tail._direct) and reads the kernel's accumulators
    back with one device -> host copy; the answers stay DuckDB's."""
    import cupy

    from hetdb.exec import pipeline
    from hetdb.exec.operators.aggregate import HashAggregate
    from hetdb.exec.operators.sort import SortSink

    counts = {"driver": 0, "aggregate state": 0, "sort state": 0, "device->host copies": 0}

    def counting(cls, name, what):
        real = getattr(cls, name)

        def f(*a, **k):
            counts[what] += 1
            return real(*a, **k)

        monkeypatch.setattr(cls, name, f)

    counting(pipeline._Run, "__init__", "driver")
    counting(HashAggregate, "init_global", "aggregate state")
    counting(SortSink, "init_global", "sort state")
    try:  # (an extension type's method may not be replaceable: then the copies go uncounted)
        counting(cupy.ndarray, "get", "device->host copies")
    except (TypeError, AttributeError):
        del counts["device->host copies"]
    queries = load_queries("ssb")
    checked = 0
    with hetdb.connect(ssb_db.path, device="gpu") as con:
        for name, sql in queries.items():
            want = ssb_db.reference(sql)
            for _ in range(3):
                _check(con, name, sql, want)
            for k in counts:
                counts[k] = 0
            res = con.sql(sql)
            got = res.arrow()
            assert compare_tables(got, want, ordered=False, float_rel_tol=1e-9) is None, name
            if res.stats.get("hot_replayed") and got.num_rows and res.stats["gpu_pipelines"]["host"]:
                want_counts = {"driver": 0, "aggregate state": 0, "sort state": 0, "device->host copies": 1}
                assert counts == {k: want_counts[k] for k in counts}, (name, counts)
                checked += 1
    assert checked >= 3, checked  # (q1.x at least: one fused aggregation over lineorder, its row on the host)
