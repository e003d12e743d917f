"""One function per CLI command: parse-free, print-only wrappers around the Python API."""

from __future__ import annotations

import json
import os
import platform
import sys
import time

from rich.console import Console
from rich.table import Table

console = Console()


def cmd_generate(args) -> int:
    from hetdb.storage import Database

    db = Database.open(args.db, create=True)
    t0 = time.perf_counter()
    kw = dict(workers=args.workers, progress=True, rows_per_page=args.rows_per_page,
              compression=args.compression)
    if args.suite == "ssb":
        from hetdb.datagen import ssb as gen
    elif args.suite == "tpch":
        from hetdb.datagen import tpch as gen
    else:
        from hetdb.datagen import scan as gen
    counts = gen.generate(db, args.sf, **kw)
    dt = time.perf_counter() - t0
    for name, rows in counts.items():
        console.print(f"  {name:<12} {rows:>14,} rows")
    console.print(f"generated {args.suite} SF {args.sf:g} into {args.db} in {dt:.1f} s")
    return 0


def cmd_import(args) -> int:
    from hetdb.storage import Database
    from hetdb.storage.import_paths import import_paths

    db = Database.open(args.db, create=True)
    csv_options = {}
    if args.delimiter:
        csv_options["delimiter"] = args.delimiter
    if args.no_header:
        csv_options["header"] = False
    t0 = time.perf_counter()
    reader = import_paths(db, args.table, args.files, format=args.format, replace=args.replace,
                          progress=True, rows_per_page=args.rows_per_page, csv_options=csv_options or None,
                          compression=args.compression)
    console.print(f"imported {reader.num_rows:,} rows into {args.table} (version {reader.version}) "
                  f"in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_tables(args) -> int:
    from hetdb.storage import Database

    db = Database.open(args.db)
    tab = Table("table", "rows", "columns", "bytes")
    for name in db.tables():
        r = db.table(name)
        tab.add_row(name, f"{r.num_rows:,}", str(len(r.schema)), _fmt_bytes(r.bytes_on_disk()))
    console.print(tab)
    return 0


def cmd_describe(args) -> int:
    from hetdb.storage import Database

    db = Database.open(args.db)
    r = db.table(args.table)
    console.print(f"[bold]{r.name}[/]  version {r.version}  {r.num_rows:,} rows  "
                  f"{r.num_row_groups} pages per column  {_fmt_bytes(r.bytes_on_disk())}")
    tab = Table("column", "type", "nullable", "nulls", "bytes", "ratio", "encodings", "min", "max")
    for spec in r.schema:
        lo = hi = None
        nulls = 0
        codecs: dict[str, int] = {}
        stored = decoded = 0
        for rg in range(r.num_row_groups):
            c = r.page_codec(spec.name, rg)
            codecs[c] = codecs.get(c, 0) + 1
            stored += r.page_location(spec.name, rg).length
            decoded += r.decoded_bytes(spec.name, rg)
            zm = r.zone_map(spec.name, rg)
            nulls += zm.null_count
            if zm.min is not None:
                lo = zm.min if lo is None else min(lo, zm.min)
            if zm.max is not None:
                hi = zm.max if hi is None else max(hi, zm.max)
        ratio = f"{decoded / stored:.2f}x" if stored else "-"
        encodings = " ".join(f"{c}:{k}" for c, k in sorted(codecs.items(), key=lambda e: -e[1]))
        tab.add_row(spec.name, str(spec.dtype), "yes" if spec.nullable else "no", f"{nulls:,}",
                    _fmt_bytes(r.bytes_on_disk(spec.name)), ratio, encodings, _fmt_value(spec.dtype, lo),
                    _fmt_value(spec.dtype, hi))
    console.print(tab)
    return 0


def read_sql(args) -> str:
    """The SQL of ``hetdb query``: the argument, -c, -f FILE or standard input (exactly one)."""
    from hetdb.errors import HetdbError

    given = [x for x in (args.sql, args.command_sql) if x is not None]
    if args.sql_file is not None:
        try:
            with open(args.sql_file, encoding="utf-8") as f:
                given.append(f.read())
        except OSError as e:
            raise HetdbError(f"cannot read SQL file {args.sql_file}: {e.strerror}") from None
    if len(given) > 1:
        raise HetdbError("give the SQL once: as an argument, with -c, or with -f FILE")
    if given:
        return given[0]
    if sys.stdin.isatty():
        raise HetdbError("no SQL given: hetdb query DB \"SELECT ...\", -c SQL, -f FILE, or pipe it in")
    return sys.stdin.read()


def cmd_query(args) -> int:
    from hetdb.cli.progress import engine_status, progress_line

    sql = read_sql(args)
    con = _connect(args)
    try:
        if args.explain or args.analyze:
            with progress_line(enabled=not args.no_progress, status=engine_status(con)):
                text = con.explain(sql.strip().rstrip(";"), analyze=args.analyze)
            console.print(text, highlight=False, markup=False)
            return 0
        t0 = time.perf_counter()
        with progress_line(enabled=not args.no_progress, status=engine_status(con)):
            res = con.sql(sql)
        dt = time.perf_counter() - t0
        print_result(res.arrow(), args.format, args.max_rows)
        if args.format == "table":
            console.print(f"{res.num_rows:,} rows in {dt * 1000:.1f} ms on {con.device}", style="dim")
    finally:
        con.close()
    return 0


def cmd_shell(args) -> int:
    from hetdb.cli.shell import run_shell

    return run_shell(_connect(args))


def cmd_demo(args) -> int:
    from hetdb.bench.suites import load_queries

    con = _connect(args, create=False)
    total = 0.0
    try:
        queries = load_queries("ssb")
        for query in queries:
            t0 = time.perf_counter()
            res = con.sql(query.sql)
            dt = time.perf_counter() - t0
            total += dt
            console.rule(f"SSB {query.name}: {res.num_rows} rows in {dt * 1000:.1f} ms on {con.device}")
            print_result(res.arrow(), "table", 10)
        console.print(f"{len(queries)} SSB queries in {total:.2f} s on {con.device}")
    finally:
        con.close()
    return 0


def cmd_info(args) -> int:
    import hetdb

    console.print(f"hetdb {hetdb.__version__}")
    console.print(f"Python {platform.python_version()} ({sys.executable})")
    console.print(f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    try:
        import numba
        import numpy
        import pyarrow

        console.print(f"NumPy {numpy.__version__}, Numba {numba.__version__}, pyarrow {pyarrow.__version__}")
    except ImportError as e:
        console.print(f"missing dependency: {e}")
    from hetdb.backend.gpu.device import device_info, gpu_available, measure_bandwidth
    from hetdb.cache.rates import shared_rates
    from hetdb.io.gds import gds_status

    console.print(f"GPUDirect Storage (kvikio): {gds_status()}")
    rates = shared_rates()
    console.print(f"page routing: host->GPU {rates.h2d.bytes_per_s / 1e9:.0f} GB/s, disk "
                  f"{rates.disk.bytes_per_s / 1e9:.1f} GB/s assumed until scans measure them; "
                  "PRAGMA hetdb_cache in a session lists what each cache tier holds")
    if not gpu_available():
        console.print("GPU: none visible (CuPy not installed or no NVIDIA device); queries run on the CPU")
        return 0
    info = device_info()
    console.print(f"GPU: {json.dumps(info)}")
    console.print("measuring bandwidths ...")
    for k, v in measure_bandwidth().items():
        console.print(f"  {k}: {v:.1f} GB/s" if isinstance(v, float) else f"  {k}: {v}")
    return 0


def cmd_bench(args) -> int:
    from hetdb.bench.cli import run

    return run(args)


def _connect(args, create: bool = True):
    from hetdb.cli.main import _connect as connect

    return connect(args, create=create)


def print_result(table, fmt: str, max_rows: int) -> None:
    """Print a result; column names may repeat (columns are taken by position)."""
    from hetdb.cli.render import render_csv, render_json, render_text

    if fmt == "csv":
        sys.stdout.write(render_csv(table))
    elif fmt == "json":
        sys.stdout.write(render_json(table))
    else:
        print(render_text(table, max_rows=max_rows))
    sys.stdout.flush()


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _fmt_value(dtype, v) -> str:
    if v is None:
        return ""
    if dtype.kind == "date":
        import datetime

        return str(datetime.date(1970, 1, 1) + datetime.timedelta(days=int(v)))
    if dtype.kind == "decimal":
        return f"{v / 10 ** dtype.scale:.{dtype.scale}f}"
    return str(v)
