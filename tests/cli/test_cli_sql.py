"""`hetdb query` with -c / -f / stdin, every engine flag, repeated column names in each format,
CLI-syntax hints, and `hetdb shell` dot commands (piped and through a pty)."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

import hetdb as hetdb_api

ENV = dict(os.environ, COLUMNS="200", NO_COLOR="1")


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def hetdb(capsys, monkeypatch):
    """Run the CLI in this process (a subprocess per call costs seconds of imports)."""
    from hetdb.cli.main import main

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")

    def run(*args: str, input_text: str | None = None, columns: int = 200) -> Ran:
        monkeypatch.setenv("COLUMNS", str(columns))
        monkeypatch.setattr(sys, "stdin", io.StringIO(input_text or ""))
        capsys.readouterr()
        code = main(list(args))
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return run


def test_sql_from_argument_c_file_and_stdin(hetdb, tmp_path):
    db = str(tmp_path / "db")
    res = hetdb("query", db, "-c", "CREATE TABLE t AS SELECT 1 AS a; INSERT INTO t VALUES (2); SELECT sum(a) AS s FROM t",
                "--device", "cpu", "--format", "csv")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["s", "3"]
    f = tmp_path / "q.sql"
    f.write_text("SELECT count(*) AS n\nFROM t;\n")
    res = hetdb("query", db, "-f", str(f), "--format", "csv", "--device", "cpu")
    assert res.stdout.split() == ["n", "2"], res.stderr
    res = hetdb("query", db, "--format", "csv", "--device", "cpu", input_text="SELECT max(a) AS m FROM t")
    assert res.stdout.split() == ["m", "2"], res.stderr
    res = hetdb("query", db, "SELECT 1", "-c", "SELECT 2")
    assert res.returncode == 1 and "once" in res.stderr and "Traceback" not in res.stderr


def test_every_engine_flag_is_accepted(hetdb, tmp_path):
    db = str(tmp_path / "db")
    res = hetdb("query", db, "SELECT 1 + 1 AS two", "--device", "cpu", "--threads", "1", "--batch-rows", "7",
                "--host-memory-limit", "64MB", "--gpu-memory-limit", "1GB", "--host-cache-limit", "0",
                "--no-zone-maps", "--spill-dir", str(tmp_path / "spill"), "--disable-pass", "join_order",
                "--no-reuse-fused-state", "--format", "csv")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["two", "2"]


def test_repeated_column_names_in_every_format(hetdb, tmp_path):
    db = str(tmp_path / "db")
    sql = "SELECT 1 AS a, 22 AS a, 'x' AS b"
    table = hetdb("query", db, sql, "--device", "cpu")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    header = next(ln for ln in lines if "a" in ln and "b" in ln)
    row = next(ln for ln in lines if "22" in ln)
    assert [c.strip() for c in header.strip("│").split("│")] == ["a", "a", "b"]
    assert [c.strip() for c in row.strip("│").split("│")] == ["1", "22", "x"]
    cell = row.strip("│").split("│")[1]
    assert cell == " " + "22".rjust(len(cell) - 2) + " " and len(cell) > 4  # numbers right-aligned
    csv = hetdb("query", db, sql, "--device", "cpu", "--format", "csv")
    assert csv.stdout.split() == ["a,a,b", "1,22,x"]
    js = hetdb("query", db, sql, "--device", "cpu", "--format", "json")
    assert js.stdout.strip() == '{"a": 1, "a_1": 22, "b": "x"}'


def test_wide_results_hide_middle_columns(hetdb, tmp_path):
    db = str(tmp_path / "db")
    sql = "SELECT " + ", ".join(f"{i} AS column_number_{i}" for i in range(30))
    res = hetdb("query", db, sql, "--device", "cpu", columns=100)
    assert res.returncode == 0, res.stderr
    assert "column_number_0" in res.stdout and "column_number_29" in res.stdout
    assert "column_number_15" not in res.stdout and "columns hidden" in res.stdout
    assert max(len(ln) for ln in res.stdout.splitlines()) <= 100


def test_hints_use_cli_syntax(hetdb, tmp_path):
    src = tmp_path / "t.csv"
    src.write_text("a\n1\n")
    db = str(tmp_path / "db")
    assert hetdb("import", db, "t", str(src)).returncode == 0
    res = hetdb("import", db, "t", str(src))
    assert res.returncode == 1 and "--replace" in res.stderr and "replace=True" not in res.stderr


def test_shell_dot_commands_piped(tmp_path):
    db = str(tmp_path / "db")
    text = ".help\nCREATE TABLE t (a INTEGER,\n b VARCHAR);\n.schema t\n.timer off\n.mode csv\nSELECT 7 AS q;\n.quit\n"
    res = subprocess.run([sys.executable, "-m", "hetdb.cli.main", "shell", db, "--device", "cpu"], input=text,
                         capture_output=True, text=True, timeout=120, env=dict(ENV, HOME=str(tmp_path)))
    assert res.returncode == 0, res.stderr
    assert ".schema [TABLE]" in res.stdout
    assert "CREATE TABLE t (a INTEGER, b VARCHAR);" in res.stdout
    assert "q\n7" in res.stdout and "rows in" not in res.stdout.split(".timer")[-1].split("7", 1)[-1]


def _read_until(fd: int, needle: bytes, timeout: float = 60.0) -> bytes:
    out = b""
    end = time.time() + timeout
    while needle not in out and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            try:
                out += os.read(fd, 4096)
            except OSError:
                break
    return out


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty")
def test_shell_through_a_pty_completes_table_names(tmp_path):
    db = str(tmp_path / "db")
    with hetdb_api.connect(db, device="cpu") as con:
        con.execute("CREATE TABLE lineitem_sample AS SELECT 1 AS qty")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hetdb.cli.main", "shell", db, "--device", "cpu"],
                            stdin=slave, stdout=slave, stderr=slave, env=dict(ENV, HOME=str(tmp_path), TERM="xterm"))
    os.close(slave)
    try:
        assert b"hetdb>" in _read_until(master, b"hetdb>")
        os.write(master, b".help\r")
        assert b".schema" in _read_until(master, b".quit")
        os.write(master, b"SELECT sum(qty) AS s FROM lineitem_s")
        _read_until(master, b"lineitem_s", timeout=5)
        time.sleep(1.0)
        os.write(master, b"\t")
        assert b"lineitem_sample" in _read_until(master, b"lineitem_sample")
        time.sleep(1.0)
        os.write(master, b";\r")
        assert b"rows in" in _read_until(master, b"rows in")
        os.write(master, b".quit\r")
        proc.wait(timeout=60)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


def test_progress_line_shows_stage_rows_and_pages(tmp_path):
    from hetdb.cli import progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    con = hetdb_api.connect(device="cpu")
    try:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
        seen = []
        status = progress.engine_status(con)
        real_delay = progress.DELAY_S
        progress.DELAY_S = 0.0
        try:
            with progress.progress_line(stream=out, status=status):
                time.sleep(0.3)
                seen.append(status())
        finally:
            progress.DELAY_S = real_delay
        assert "… " in out.getvalue() and out.getvalue().endswith("\r\x1b[2K")
        con._engine.live = {"stage": "running", "pipeline": 1, "pipelines": 2, "ctx": None}
        assert status() == "pipeline 1/2"
        assert seen == ["running"]
    finally:
        con.close()
