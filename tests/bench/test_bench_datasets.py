"""Data sets in a real hetdb database, reused when complete, loaded into DuckDB from the stored rows."""

from __future__ import annotations

import os

import pytest

from hetdb.bench import datasets
from hetdb.bench.compare import compare_tables
from hetdb.bench.suites import get_suite, load_queries, referenced_columns
from hetdb.errors import InputError

pytest.importorskip("hetdb.storage.database")
pytest.importorskip("hetdb.datagen.scan")


def test_generate_reuse_and_load_into_duckdb(tmp_path):
    from hetdb.storage import Database

    suite = get_suite("scan")
    path = str(tmp_path / "scan")
    info = datasets.ensure_dataset(suite, 0.001, path, owned=True, workers=1)
    assert info["generated"] and info["tables"]["t"]["rows"] > 0
    assert os.path.exists(os.path.join(path, datasets.COMPLETE_MARKER))
    again = datasets.ensure_dataset(suite, 0.001, path, owned=True, workers=1)
    assert not again["generated"] and again["tables"] == info["tables"]

    db = Database.open(path)
    schema = datasets.table_columns(db, suite.tables)
    assert schema["t"] == ["id", "x", "y", "z", "memo"]
    refs = referenced_columns(load_queries("scan", ["s3"])[0].sql, schema)
    # uncompressed bytes: of the referenced columns, at most those of the whole table
    assert 0 < datasets.column_bytes(db, refs) <= datasets.column_bytes(db, schema)

    con, seconds = datasets.load_into_duckdb(db, suite.tables, threads=1)
    stored = db.table("t").arrow()
    loaded = con.sql("select * from t").to_arrow_table()
    assert loaded.num_rows == info["tables"]["t"]["rows"] == stored.num_rows
    assert compare_tables(loaded, stored, ordered=False) is None
    assert seconds >= 0
    # loaded on every core; the queries run on the threads asked for
    assert con.execute("select current_setting('threads')").fetchone()[0] == 1


def test_user_paths_are_never_deleted(tmp_path):
    suite = get_suite("scan")
    other = tmp_path / "mine"
    other.mkdir()
    (other / "keep.txt").write_text("data")
    with pytest.raises(InputError, match="not a hetdb database"):
        datasets.ensure_dataset(suite, 0.001, str(other), owned=False)
    assert (other / "keep.txt").exists()


def test_default_path(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "/cache")
    assert datasets.default_db_path("ssb", 1.0) == "/cache/hetdb/bench/ssb-sf1"
    assert datasets.default_db_path("tpch", 0.01) == "/cache/hetdb/bench/tpch-sf0.01"


def test_window_suite_reads_the_tpch_data_set(tmp_path):
    """The window suite generates (and then reuses) a TPC-H data set marked as tpch, so a tpch run
    and a window run at the same scale share one directory."""
    window, tpch = get_suite("window"), get_suite("tpch")
    assert window.data_name == "tpch" and window.generator == tpch.generator
    path = str(tmp_path / "tpch")
    info = datasets.ensure_dataset(window, 0.001, path, owned=True, workers=1)
    assert info["generated"] and info["tables"]["orders"]["rows"] > 0
    again = datasets.ensure_dataset(tpch, 0.001, path, owned=False)
    assert not again["generated"]
