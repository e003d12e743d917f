"""The `hetdb` command. Engine logic lives elsewhere; this module parses arguments, calls the API and
prints. User errors (HetdbError) are printed in a line or two, never as a traceback."""

from __future__ import annotations

import argparse
import sys

from hetdb.errors import HetdbError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hetdb",
        description="hetdb: an embedded analytical SQL engine for data larger than GPU and host memory. "
                    "A database is a directory.")
    p.add_argument("--version", action="store_true", help="print the hetdb version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser("generate", help="generate a benchmark data set (ssb, tpch, scan) into a database",
                       description="Generate a benchmark data set straight into the table store, in "
                                   "chunks, in parallel across cores.")
    g.add_argument("suite", choices=["ssb", "tpch", "scan"], help="which data set")
    g.add_argument("db", help="database directory (created if missing)")
    g.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    g.add_argument("--workers", type=int, default=None, help="generator processes (default: all cores)")
    g.add_argument("--rows-per-page", type=int, default=1 << 20, help="rows per page/row group")
    g.add_argument("--compression", choices=["auto", "light", "none"], default="auto",
                   help="page encoding: auto = smallest lightweight encoding per page, string bytes in LZ4 "
                        "chunks where that gains (default); light = the same, string bytes plain; none = plain")

    im = sub.add_parser("import", help="import Parquet, CSV or Arrow IPC files into a table",
                        description="Import one or more files (same schema) into TABLE, streaming in "
                                    "bounded memory. The format is taken from the file extension.")
    im.add_argument("db", help="database directory (created if missing)")
    im.add_argument("table", help="table name")
    im.add_argument("files", nargs="+", help="input files or globs (.parquet, .csv, .tsv, .arrow, .feather, "
                                             ".ipc); key=value directories become columns")
    im.add_argument("--format", choices=["parquet", "csv", "ipc"], default=None,
                    help="input format (default: from the extension)")
    im.add_argument("--replace", action="store_true", help="replace the table if it exists")
    im.add_argument("--rows-per-page", type=int, default=1 << 20, help="rows per page/row group")
    im.add_argument("--compression", choices=["auto", "light", "none"], default="auto",
                    help="page encoding: auto = smallest lightweight encoding per page, string bytes in LZ4 "
                         "chunks where that gains (default); light = the same, string bytes plain; none = plain")
    im.add_argument("--delimiter", default=None, help="CSV field delimiter")
    im.add_argument("--no-header", action="store_true", help="CSV files have no header row")

    t = sub.add_parser("tables", help="list the tables of a database")
    t.add_argument("db", help="database directory")

    d = sub.add_parser("describe", help="columns, types, rows, pages, bytes and zone-map ranges of a table")
    d.add_argument("db", help="database directory")
    d.add_argument("table", help="table name")

    q = sub.add_parser("query", help="run SQL statements and print the last result",
                       description="Run SQL (DuckDB dialect; several statements separated by ';') from "
                                   "the argument, -c, -f FILE or standard input, and print the last result.")
    q.add_argument("db", help="database directory (created if missing; ':memory:' for a temporary one)")
    q.add_argument("sql", nargs="?", default=None, help="the SQL text (or use -c, -f, or standard input)")
    q.add_argument("-c", "--command", dest="command_sql", default=None, help="the SQL text")
    q.add_argument("-f", "--file", dest="sql_file", default=None, help="read the SQL from this file")
    _add_engine_options(q)
    q.add_argument("--format", choices=["table", "csv", "json"], default="table", help="output format")
    q.add_argument("--explain", action="store_true", help="print the physical plan instead of running")
    q.add_argument("--analyze", action="store_true", help="run and print the plan with per-operator stats")
    q.add_argument("--max-rows", type=int, default=50, help="rows printed in table format (default 50)")
    q.add_argument("--no-progress", action="store_true", help="no progress line for queries over a second")

    s = sub.add_parser("shell", help="interactive SQL prompt (completion, history, dot commands)",
                       description="Interactive SQL prompt: statements end with ';', .help lists the dot "
                                   "commands (.tables, .schema, .timer, .mode, .maxrows, .explain, .quit).")
    s.add_argument("db", help="database directory (created if missing; ':memory:' for a temporary one)")
    _add_engine_options(s)

    sub.add_parser("info", help="Python and hetdb versions, devices seen, measured bandwidths")

    dm = sub.add_parser("demo", help="run the 13 SSB queries on a database made by `hetdb generate ssb`")
    dm.add_argument("db", help="database directory")
    _add_engine_options(dm)

    try:
        from hetdb.bench.cli import add_parser as add_bench
    except ImportError:
        add_bench = None
    if add_bench is not None:
        add_bench(sub)
    return p


def _add_engine_options(p: argparse.ArgumentParser) -> None:
    """One flag per connection option (hetdb.connect keyword arguments)."""
    p.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto",
                   help="where to run (default: GPU when one is visible)")
    p.add_argument("--gpu-memory-limit", default=None, help="bytes hetdb may use on the GPU, e.g. 8GB")
    p.add_argument("--host-memory-limit", default=None, help="bytes for operator state on the host, e.g. 4GB")
    p.add_argument("--host-cache-limit", default=None,
                   help="pinned host page tier of the GPU path, e.g. 16GB (0: off)")
    p.add_argument("--threads", type=int, default=None, help="worker threads (default: all cores)")
    p.add_argument("--batch-rows", type=int, default=None, help="rows per batch in pipelines")
    p.add_argument("--no-zone-maps", action="store_true", help="switch page pruning by zone maps off")
    p.add_argument("--spill-dir", default=None, help="directory for spilled partitions (default: <db>/.spill)")
    p.add_argument("--disable-pass", action="append", default=None, metavar="PASS",
                   help="switch an optimizer pass off by name (repeatable)")
    p.add_argument("--no-reuse-fused-state", action="store_true",
                   help="GPU: do not keep fused kernels' dense tables between runs of a plan")
    p.add_argument("--no-cpu-compile", action="store_true",
                   help="CPU: run pipelines operator at a time instead of as compiled loops")
    p.add_argument("--gpu-compressed-cache", action="store_true",
                   help="GPU: keep compressed pages compressed in GPU memory, decoded inside the kernels (default)")
    p.add_argument("--no-gpu-compressed-cache", action="store_true",
                   help="GPU: decode pages on arrival instead")
    p.add_argument("--gpu-batch-bytes", default=None,
                   help="GPU: link bytes of row groups delivered together by a scan, e.g. 64MB (0: one at a time)")
    p.add_argument("--gpu-coprocess", choices=["off", "auto", "on"], default=None,
                   help="GPU: CPU workers take row groups of fused GPU scans too (auto: when the cost model "
                        "says they finish them first; on: always)")
    p.add_argument("--gpu-cache-admission", choices=["reuse", "first"], default=None,
                   help="GPU: when a scan's pages go into GPU memory: on the connection's second scan of "
                        "those columns (reuse, default; the first streams them through) or its first")
    p.add_argument("--no-gpu-delivery-overlap", action="store_true",
                   help="GPU: batched deliveries of one size, decoded on the copy stream (for A/B measurements)")
    p.add_argument("--no-gpu-early-scan", action="store_true",
                   help="GPU: warm queries do not start their largest table's scan before the dimension pipelines")
    p.add_argument("--no-gpu-early-dims", action="store_true",
                   help="GPU: with the early fact scan, the dimension scans do not start before it (A/B)")
    p.add_argument("--no-gpu-copy-neighbours", action="store_true",
                   help="GPU: one copy per page, not one per run of neighbouring pages in the host tier (A/B)")
    p.add_argument("--no-gpu-host-small-builds", action="store_true",
                   help="GPU: small dense join tables, group keys and dictionary lookups made on the device (A/B)")
    p.add_argument("--no-gpu-hot-replay", action="store_true",
                   help="GPU: hot runs of a cached plan go through the pipeline driver, not the replay of its launches (A/B)")
    p.add_argument("--gpu-encoded-min-blocks", type=int, default=None, metavar="N",
                   help="GPU: compile kernels over compressed pages for at least N blocks per SM (default 8; 0: no cap)")
    p.add_argument("--no-gpu-decoded-placement", action="store_true",
                   help="GPU: pages kept compressed on the GPU stay compressed, none decoded by benefit (A/B)")
    p.add_argument("--no-gpu-resident-split", action="store_true",
                   help="GPU: a scan larger than the GPU cache streams its cached row groups with the others "
                        "instead of one launch over them (A/B)")
    p.add_argument("--gpu-stream-encoded", action="store_true",
                   help="GPU: warm scans streaming past the GPU cache deliver pages as stored; the kernel decodes them")
    p.add_argument("--gpu-zero-copy", choices=["off", "on", "auto"], default=None,
                   help="GPU: warm selective scans read the rows they need of late columns in place from "
                        "pinned host memory instead of copying whole pages (auto: when the router expects it to pay)")
    p.add_argument("--timezone", default=None, help="time zone of TIMESTAMPTZ values, e.g. Europe/Berlin")
    p.add_argument("--recursion-limit", type=int, default=None,
                   help="iterations a WITH RECURSIVE query may take (default 10000)")
    p.add_argument("--route", choices=["auto", "copy", "cpu", "disk"], default=None,
                   help="page routing: auto, or force host->GPU copies / CPU processing / disk reads")
    p.add_argument("--pin", action="append", default=None, metavar="TABLE[:COL,...][@gpu|@host]",
                   help="keep these columns of TABLE resident in a cache tier for the session (repeatable; "
                        "default all columns @gpu); same as PRAGMA hetdb_pin")


def engine_options(args) -> dict:
    """Connection keyword arguments from the engine flags that were given."""
    opts: dict = {}
    for key in ("gpu_memory_limit", "host_memory_limit", "host_cache_limit", "threads", "batch_rows",
                "spill_dir", "route", "timezone", "recursion_limit", "gpu_batch_bytes", "gpu_coprocess",
                "gpu_cache_admission", "gpu_zero_copy", "gpu_encoded_min_blocks"):
        v = getattr(args, key, None)
        if v is not None:
            opts[key] = v
    if getattr(args, "no_zone_maps", False):
        opts["zone_maps"] = False
    if getattr(args, "disable_pass", None):
        opts["disabled_passes"] = args.disable_pass
    for key in ("reuse_fused_state", "gpu_delivery_overlap", "cpu_compile", "gpu_early_scan",
                "gpu_early_dims", "gpu_copy_neighbours", "gpu_host_small_builds", "gpu_hot_replay",
                "gpu_decoded_placement", "gpu_resident_split"):  # the --no-... switches
        if getattr(args, f"no_{key}", False):
            opts[key] = False
    if getattr(args, "gpu_stream_encoded", False):
        opts["gpu_stream_encoded"] = True
    if getattr(args, "gpu_compressed_cache", False):
        opts["gpu_compressed_cache"] = True
    if getattr(args, "no_gpu_compressed_cache", False):
        opts["gpu_compressed_cache"] = False
    return opts


def _connect(args, create: bool = True):
    from hetdb.connection import Connection

    con = Connection(args.db, device=getattr(args, "device", "cpu"), create=create, **engine_options(args))
    try:
        for spec in getattr(args, "pin", None) or []:
            con.pin(*parse_pin(spec))
    except BaseException:
        con.close()
        raise
    return con


def parse_pin(spec: str) -> tuple[str, list[str] | None, str]:
    """'lineorder:lo_revenue,lo_discount@host' -> (table, columns or None, tier)."""
    rest, _, tier = spec.partition("@")
    table, _, cols = rest.partition(":")
    columns = [c for c in cols.split(",") if c] or None
    return table.strip(), columns, (tier.strip() or "gpu")


# Hints written for Python callers, said the way a CLI user does it.
_CLI_HINTS = [("use replace=True to overwrite it", "pass --replace to overwrite it"),
              ("open it with create=True to make one", "hetdb import or hetdb query creates one"),
              ("device='cpu'", "--device cpu"), ("device='gpu'", "--device gpu")]


def cli_message(e: Exception) -> str:
    text = str(e)
    for py, cli in _CLI_HINTS:
        text = text.replace(py, cli)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from hetdb import __version__

        print(f"hetdb {__version__}")
        return 0
    if args.command is None:
        parser.print_help()
        return 0
    from hetdb.cli import commands

    handler = getattr(commands, "cmd_" + args.command)
    try:
        return handler(args) or 0
    except HetdbError as e:
        return _print_error(type(e).__name__, cli_message(e))
    except MemoryError as e:
        # a stray MemoryError (outside hetdb's reservations) is still a user-facing condition
        return _print_error("OutOfMemoryError", f"out of host memory{f' ({e})' if str(e) else ''}: set "
                            "--host-memory-limit lower so operators spill, or use a machine with more memory")
    except OSError as e:  # the file system refused something (disk full, permissions, ...)
        return _print_error(type(e).__name__, str(e))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if argv is None:
            _skip_exit_collections()


def _skip_exit_collections() -> None:
    """The process is about to exit: Python's finalization runs several full cyclic collections over
    every object the engine and Numba made (0.5-0.8 s after a demo on 2 cores, measured); frozen objects
    are not visited, and the OS takes the memory back anyway. Only for the program's own command line,
    never for main() called in a longer-lived process."""
    import gc

    gc.freeze()


def _print_error(kind: str, message: str) -> int:
    from rich.console import Console
    from rich.text import Text

    # bytes of a binary input quoted in the message must not break the line or drive the terminal
    shown = "".join(c if c.isprintable() or c == "\n" else ascii(c)[1:-1] for c in message)
    Console(stderr=True, soft_wrap=True).print(
        Text.assemble(("error: ", "bold red"), f"{kind}: {shown}"), highlight=False)
    return 1


if __name__ == "__main__":
    sys.exit(main())
