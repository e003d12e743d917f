"""The `hetdb` command as a user meets it: help for every command, clean one-line errors, real files."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

COMMANDS = ["generate", "import", "tables", "describe", "query", "shell", "info", "demo"]


def hetdb(*args: str, cwd=None, input_text: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "hetdb.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, input=input_text, timeout=300)


def test_help_lists_and_explains_every_command():
    out = hetdb("--help")
    assert out.returncode == 0
    for cmd in COMMANDS:
        assert cmd in out.stdout
        sub = hetdb(cmd, "--help")
        assert sub.returncode == 0, sub.stderr
        assert "usage: hetdb " + cmd in sub.stdout


def _assert_clean_error(res: subprocess.CompletedProcess, *needles: str) -> None:
    assert res.returncode != 0
    assert "Traceback" not in res.stderr + res.stdout
    lines = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
    assert 1 <= len(lines) <= 2, res.stderr
    for n in needles:
        assert n in res.stderr, res.stderr


def test_missing_database_is_a_clean_error(tmp_path):
    _assert_clean_error(hetdb("tables", str(tmp_path / "nope")), "CatalogError")


def test_import_describe_tables_roundtrip(tmp_path):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": pa.array([1, 2, None], pa.int32()), "s": ["x", None, "é"]}), src)
    db = str(tmp_path / "db")
    res = hetdb("import", db, "t", str(src))
    assert res.returncode == 0, res.stderr
    assert "3 rows" in res.stdout
    res = hetdb("tables", db)
    assert res.returncode == 0 and "t" in res.stdout
    res = hetdb("describe", db, "t")
    assert res.returncode == 0, res.stderr
    assert "INTEGER" in res.stdout and "VARCHAR" in res.stdout
    _assert_clean_error(hetdb("describe", db, "tt"), "CatalogError", "tt")


def test_bad_csv_names_file_and_line_and_changes_nothing(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("a,b\n1,2\n3,4\n")
    db = str(tmp_path / "db")
    assert hetdb("import", db, "t", str(good)).returncode == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3,4,5\n")
    res = hetdb("import", db, "t", str(bad), "--replace")
    _assert_clean_error(res, "bad.csv")
    import hetdb as api

    assert api.connect(db, device="cpu").table("t").arrow().num_rows == 2


def test_query_errors_are_clean(tmp_path):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), src)
    db = str(tmp_path / "db")
    assert hetdb("import", db, "t", str(src)).returncode == 0
    _assert_clean_error(hetdb("query", db, "SELEC a FROM t", "--device", "cpu"), "SqlError")
    _assert_clean_error(hetdb("query", db, "SELECT b FROM t", "--device", "cpu"), "CatalogError")
    _assert_clean_error(hetdb("query", db, "SELECT a FROM t", "--gpu-memory-limit", "lots"))


def test_query_prints_result_in_each_format(tmp_path):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]}), src)
    db = str(tmp_path / "db")
    assert hetdb("import", db, "t", str(src)).returncode == 0
    sql = "SELECT s, a * 2 AS b FROM t WHERE a >= 2 ORDER BY a"
    res = hetdb("query", db, sql, "--device", "cpu", "--format", "csv")
    assert res.returncode == 0, res.stderr
    assert res.stdout.replace('"', "").split() == ["s,b", "y,4", "z,6"]
    res = hetdb("query", db, sql, "--device", "cpu", "--format", "json")
    assert res.stdout.split("\n")[0] == '{"s": "y", "b": 4}'
    res = hetdb("query", db, sql, "--device", "cpu", "--analyze")
    assert res.returncode == 0, res.stderr
    assert "rows" in res.stdout


def test_shell_runs_statements_and_survives_errors(tmp_path):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), src)
    db = str(tmp_path / "db")
    assert hetdb("import", db, "t", str(src)).returncode == 0
    env_home = tmp_path / "home"
    env_home.mkdir()
    res = subprocess.run([sys.executable, "-m", "hetdb.cli.main", "shell", db, "--device", "cpu"],
                         input="SELECT count(*) AS n\nFROM t;\nSELECT nope FROM t;\n.tables\nSELECT 1+1 AS two;\n",
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HOME=str(env_home), COLUMNS="200"))
    assert res.returncode == 0, res.stderr
    assert "3" in res.stdout and "CatalogError" in res.stdout and "2" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr


@pytest.mark.parametrize("bad", ["0x", "-", "1.2.3GB"])
def test_bad_memory_sizes_are_refused(tmp_path, bad):
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1]}), src)
    db = str(tmp_path / "db")
    assert hetdb("import", db, "t", str(src)).returncode == 0
    _assert_clean_error(hetdb("query", db, "SELECT 1", "--host-memory-limit", bad), "memory size")


def test_every_connection_option_has_a_flag() -> None:
    """Each field of Options (hetdb.connect's keyword arguments) is reachable from the CLI."""
    import dataclasses

    from hetdb.cli.main import build_parser, engine_options
    from hetdb.config import Options

    args = build_parser().parse_args(
        ["query", "db", "-c", "select 1", "--device", "cpu", "--gpu-memory-limit", "1GB",
         "--host-memory-limit", "1GB", "--host-cache-limit", "1GB", "--threads", "3", "--batch-rows", "7",
         "--no-zone-maps", "--spill-dir", "/tmp/s", "--disable-pass", "x", "--no-reuse-fused-state",
         "--no-cpu-compile", "--gpu-compressed-cache", "--timezone", "Europe/Berlin",
         "--recursion-limit", "5", "--route", "disk", "--gpu-batch-bytes", "32MB", "--gpu-coprocess", "auto",
         "--gpu-cache-admission", "first", "--no-gpu-delivery-overlap", "--gpu-zero-copy", "auto",
         "--no-gpu-early-scan", "--no-gpu-early-dims", "--no-gpu-copy-neighbours", "--no-gpu-host-small-builds",
         "--gpu-stream-encoded", "--no-gpu-hot-replay", "--gpu-encoded-min-blocks", "4",
         "--no-gpu-decoded-placement", "--no-gpu-resident-split"])
    given = set(engine_options(args)) | {"device"}
    fields = {f.name for f in dataclasses.fields(Options)}
    assert fields - given <= {"progress"}  # progress: the CLI's own line (--no-progress)


def test_demo_prints_each_query_time_and_the_total(tmp_path):
    from hetdb.bench.suites import load_queries

    db = str(tmp_path / "ssb")
    gen = hetdb("generate", "ssb", db, "--sf", "0.01", "--workers", "1")
    assert gen.returncode == 0, gen.stderr
    # operator at a time: what is tested is the demo's output, not compiled loops (their own tests)
    res = hetdb("demo", db, "--device", "cpu", "--no-cpu-compile")
    assert res.returncode == 0, res.stderr
    names = [q.name for q in load_queries("ssb")]
    timed = re.findall(r"SSB (q\d\.\d): (\d+) rows in (\d+\.\d) ms on cpu", res.stdout)
    assert [t[0] for t in timed] == names and len(names) == 13
    assert sum(int(rows) for _, rows, _ in timed) > 0, timed
    total = re.search(r"13 SSB queries in (\d+\.\d\d) s on cpu", res.stdout)
    assert total is not None, res.stdout[-500:]
    assert abs(float(total.group(1)) - sum(float(ms) for _, _, ms in timed) / 1000) < 0.01
