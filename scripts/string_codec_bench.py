"""Import and scan time of plain-string columns with compression none / light / auto (the string page
codecs plain / offsets / lz4, docs/storage-format.md "Plain-string pages"), on the CPU.

For each column (default: TPC-H o_comment and l_comment of a database written by `hetdb generate
tpch`): the column is exported once to Parquet, imported into a fresh table per setting (wall time of
`import_files`), then scanned: every page read and decoded by the table reader (cold: O_DIRECT reads,
so the bytes come from the disk or its cache, not the OS page cache) and a query on a fresh
connection per repeat (`SELECT sum(length(c)), count(*) FILTER (WHERE c LIKE '%special%requests%')`).
Repeats are interleaved across settings; medians of wall and of process CPU time (all threads) are
printed: on a shared machine the CPU time is the steadier of the two.

Usage: python scripts/string_codec_bench.py SOURCE_DB WORK_DIR [--columns orders.o_comment,...]
       [--repeat 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time

import pyarrow.parquet as pq

import hetdb
from hetdb.storage import Database
from hetdb.storage.ingest import import_files

SETTINGS = ("none", "light", "auto")


def _scan_reader(reader, column: str) -> int:
    n = 0
    for rg in range(reader.num_row_groups):
        n += len(reader.read(column, rg))
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("work")
    ap.add_argument("--columns", default="orders.o_comment,lineitem.l_comment")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    src = Database.open(args.source)
    os.makedirs(args.work, exist_ok=True)
    for spec in args.columns.split(","):
        table, column = spec.split(".")
        parquet = os.path.join(args.work, f"{column}.parquet")
        if not os.path.exists(parquet):
            pq.write_table(src.table(table).arrow([column]), parquet, compression="none")
        # setting -> [(wall, cpu)] per repeat
        imports: dict[str, list[tuple[float, float]]] = {s: [] for s in SETTINGS}
        scans: dict[str, list[tuple[float, float]]] = {s: [] for s in SETTINGS}
        queries: dict[str, list[tuple[float, float]]] = {s: [] for s in SETTINGS}
        sizes: dict[str, tuple[int, dict]] = {}
        answers: dict[str, list] = {}
        for rep in range(args.repeat):
            for setting in SETTINGS:
                path = os.path.join(args.work, f"{column}-{setting}")
                if rep == 0 or setting not in sizes:
                    shutil.rmtree(path, ignore_errors=True)
                db = Database.open(path, create=True)
                t0, c0 = time.perf_counter(), time.process_time()
                reader = import_files(db, "t", [parquet], replace=True, compression=setting)
                imports[setting].append((time.perf_counter() - t0, time.process_time() - c0))
                codecs: dict[str, int] = {}
                for rg in range(reader.num_row_groups):
                    c = reader.page_codec(column, rg)
                    codecs[c] = codecs.get(c, 0) + 1
                sizes[setting] = (reader.bytes_on_disk(column), codecs)
                reader = Database.open(path).table("t")
                t0, c0 = time.perf_counter(), time.process_time()
                rows = _scan_reader(reader, column)
                scans[setting].append((time.perf_counter() - t0, time.process_time() - c0))
                sql = (f"SELECT sum(length({column})), count(*) FILTER (WHERE {column} LIKE '%special%requests%'), "
                       f"count(*) FROM t")
                with hetdb.connect(path, device="cpu", threads=args.threads) as con:
                    t0, c0 = time.perf_counter(), time.process_time()
                    got = con.sql(sql).fetchall()
                    queries[setting].append((time.perf_counter() - t0, time.process_time() - c0))
                answers.setdefault(setting, got)
                if got != answers[setting] or got[0][2] != rows:
                    raise SystemExit(f"{column} {setting}: answers differ ({got} vs {answers[setting]})")
        if len({str(a) for a in answers.values()}) != 1:
            raise SystemExit(f"{column}: the settings disagree: {answers}")
        plain = sizes["none"][0]
        print(f"{table}.{column}: {answers['none'][0][2]:,} rows, answers equal across settings {answers['none']}")
        for s in SETTINGS:
            nbytes, codecs = sizes[s]
            print(f"  {s:5s} {nbytes / 2**20:8.1f} MiB on disk ({plain / nbytes:4.2f}x) pages {codecs}: "
                  f"import {_med(imports[s])}, reader scan {_med(scans[s])}, "
                  f"first query of its version {_med(queries[s])}")
        print(f"  (wall / CPU seconds, medians of {args.repeat})")


def _med(runs: list[tuple[float, float]]) -> str:
    return (f"{statistics.median(w for w, _ in runs):.3f} / {statistics.median(c for _, c in runs):.3f} s")

if __name__ == "__main__":
    main()
