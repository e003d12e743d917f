"""TPC-H data through ``tpchgen-cli`` (Parquet files in a temporary directory, then ingested).

Table by table, the next table's files generated while the last one is imported, so the temporary
files never hold more than two tables. Types come from the files:
decimal(15,2) money, date32 dates, integers and strings.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hetdb.datagen.chunks import Progress, resolve_workers
from hetdb.errors import HetdbError, InputError

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
_ROWS_PER_SF = {"supplier": 10_000, "customer": 150_000, "part": 200_000, "partsupp": 800_000,
                "orders": 1_500_000, "lineitem": 6_000_000}
_ROWS_PER_FILE = 10_000_000  # split big tables so no single Parquet file grows without bound


def expected_rows(sf: float) -> dict[str, int]:
    """Rows per table at ``sf`` (lineitem is approximate: 1–7 lines per order, ~4 on average)."""
    rows = {"region": 5, "nation": 25}
    rows.update({t: int(n * sf) for t, n in _ROWS_PER_SF.items()})
    return rows


def find_tpchgen() -> str:
    """Path of the tpchgen-cli executable (next to this Python, else on PATH)."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise HetdbError("tpchgen-cli is not installed: run `pip install tpchgen-cli` "
                         "(in the environment hetdb runs in) to generate TPC-H data")
    return found


def _start_files(exe: str, table: str, sf: float, out_dir: Path, threads: int) -> subprocess.Popen:
    """tpchgen-cli writing ``table``'s Parquet files into ``out_dir``, started (not waited for)."""
    parts = max(1, math.ceil(expected_rows(sf)[table] / _ROWS_PER_FILE))
    cmd = [exe, "parquet", "--scale-factor", repr(sf), "--output-dir", str(out_dir), "--tables", table,
           "--num-threads", str(threads), "--quiet"]
    if parts > 1:
        cmd += ["--parts", str(parts)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish_files(proc: subprocess.Popen, table: str, sf: float, out_dir: Path) -> list[str]:
    """Wait for ``_start_files``' process; the Parquet files it wrote."""
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise HetdbError(f"tpchgen-cli failed for table {table} at SF {sf} (exit {proc.returncode}): "
                         f"{err.strip() or out.strip()}")
    files = sorted(str(p) for p in out_dir.rglob(f"{table}*.parquet"))
    if not files:
        raise HetdbError(f"tpchgen-cli wrote no Parquet file for table {table} in {out_dir}")
    return files


def generate(db: Any, sf: float, workers: int | None = None, progress: bool = False,
             rows_per_page: int | None = None, tmp_dir: str | None = None,
             compression: str = "auto") -> dict[str, int]:
    """Generate all 8 TPC-H tables at ``sf`` into ``db`` (replacing existing ones); rows per table.

    ``tmp_dir``: where the intermediate Parquet files of one table at a time go (default: a hidden
    folder inside the database directory, on the disk that has to hold the data anyway); it needs room
    for lineitem and orders (~0.3 GB per SF as Parquet). ``rows_per_page``: None for the store's default.
    """
    if not sf > 0 or not math.isfinite(sf):
        raise InputError(f"TPC-H scale factor must be a positive number, got {sf!r}")
    exe = find_tpchgen()
    from hetdb.storage.ingest import import_files

    threads = resolve_workers(workers)
    page_args: dict = {"compression": compression}
    if rows_per_page is not None:
        page_args["rows_per_page"] = rows_per_page
    rows: dict[str, int] = {}
    # the next table's files are generated while this one is imported (two tables' files on disk at most)
    running: list[tuple[str, subprocess.Popen, str]] = []

    def start(table: str) -> None:
        tmp = tempfile.mkdtemp(prefix=f".hetdb-tpch-{table}-", dir=tmp_dir or db.path)
        try:
            running.append((table, _start_files(exe, table, sf, Path(tmp), threads), tmp))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    try:
        with Progress(progress) as bars:
            bars.add("tpch", len(TABLES))
            start(TABLES[0])
            for k, table in enumerate(TABLES):
                _, proc, tmp = running[0]
                files = _finish_files(proc, table, sf, Path(tmp))
                if k + 1 < len(TABLES):
                    start(TABLES[k + 1])
                rows[table] = import_files(db, table, files, replace=True, **page_args).num_rows
                running.pop(0)
                shutil.rmtree(tmp, ignore_errors=True)
                bars.advance("tpch")
    finally:
        for _, proc, tmp in running:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
            shutil.rmtree(tmp, ignore_errors=True)
    return rows
