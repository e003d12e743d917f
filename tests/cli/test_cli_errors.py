"""The CLI prints one clear line for bad files, missing DuckDB, MemoryError and OSError — never a
traceback; and the Python API turns a stray MemoryError into OutOfMemoryError."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pytest

from hetdb.errors import OutOfMemoryError


def hetdb(*args: str, pre: str = "") -> subprocess.CompletedProcess:
    """Run the CLI in a fresh interpreter; ``pre`` runs first (e.g. to hide a module)."""
    script = f"import sys\n{pre}\nfrom hetdb.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                          timeout=300)


def _one_line_error(res: subprocess.CompletedProcess, *needles: str) -> None:
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr + res.stdout and "Exception ignored" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_binary_csv_is_one_line(tmp_path):
    path = tmp_path / "noise.csv"
    path.write_bytes(bytes(range(256)) * 40 + os.urandom(4000))
    _one_line_error(hetdb("import", str(tmp_path / "db"), "t", str(path)), "InputError", "noise.csv")


def test_truncated_gzip_fifo_and_device_are_one_line(tmp_path):
    packed = gzip.compress(("a,b\n" + "".join(f"{i},x\n" for i in range(50_000))).encode())
    cut = tmp_path / "cut.csv.gz"
    cut.write_bytes(packed[: len(packed) // 3])
    _one_line_error(hetdb("import", str(tmp_path / "db"), "t", str(cut)), "InputError", "cut.csv.gz")
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    _one_line_error(hetdb("import", str(tmp_path / "db"), "t", str(fifo)), "InputError", "is a FIFO")
    _one_line_error(hetdb("import", str(tmp_path / "db"), "t", "/dev/zero", "--format", "csv"),
                    "InputError", "is a device")


def test_bench_without_duckdb_says_how_to_install_it(tmp_path):
    res = hetdb("bench", "ssb", "--db", str(tmp_path / "bench-db"), "--sf", "0.001",
                pre="sys.modules['duckdb'] = None  # import duckdb fails as if it were not installed")
    _one_line_error(res, "DuckDB", "pip install")
    assert not (tmp_path / "bench-db").exists()  # refused before generating any data


@pytest.mark.parametrize(("error", "kind"), [("MemoryError()", "OutOfMemoryError"),
                                             ("OSError(28, 'No space left on device')", "OSError")])
def test_memory_and_os_errors_are_one_line(tmp_path, error, kind):
    pre = ("import hetdb.cli.commands as c\n"
           f"def boom(args):\n    raise {error}\n"
           "c.cmd_tables = boom")
    _one_line_error(hetdb("tables", str(tmp_path), pre=pre), kind)


def test_api_turns_memory_error_into_out_of_memory_error(tmp_path, monkeypatch):
    from hetdb.connection import Connection
    from hetdb.exec.engine import QueryEngine

    def exhausted(self, sql):
        raise MemoryError

    with Connection(str(tmp_path / "db"), device="cpu") as con:
        assert con.sql("SELECT 41 + 1").fetchall() == [(42,)]
        monkeypatch.setattr(QueryEngine, "_execute", exhausted)
        with pytest.raises(OutOfMemoryError, match="out of host memory"):
            con.sql("SELECT 1")
