"""The `hetdb bench` subcommand: `hetdb bench ssb|tpch|scan|window ...` runs a suite, `hetdb bench compare A B`
prints what changed between two results.json files. The lead's CLI calls ``add_parser(subparsers)``;
the parsed arguments go to ``run(args)``."""

from __future__ import annotations

import argparse
import re
import shlex
import sys

from hetdb.bench.ceilings import DEFAULT_DISK_TEST_BYTES, QUICK_DISK_TEST_BYTES, MiB, disk_test_bytes
from hetdb.bench.suites import SUITES
from hetdb.errors import HetdbError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `bench` (with its sub-subcommands) to the `hetdb` parser's subparsers."""
    bench = subparsers.add_parser(
        "bench", help="benchmark hetdb against DuckDB on ssb, tpch or scan and report against the "
                      "machine's ceilings",
        description="Generate (or reuse) a data set, load it into DuckDB, measure the machine's ceilings, "
                    "run every query (warm-up + K timed runs, median), check each answer against DuckDB, "
                    "and write results.json, report.md and plots.")
    bench.set_defaults(func=run, bench_command=None)
    sub = bench.add_subparsers(dest="bench_command", metavar="SUITE|compare")
    for name, suite in SUITES.items():
        p = sub.add_parser(name, help=suite.description, description=suite.description)
        _suite_options(p)
        p.set_defaults(func=run)
    c = sub.add_parser("compare", help="what changed between two results.json files (per-query ratio)",
                       description="Per query and mode: hetdb median time in A and B and the ratio B/A "
                                   "(< 1: B is faster), answer status, and the ceilings.")
    c.add_argument("a", help="results.json (or its directory) of the baseline")
    c.add_argument("b", help="results.json (or its directory) to compare with it")
    c.set_defaults(func=run)
    return bench


def _suite_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    p.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto",
                   help="where hetdb runs (default: GPU when one is visible)")
    p.add_argument("--vs", choices=["duckdb", "none"], default="duckdb",
                   help="time DuckDB too (default); answers are checked against DuckDB either way")
    p.add_argument("--mode", default="hot",
                   help="hot (data in GPU/host memory), warm (in host memory), cold (disk in the path); "
                        "a comma-separated list or 'all' runs several (default hot)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per query after one warm-up (default 3)")
    p.add_argument("--gpu-memory-limit", default=None, help="bytes hetdb may use on the GPU, e.g. 8GB")
    p.add_argument("--no-reuse", action="store_true",
                   help="rebuild every derived structure per run: a repeated query may not reuse the "
                        "dense dimension tables its fused GPU kernel built before")
    p.add_argument("--out", default=None, help="output directory (default bench-out/<suite>-sf<N>-"
                                               "<device>-<time>)")
    p.add_argument("--db", default=None, help="database directory (default ~/.cache/hetdb/bench/<suite>-sf<N>)")
    p.add_argument("--queries", default=None, help="comma-separated subset, e.g. q1.1,q3.2")
    p.add_argument("--disk-test-mb", type=int, default=None,
                   help=f"size of the temporary file the disk ceiling is measured on (default "
                        f"{DEFAULT_DISK_TEST_BYTES // MiB} with a cold run, else {QUICK_DISK_TEST_BYTES // MiB})")
    p.add_argument("--workers", type=int, default=None, help="data generator processes (default: all cores)")
    p.add_argument("--threads", type=int, default=None,
                   help="worker threads of hetdb and of DuckDB alike (default: each engine's default)")
    p.add_argument("--route", choices=["auto", "copy", "cpu", "disk"], default=None,
                   help="hetdb's page routing: auto (default), or one path forced (host->GPU copies, CPU "
                        "processing of host pages, disk reads with no cache tier)")
    p.add_argument("--set", dest="settings", action="append", default=None, metavar="NAME=VALUE",
                   help="a connection option for hetdb's side, e.g. gpu_coprocess=on or batch_rows=4096 "
                        "(repeatable; see hetdb.connect)")


def parse_modes(text: str) -> list[str]:
    """'hot', 'hot,cold' or 'all' -> list of modes; HetdbError naming the valid ones otherwise."""
    from hetdb.bench.runner import MODES

    modes = list(MODES) if text.strip() == "all" else [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise HetdbError(f"unknown --mode {', '.join(bad) or text!r}: use hot, warm, cold, a comma-separated "
                         "list of them, or all")
    return list(dict.fromkeys(modes))


def parse_settings(items: list[str]) -> dict[str, object]:
    """``["gpu_coprocess=on", "batch_rows=4096"]`` -> connection options (integers, true/false and
    none converted); HetdbError naming the known options for a name hetdb.connect does not take.
    (The measurement scripts' ``--option`` parses with this too.)"""
    from dataclasses import fields

    from hetdb.config import Options

    known = sorted(f.name for f in fields(Options))
    out: dict[str, object] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise HetdbError(f"--set {item!r}: expected NAME=VALUE, e.g. gpu_coprocess=on")
        if name not in known:
            raise HetdbError(f"--set {name}: not a connection option; known: {', '.join(known)}")
        text = text.strip()
        low = text.lower()
        value: object = text
        if low in ("true", "false"):
            value = low == "true"
        elif low == "none":
            value = None
        elif re.fullmatch(r"-?\d+", text):
            value = int(text)
        out[name] = value
    return out


def run(args: argparse.Namespace) -> int:
    """Handle `hetdb bench ...`; 0 when every answer was correct, 1 otherwise."""
    command = getattr(args, "bench_command", None)
    if command is None:
        print("usage: hetdb bench {ssb,tpch,scan,window} [options] | hetdb bench compare A B", file=sys.stderr)
        return 2
    if command == "compare":
        from hetdb.bench.diff import diff_results, render_diff
        from hetdb.bench.report import load_results

        print(render_diff(diff_results(load_results(args.a), load_results(args.b)), args.a, args.b))
        return 0

    from hetdb.bench.datasets import require_duckdb
    from hetdb.bench.harness import BenchConfig, run_benchmark

    require_duckdb()  # before generating data: every run is checked against DuckDB

    # (resolved before the command line is spelled out: a run repeats with the same test file)
    given = None if args.disk_test_mb is None else args.disk_test_mb * MiB
    args.disk_test_mb = disk_test_bytes(parse_modes(args.mode), given) // MiB
    cfg = BenchConfig(
        suite=command, sf=args.sf, device=args.device, modes=parse_modes(args.mode), repeat=args.repeat,
        vs=args.vs, gpu_memory_limit=args.gpu_memory_limit, reuse_fused_state=not args.no_reuse,
        db=args.db, out=args.out,
        queries=[q.strip() for q in args.queries.split(",")] if args.queries else None,
        disk_test_bytes=args.disk_test_mb * MiB, workers=args.workers, threads=args.threads,
        route=args.route, settings=parse_settings(args.settings or []), command_line=command_line(args))
    results = run_benchmark(cfg, say=_say)
    ok = True
    for r in results["runs"]:
        s = r["summary"]
        ok = ok and s["correct"] == s["queries"]
        gm = s.get("geomean_speedup")
        _say(f"mode {r['mode']}: {s['correct']}/{s['queries']} correct"
             + (f", geomean speed-up over DuckDB {gm:.2f}x" if gm else "")
             + (f"; link share geomean {s['link_share_geomean'] * 100:.1f}%, lowest {s['link_share_lowest'] * 100:.1f}%"
                if s.get("link_share_geomean") else ""))
    _say(f"wrote {results['out_dir']}/results.json, report.md and plots")
    return 0 if ok else 1


def command_line(args: argparse.Namespace) -> str:
    """The invocation with every option spelled out (defaults included), so a run can be repeated."""
    words = ["hetdb", "bench", args.bench_command]
    for name in ("sf", "device", "vs", "mode", "repeat", "gpu_memory_limit", "db", "out", "queries",
                 "disk_test_mb", "workers", "threads", "route"):
        value = getattr(args, name, None)
        if value is not None:
            words += ["--" + name.replace("_", "-"), f"{value:g}" if isinstance(value, float) else str(value)]
    if getattr(args, "no_reuse", False):
        words.append("--no-reuse")
    for item in getattr(args, "settings", None) or []:
        words += ["--set", item]
    return shlex.join(words)


def _say(text: str) -> None:
    from rich.console import Console

    Console(highlight=False).print(text, markup=False, soft_wrap=True)
