"""storage/change_watch.py: a directory watched since a token reports any event in it after the
token, whoever made it (this process or another), and Database.is_current answers from the watch
without a stat while nothing happened in the table's directory, and sees another process's commit
or drop at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hetdb import types as T
from hetdb.storage import ColumnSpec, Database
from hetdb.storage import database as D
from hetdb.storage.change_watch import WATCH, DirectoryWatch

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _watchable(path) -> bool:
    return DirectoryWatch().token(str(path)) is not None


def test_events_after_a_token_and_none_before(tmp_path):
    if not _watchable(tmp_path):
        pytest.skip("no inotify watch on this file system")
    w = DirectoryWatch()
    d = str(tmp_path)
    (tmp_path / "before").write_text("x")
    t = w.token(d)
    assert w.unchanged(d, t)  # (the file written before the token counts as validated)
    (tmp_path / "tmp").write_text("y")
    assert not w.unchanged(d, t)
    t = w.token(d)
    assert w.unchanged(d, t) and w.unchanged(d, t)
    os.rename(tmp_path / "tmp", tmp_path / "CURRENT")  # a commit's rename
    assert not w.unchanged(d, t)
    t = w.token(d)
    subprocess.run([sys.executable, "-c", f"import os; os.remove({str(tmp_path / 'CURRENT')!r})"], check=True)
    assert not w.unchanged(d, t)  # another process's change
    assert not w.unchanged(d, None) and not w.unchanged(str(tmp_path / "other"), t)


def test_a_removed_directory_is_watched_no_more(tmp_path):
    if not _watchable(tmp_path):
        pytest.skip("no inotify watch on this file system")
    w = DirectoryWatch()
    sub = tmp_path / "t"
    sub.mkdir()
    t = w.token(str(sub))
    sub.rmdir()
    sub.mkdir()  # (a table dropped and created again under its name)
    assert not w.unchanged(str(sub), t)
    t = w.token(str(sub))
    assert w.unchanged(str(sub), t)


def test_switched_off(monkeypatch, tmp_path):
    w = DirectoryWatch()
    w.enabled = False
    assert w.token(str(tmp_path)) is None and not w.unchanged(str(tmp_path), 0)


def _table(path: str, values: list[int]) -> None:
    db = Database.open(path, create=True)
    with db.create_table("t", [ColumnSpec("a", T.INT64)]) as w:
        w.append_arrow(pa.table({"a": pa.array(values, pa.int64())}))


def test_is_current_without_a_stat_until_another_process_commits(tmp_path, monkeypatch):
    if not _watchable(tmp_path) or not WATCH.enabled:
        pytest.skip("no inotify watch on this file system")
    path = str(tmp_path / "db")
    _table(path, [1, 2, 3])
    db = Database.open(path)
    reader = db.table("t")
    stats = []
    real = D._file_identity
    monkeypatch.setattr(D, "_file_identity", lambda p: stats.append(p) or real(p))
    assert all(db.is_current("t", reader) for _ in range(5))
    assert stats == []  # (the watch answered: nothing happened in the table's directory)
    code = (f"import sys; sys.path.insert(0, {SRC!r}); import pyarrow as pa; from hetdb import types as T; "
            "from hetdb.storage import ColumnSpec, Database; "
            f"db = Database.open({path!r}); w = db.create_table('t', [ColumnSpec('a', T.INT64)], replace=True); "
            "w.append_arrow(pa.table({'a': pa.array([7], pa.int64())})); w.commit()")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert not db.is_current("t", reader)  # the other process's commit, seen at once
    fresh = db.table("t")
    assert fresh is not reader and fresh.num_rows == 1
    assert db.is_current("t", fresh)
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {SRC!r}); from hetdb.storage import "
                    f"Database; Database.open({path!r}).drop_table('t')"], check=True)
    assert not db.is_current("t", fresh)


def test_a_database_moved_aside_and_another_put_at_its_path(tmp_path, monkeypatch):
    """No event comes from the table directories themselves: the directories above them are
    watched for being moved."""
    if not _watchable(tmp_path) or not WATCH.enabled:
        pytest.skip("no inotify watch on this file system")
    path, other = str(tmp_path / "db"), str(tmp_path / "other")
    _table(path, [1, 2, 3])
    _table(other, [4])
    db = Database.open(path)
    reader = db.table("t")
    assert db.is_current("t", reader)
    os.rename(path, str(tmp_path / "db.old"))
    os.rename(other, path)
    assert not db.is_current("t", reader)
    assert db.table("t").num_rows == 1


def test_a_path_through_a_symbolic_link_is_not_watched(tmp_path):
    if not _watchable(tmp_path):
        pytest.skip("no inotify watch on this file system")
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert DirectoryWatch().token(str(tmp_path / "link")) is None


def test_at_most_max_watches(tmp_path, monkeypatch):
    if not _watchable(tmp_path):
        pytest.skip("no inotify watch on this file system")
    from hetdb.storage import change_watch

    w = DirectoryWatch()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert w.token(str(tmp_path / "a")) is not None
    monkeypatch.setattr(change_watch, "MAX_WATCHES", len(w._path_of) + len(w._above_path))
    assert w.token(str(tmp_path / "b")) is None  # (the check stats instead)
    assert w.token(str(tmp_path / "a")) is not None
