"""Atomic commit: a writer killed at any step leaves the previous version readable and identical."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from storage_helpers import assert_tables_equal, schema_of

from hetdb.storage import Database
from hetdb.storage.ingest import import_files

STEPS = ["after_page", "before_manifest", "before_rename", "before_current", "before_current_rename"]

_SCRIPT = textwrap.dedent("""
    import sys
    from hetdb.storage import Database
    from hetdb.storage.ingest import import_files
    db = Database.open(sys.argv[1])
    import_files(db, sys.argv[2], [sys.argv[3]], replace=True, rows_per_page=100)
    print("committed")
""")


def _run_writer(db_path: str, table: str, source: str, step: str | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HETDB_TEST_KILL_AT", None)
    if step is not None:
        env["HETDB_TEST_KILL_AT"] = step
    return subprocess.run([sys.executable, "-c", _SCRIPT, db_path, table, source], env=env,
                          capture_output=True, text=True, timeout=120)


def _tree(path: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


@pytest.fixture
def source(tmp_path) -> str:
    n = 20000
    t = pa.table({"k": pa.array(range(n), pa.int64()), "s": [f"name-{i % 37}" for i in range(n)],
                  "u": [f"unique-{i}" for i in range(n)]})
    path = str(tmp_path / "big.parquet")
    pq.write_table(t, path, row_group_size=5000)
    return path


@pytest.mark.parametrize("step", STEPS)
def test_killed_writer_leaves_previous_version(tmp_path, source: str, step: str) -> None:
    db = Database.open(str(tmp_path / "db"), create=True)
    old = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "s": ["a", None, "c"], "u": ["x", "y", "z"]})
    with db.create_table("t", schema_of(old), rows_per_page=2) as w:
        w.append_arrow(old)
    proc = _run_writer(db.path, "t", source, step)
    assert proc.returncode == 137, proc.stderr
    assert "committed" not in proc.stdout
    r = db.table("t")
    assert r.version == 1
    assert assert_tables_equal(r.arrow(), old) == 9
    assert db.tables() == ["t"]
    # a new killed writer of a brand-new table leaves no table behind
    proc = _run_writer(db.path, "fresh", source, step)
    assert proc.returncode == 137
    assert db.tables() == ["t"] and not db.has_table("fresh")
    # the next writer succeeds and cleans up what the dead ones left
    proc = _run_writer(db.path, "t", source, None)
    assert proc.returncode == 0, proc.stderr
    r = db.table("t")
    assert r.version > 1 and r.num_rows == 20000
    assert assert_tables_equal(r.arrow(), pq.read_table(source)) == 60000
    leftovers = [e for e in os.listdir(os.path.join(db.path, "tables", "t")) if "tmp" in e]
    assert leftovers == []
    versions = {e for e in os.listdir(os.path.join(db.path, "tables", "t")) if e.startswith("v")}
    assert f"v{r.version}" in versions and versions <= {f"v{r.version}", "v1"}  # orphans are gone


def test_completed_import_matches_in_process(tmp_path, source: str) -> None:
    db = Database.open(str(tmp_path / "db"), create=True)
    proc = _run_writer(db.path, "t", source, None)
    assert proc.returncode == 0, proc.stderr
    r = import_files(db, "t2", [source], rows_per_page=100)
    assert r.num_row_groups == 200
    assert assert_tables_equal(db.table("t").arrow(), r.arrow()) == 60000
    assert _tree(os.path.join(db.path, "tables", "t", "v1")) == _tree(os.path.join(db.path, "tables", "t2", "v1"))
