"""The cyclic collector's full passes are held off while a statement runs (hetdb/gc_pause.py), its
young generations' collections are not, and the thresholds come back as they were."""

from __future__ import annotations

import gc
import threading

import pytest

import hetdb
from hetdb import gc_pause


@pytest.fixture
def thresholds():
    saved = gc.get_threshold()
    yield saved
    gc.set_threshold(*saved)


def test_a_statement_runs_without_full_collections_and_puts_the_thresholds_back(tmp_path, thresholds, monkeypatch):
    from hetdb.connection import Connection

    gc.set_threshold(700, 10, 10)
    inside, seen = [], []
    run = Connection._run_statements

    def recording(self, *a, **k):
        inside.append(gc.get_threshold())
        # (cycles made while it runs: the young generations' collections still find them)
        junk = [[] for _ in range(3000)]
        for x in junk:
            x.append(x)
        del junk
        return run(self, *a, **k)

    def watch(phase, info):
        if phase == "start":
            seen.append((info["generation"], gc.get_threshold()))

    monkeypatch.setattr(Connection, "_run_statements", recording)
    with hetdb.connect(str(tmp_path / "db")) as con:
        con.sql("CREATE TABLE t AS SELECT i, i % 7 AS k FROM range(20000) r(i)")
        gc.callbacks.append(watch)
        try:
            for _ in range(20):
                assert con.sql("SELECT k, sum(i) FROM t GROUP BY k ORDER BY k").fetchall()[0][0] == 0
        finally:
            gc.callbacks.remove(watch)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc_pause._watch not in gc.callbacks
    assert inside and all(t == (700, 10, gc_pause._HELD) for t in inside), inside
    held = [g for g, t in seen if t[2] == gc_pause._HELD]
    assert held and max(held) < 2, seen  # young collections inside statements, no full pass


def test_nested_and_concurrent_statements_restore_once_and_a_users_threshold_is_kept(thresholds):
    gc.set_threshold(500, 7, 9)
    with gc_pause.no_full_collection():
        with gc_pause.no_full_collection():
            assert gc.get_threshold() == (500, 7, gc_pause._HELD)
        assert gc.get_threshold() == (500, 7, gc_pause._HELD)
    assert gc.get_threshold() == (500, 7, 9)

    started, release = threading.Event(), threading.Event()

    def other():
        with gc_pause.no_full_collection():
            started.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    started.wait(10)
    with gc_pause.no_full_collection():
        pass
    assert gc.get_threshold()[2] == gc_pause._HELD  # (the other thread's statement still runs)
    release.set()
    t.join()
    assert gc.get_threshold() == (500, 7, 9)

    with gc_pause.no_full_collection():
        gc.set_threshold(300, 5, 4)  # the user's own setting while a statement runs
    assert gc.get_threshold() == (300, 5, 4)


def test_automatic_collection_turned_off_by_the_user_stays_off(thresholds):
    gc.set_threshold(0, 10, 10)
    with gc_pause.no_full_collection():
        assert gc.get_threshold() == (0, 10, 10)
    assert gc.get_threshold() == (0, 10, 10)


def test_a_statement_running_longer_than_the_hold_gets_full_passes_back(thresholds, monkeypatch):
    # (a long statement's cycles that outlive the young collections, device arrays among them, must
    # not wait for its end)
    monkeypatch.setattr(gc_pause, "HOLD_SECONDS", 0.0)
    gc.set_threshold(700, 10, 10)
    with gc_pause.no_full_collection():
        assert gc.get_threshold() == (700, 10, gc_pause._HELD)
        junk = [[] for _ in range(5000)]  # (allocations enough for a young collection)
        del junk
        gc.collect(0)
        assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)
    assert gc_pause._watch not in gc.callbacks
