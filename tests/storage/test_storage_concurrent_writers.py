"""Concurrent writers of one table, as real processes: they serialise on the table's lock, versions
only grow, a reported commit is what CURRENT ends on (or an older one), each writer reports its own
version and row count, and a writer killed while it holds the lock blocks nobody."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hetdb.storage import Database

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HETDB_TEST_KILL_AT", None)
    return env


def _parquet(tmp_path, name: str, rows: int, tag: int) -> str:
    path = str(tmp_path / f"{name}.parquet")
    pq.write_table(pa.table({"k": pa.array(range(rows), pa.int64()), "tag": pa.array([tag] * rows, pa.int64())}),
                   path)
    return path


# Each writer waits for the go file, so the imports really start together.
_IMPORT = textwrap.dedent("""
    import os, sys, time
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.005)
    from hetdb.cli.main import main
    sys.exit(main(["import", *sys.argv[2:]]))
""")


def _start_imports(tmp_path, db_path: str, files: list[str], replace: bool) -> list[subprocess.Popen]:
    go = str(tmp_path / "go")
    extra = ["--replace"] if replace else []
    procs = [subprocess.Popen([sys.executable, "-c", _IMPORT, go, db_path, "t", f, *extra], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f in files]
    time.sleep(1.0)  # let every interpreter start and wait on the go file
    open(go, "w").close()
    return procs


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    return [(p.wait(timeout=300), *p.communicate()) for p in procs]


_REPORT = re.compile(r"imported ([\d,]+) rows into t \(version (\d+)\)")


def test_two_new_table_imports_one_wins_the_other_is_refused(tmp_path):
    db = Database.open(str(tmp_path / "db"), create=True)
    files = [_parquet(tmp_path, "a", 1000, 1), _parquet(tmp_path, "b", 2000, 2)]
    results = _finish(_start_imports(tmp_path, db.path, files, replace=False))
    ok = [(i, _REPORT.search(out)) for i, (rc, out, _) in enumerate(results) if rc == 0]
    failed = [err for rc, _, err in results if rc != 0]
    assert len(ok) == 1 and len(failed) == 1, results
    winner, report = ok[0]
    assert report is not None and int(report.group(2)) == 1
    assert "CatalogError" in failed[0] and "already exists" in failed[0] and "Traceback" not in failed[0]
    t = db.table("t").arrow()
    assert t.num_rows == [1000, 2000][winner] == int(report.group(1).replace(",", ""))
    assert set(t.column("tag").to_pylist()) == {winner + 1}


@pytest.mark.parametrize("n", [4, pytest.param(8, marks=pytest.mark.slow)])
def test_racing_replace_writers_end_on_the_highest_reported_version(tmp_path, n):
    db = Database.open(str(tmp_path / "db"), create=True)
    files = [_parquet(tmp_path, f"f{i}", 500 * (i + 1), i) for i in range(n)]
    results = _finish(_start_imports(tmp_path, db.path, files, replace=True))
    reports = {}
    for i, (rc, out, err) in enumerate(results):
        assert rc == 0, err
        m = _REPORT.search(out)
        assert m is not None, out
        reports[i] = (int(m.group(2)), int(m.group(1).replace(",", "")))
    versions = sorted(v for v, _ in reports.values())
    assert versions == list(range(1, n + 1))  # each writer its own version, none lost
    for i, (_, rows) in reports.items():
        assert rows == 500 * (i + 1)  # each writer reports its own row count
    r = db.table("t")
    assert r.version == max(versions)
    winner = next(i for i, (v, _) in reports.items() if v == r.version)
    t = r.arrow()
    assert t.num_rows == reports[winner][1] and set(t.column("tag").to_pylist()) == {winner}
    left = sorted(e for e in os.listdir(os.path.join(db.path, "tables", "t")) if e.startswith("v"))
    assert left == [f"v{r.version - 1}", f"v{r.version}"]  # the current one and the one before it


_HOLDER = textwrap.dedent("""
    import sys, time
    import pyarrow as pa
    from hetdb import types as T
    from hetdb.storage import Database
    from hetdb.storage.format import ColumnSpec
    db = Database.open(sys.argv[1])
    w = db.create_table("t", [ColumnSpec("k", T.INT64, True), ColumnSpec("tag", T.INT64, True)],
                        replace=True)
    w.append_arrow(pa.table({"k": pa.array([1, 2], pa.int64()), "tag": pa.array([9, 9], pa.int64())}))
    print("holding", flush=True)
    time.sleep(600)
""")


def test_writer_killed_while_holding_the_lock_blocks_nobody(tmp_path):
    db = Database.open(str(tmp_path / "db"), create=True)
    first = _parquet(tmp_path, "first", 300, 1)
    proc = subprocess.run([sys.executable, "-m", "hetdb.cli.main", "import", db.path, "t", first],
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, db.path], env=_env(), stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        waiter = subprocess.Popen([sys.executable, "-m", "hetdb.cli.main", "import", db.path, "t",
                                   _parquet(tmp_path, "second", 700, 2), "--replace"],
                                  env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3.0)
        assert waiter.poll() is None  # waits for the lock
        # readers take no lock: the committed version stays readable while a writer holds it
        assert db.table("t").num_rows == 300
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    out, err = waiter.communicate(timeout=300)
    assert waiter.returncode == 0, err
    m = _REPORT.search(out)
    assert m is not None and m.group(1) == "700"
    r = db.table("t")
    assert r.version == int(m.group(2)) > 1 and r.num_rows == 700
    assert set(r.arrow().column("tag").to_pylist()) == {2}
    assert not [e for e in os.listdir(os.path.join(db.path, "tables", "t")) if "tmp" in e]


def test_second_writer_on_one_thread_is_refused_not_deadlocked(tmp_path):
    from hetdb import types as T
    from hetdb.errors import CatalogError
    from hetdb.storage.format import ColumnSpec

    db = Database.open(str(tmp_path / "db"), create=True)
    spec = [ColumnSpec("k", T.INT64, True)]
    with db.create_table("t", spec) as w:
        w.append_arrow(pa.table({"k": pa.array([1], pa.int64())}))
        with pytest.raises(CatalogError, match="already has an open writer"):
            db.create_table("t", spec, replace=True)
    assert db.table("t").num_rows == 1
    with db.create_table("t", spec, replace=True) as w:  # the lock was released by the commit
        w.append_arrow(pa.table({"k": pa.array([1, 2], pa.int64())}))
    assert db.table("t").num_rows == 2 and db.table("t").version == 2
