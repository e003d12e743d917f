"""One `hetdb bench <suite>` invocation end to end: data set, DuckDB load, ceilings, runs per mode,
and the output directory (results.json, report.md, plots)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hetdb.bench import datasets, environment, report
from hetdb.bench.ceilings import disk_test_bytes, measure_ceilings, relevant_ceiling
from hetdb.bench.plots import write_plots
from hetdb.bench.report import RESULTS_FORMAT
from hetdb.bench.runner import HetdbSide, PreparedQuery, jsonable, run_mode
from hetdb.bench.suites import get_suite, load_queries, referenced_columns
from hetdb.errors import HetdbError


@dataclass
class BenchConfig:
    suite: str
    sf: float
    device: str = "cpu"
    modes: list[str] = field(default_factory=lambda: ["hot"])
    repeat: int = 3
    vs: str = "duckdb"
    gpu_memory_limit: str | None = None
    reuse_fused_state: bool = True
    db: str | None = None
    out: str | None = None
    queries: list[str] | None = None
    disk_test_bytes: int | None = None  # None: 1 GiB with a cold run, else 256 MiB (bench/ceilings.py)
    workers: int | None = None
    threads: int | None = None
    route: str | None = None  # the route connection option (cache/router.py); None: automatic
    settings: dict[str, Any] = field(default_factory=dict)  # further connection options (--set NAME=VALUE)
    command_line: str = ""


def default_out_dir(cfg: BenchConfig) -> str:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join("bench-out", f"{cfg.suite}-sf{datasets.format_sf(cfg.sf)}-{cfg.device}-{stamp}")


def run_benchmark(cfg: BenchConfig, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the benchmark ``cfg`` describes, write the output directory, and return the results."""
    if cfg.repeat < 1:
        raise HetdbError(f"--repeat must be at least 1 (got {cfg.repeat})")
    suite = get_suite(cfg.suite)
    queries = load_queries(cfg.suite, cfg.queries)
    owned = cfg.db is None
    db_path = os.path.abspath(cfg.db or datasets.default_db_path(suite.data_name, cfg.sf))
    out_dir = cfg.out or default_out_dir(cfg)

    say(f"data set: {suite.name} SF {datasets.format_sf(cfg.sf)} in {db_path}")
    dataset = datasets.ensure_dataset(suite, cfg.sf, db_path, owned=owned, progress=True, workers=cfg.workers)
    say("generated" if dataset["generated"] else "reused existing data set")

    from hetdb.storage import Database

    db = Database.open(db_path, create=False)
    schema = datasets.table_columns(db, suite.tables)
    prepared = []
    for q in queries:
        refs = referenced_columns(q.sql, schema)
        prepared.append(PreparedQuery(q, refs, datasets.column_bytes(db, refs)))

    say("measuring ceilings (disk read, host memory copy, GPU transfers)")
    ceilings = measure_ceilings(db_path, disk_test_bytes(cfg.modes, cfg.disk_test_bytes), gpu=cfg.device != "cpu")

    say("loading the data into DuckDB (in memory, "
        + (f"{cfg.threads} threads)" if cfg.threads else "all cores)"))
    duck, load_seconds = datasets.load_into_duckdb(db, suite.tables, threads=cfg.threads)
    dataset["duckdb_load_seconds"] = load_seconds

    options: dict[str, Any] = {}
    if cfg.gpu_memory_limit:
        options["gpu_memory_limit"] = cfg.gpu_memory_limit
    if cfg.threads:
        options["threads"] = cfg.threads
    if not cfg.reuse_fused_state:
        options["reuse_fused_state"] = False
    if cfg.route:
        options["route"] = cfg.route
    options.update(cfg.settings)
    _check_connects(db_path, cfg.device, options)

    results: dict[str, Any] = {
        "format": RESULTS_FORMAT, "created": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command_line": cfg.command_line, "config": asdict(cfg), "suite": cfg.suite, "sf": cfg.sf,
        "device": cfg.device, "repeat": cfg.repeat, "vs": cfg.vs, "gpu_memory_limit": cfg.gpu_memory_limit,
        "versions": environment.versions(), "machine": environment.machine(), "dataset": dataset,
        "ceilings": ceilings, "runs": []}
    try:
        for mode in cfg.modes:
            say(f"run: mode {mode}, {len(prepared)} queries, warm-up + {cfg.repeat} timed")
            side = HetdbSide(db_path, cfg.device, options, mode,
                             drop_cache=lambda: environment.drop_os_cache([db_path]))
            run = run_mode(prepared, side, duck, repeat=cfg.repeat, time_duckdb=cfg.vs == "duckdb",
                           ceiling=relevant_ceiling(ceilings, side_device(cfg.device), mode),
                           on_query=lambda q: say(_one_line(q)))
            results["runs"].append(run)
    finally:
        duck.close()
    results = jsonable(results)
    report.write_results(results, out_dir)
    report.write_report(results, out_dir)
    write_plots(results, out_dir)
    results["out_dir"] = out_dir
    return results


def side_device(device: str) -> str:
    """The device kind whose ceilings apply ('auto' resolves like the engine does)."""
    if device != "auto":
        return device
    try:
        from hetdb.backend.gpu.device import gpu_available
    except ImportError:
        return "cpu"
    return "gpu" if gpu_available() else "cpu"


def _check_connects(db_path: str, device: str, options: dict[str, Any]) -> None:
    # A bad device or option should stop the benchmark once, not fail every query the same way.
    import hetdb

    hetdb.connect(db_path, device=device, create=False, **options).close()


def _one_line(q: dict[str, Any]) -> str:
    h = q.get("hetdb") or {}
    d = q.get("duckdb") or {}
    mark = {"ok": "ok", "wrong": "WRONG", "error": "ERROR"}[q["status"]]
    text = (f"  {q['name']:<6} {mark:<5} hetdb {report.fmt_seconds(h.get('median_s')):>9}  "
            f"DuckDB {report.fmt_seconds(d.get('median_s')):>9}  speed-up {report.fmt_ratio(q.get('speedup'))}")
    for key in ("disk", "link"):  # (cold: disk reads, warm on the GPU: host->device copies, per second of
        if q.get(f"{key}_fraction"):  # end-to-end time, of the ceiling)
            text += f"  {key} {report.fmt_rate(q[f'{key}_bytes_per_s'])} = {q[f'{key}_fraction'] * 100:.0f}%"
    if q["status"] != "ok":
        text += f"  ({q.get('check') or q.get('error')})"
    return text
