"""Runs a suite's queries on hetdb and DuckDB in one mode and records times, statistics and answer checks.

Modes (what is cached before each timed run):
  hot  - one connection for the whole run; the warm-up leaves the data in the engine's caches
         (GPU memory on the GPU, host memory on the CPU).
  warm - a fresh connection per run (its GPU page cache empty) while the process-wide pinned host page
         tier and the OS page cache keep the data the warm-up loaded, so on the GPU the data is
         streamed from pinned host memory (at PCIe speed) and on the CPU it comes from host memory.
  cold - a fresh connection per run after the OS page cache is dropped (or the files evicted) and the
         pinned host page tier is emptied, so the disk is in the path.
Each query runs once to warm up and then ``repeat`` times; the median is reported. DuckDB runs on its
in-memory tables (all cores) and gives the reference answer.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hetdb.bench.compare import compare_tables
from hetdb.bench.suites import Query, float_tolerances, order_spec

MODES = ("hot", "warm", "cold")
STAT_KEYS = ("bytes_read", "bytes_host_to_device", "peak_gpu_bytes", "peak_host_bytes")


@dataclass(frozen=True)
class PreparedQuery:
    query: Query
    referenced: dict[str, list[str]]   # {table: [columns]}
    referenced_bytes: int              # uncompressed bytes of those columns


class HetdbSide:
    """Opens hetdb connections the way a mode needs and times queries on them."""

    def __init__(self, db_path: str, device: str, options: dict[str, Any], mode: str,
                 drop_cache: Callable[[], dict[str, Any]]):
        self.db_path, self.device, self.options, self.mode = db_path, device, options, mode
        self._drop_cache = drop_cache
        self._con = None
        self.device_name: str | None = None
        self.cache_drops: list[dict[str, Any]] = []

    def _connect(self):
        import hetdb

        con = hetdb.connect(self.db_path, device=self.device, create=False, **self.options)
        self.device_name = getattr(con, "device", self.device)
        return con

    def before_run(self) -> None:
        """Put the caches in the state the mode promises (untimed)."""
        if self.mode == "hot" and self._con is not None:
            return
        self.close()
        if self.mode == "cold":
            from hetdb.cache.host_cache import clear_shared_host_cache

            clear_shared_host_cache()
            self.cache_drops.append(self._drop_cache())
        self._con = self._connect()

    def run(self, sql: str) -> tuple[pa.Table, dict[str, Any], float]:
        self.before_run()
        start = time.perf_counter()
        res = self._con.sql(sql)
        table = res.arrow()
        seconds = time.perf_counter() - start
        return table, dict(getattr(res, "stats", None) or {}), seconds

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def duckdb_run(con: Any, sql: str) -> tuple[pa.Table, float]:
    start = time.perf_counter()
    table = con.sql(sql).to_arrow_table()
    return table, time.perf_counter() - start


def run_mode(prepared: list[PreparedQuery], hetdb_side: HetdbSide, duck: Any, *, repeat: int,
             time_duckdb: bool, ceiling: tuple[str, float | None],
             on_query: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run every query in one mode; returns {"mode", "queries": [...], "summary": {...}}."""
    results = []
    try:
        for pq in prepared:
            entry = run_query(pq, hetdb_side, duck, repeat=repeat, time_duckdb=time_duckdb, ceiling=ceiling)
            results.append(entry)
            if on_query is not None:
                on_query(entry)
    finally:
        hetdb_side.close()
    run = {"mode": hetdb_side.mode, "device": hetdb_side.device_name or hetdb_side.device,
           "ceiling": ceiling[0], "ceiling_bytes_per_s": ceiling[1], "queries": results,
           "summary": summarize(results)}
    if hetdb_side.cache_drops:
        run["cache_drop"] = hetdb_side.cache_drops[0]
    run["host_tier"] = host_tier_state()
    return run


def host_tier_state() -> dict[str, Any] | None:
    """Size and counters of the process-wide pinned host page tier (None if no GPU scan made one)."""
    from hetdb.cache.host_cache import existing_shared_host_cache

    tier = existing_shared_host_cache()
    if tier is None:
        return None
    return {"capacity_bytes": tier.capacity_bytes, "allocated_bytes": tier.allocated_bytes,
            "used_bytes": tier.used_bytes, **tier.stats.as_dict()}


def run_query(pq: PreparedQuery, side: HetdbSide, duck: Any, *, repeat: int, time_duckdb: bool,
              ceiling: tuple[str, float | None]) -> dict[str, Any]:
    """Warm up and time one query on both engines, check hetdb's answers against DuckDB's."""
    q = pq.query
    entry: dict[str, Any] = {"name": q.name, "path": q.path, "referenced_columns": pq.referenced,
                             "referenced_bytes": pq.referenced_bytes, "status": "ok", "correct": False,
                             "check": None, "error": None, "hetdb": None, "duckdb": None, "speedup": None}
    expected, duck_warmup = duckdb_run(duck, q.sql)
    ordered, order_by = order_spec(q.sql)
    entry.update(ordered=ordered, expected_rows=expected.num_rows)
    tolerances = float_tolerances(q.sql, expected.num_columns)
    if time_duckdb:
        times = [duckdb_run(duck, q.sql)[1] for _ in range(repeat)]
        entry["duckdb"] = {"warmup_s": duck_warmup, "seconds": times, "median_s": statistics.median(times)}
        if entry["duckdb"]["median_s"] > 0:
            entry["duckdb_throughput_bytes_per_s"] = pq.referenced_bytes / entry["duckdb"]["median_s"]

    def check(table: pa.Table) -> str | None:
        return compare_tables(table, expected, ordered, float_rel_tol=tolerances, order_by=order_by)

    seconds: list[float] = []
    stats_seen: list[dict[str, Any]] = []
    try:
        answer, stats, warmup = side.run(q.sql)
        problem = check(answer)
        for _ in range(repeat):
            answer, stats, s = side.run(q.sql)
            seconds.append(s)
            stats_seen.append(stats)
        # The warm-up answer and the last timed one are both checked: caches must not change answers.
        problem = problem or check(answer)
    except Exception as e:  # noqa: BLE001 - one failing query must not end the benchmark; it is recorded
        entry.update(status="error", error=f"{type(e).__name__}: {e}")
        return entry
    last = stats_seen[-1] if stats_seen else stats
    entry["rows"] = answer.num_rows
    entry["correct"] = problem is None
    entry["check"] = problem
    if problem is not None:
        entry["status"] = "wrong"
    h = {"warmup_s": warmup, "seconds": seconds, "median_s": statistics.median(seconds),
         "exec_seconds": _numbers(stats_seen, "exec_seconds"),
         "plan_seconds": _numbers(stats_seen, "plan_seconds")}
    h["exec_median_s"] = statistics.median(h["exec_seconds"]) if h["exec_seconds"] else None
    h["plan_median_s"] = statistics.median(h["plan_seconds"]) if h["plan_seconds"] else None
    for key in STAT_KEYS:
        h[key] = _number(last.get(key))
    h["stats"] = jsonable(last)
    h["paths"] = jsonable(last.get("routes"))  # pages/bytes by path and cache decisions (cache/router.py)
    entry["hetdb"] = h
    if entry["duckdb"] is not None and h["median_s"] > 0:
        entry["speedup"] = entry["duckdb"]["median_s"] / h["median_s"]
    label, rate = ceiling
    entry["throughput_bytes_per_s"] = pq.referenced_bytes / h["median_s"] if h["median_s"] > 0 else None
    entry["exec_throughput_bytes_per_s"] = (pq.referenced_bytes / h["exec_median_s"]
                                            if h["exec_median_s"] else None)
    entry["ceiling"] = label
    entry["fraction_of_ceiling"] = (entry["throughput_bytes_per_s"] / rate
                                    if rate and entry["throughput_bytes_per_s"] else None)
    # the link a mode's bytes had to cross, per second of end-to-end time, against its ceiling: a cold
    # run's bytes read from disk (the disk), a warm GPU run's bytes copied host->device (pinned PCIe)
    for key, ceiling_label, moved in (("disk", "disk read", "bytes_read"),
                                      ("link", "H2D pinned", "bytes_host_to_device")):
        entry[f"{key}_bytes_per_s"], entry[f"{key}_fraction"] = _link_share(
            h.get(moved) if label == ceiling_label else None, h["median_s"], rate)
    return entry


def _link_share(moved: int | None, seconds: float, ceiling: float | None) -> tuple[float | None, float | None]:
    """(bytes per second of end-to-end time, its share of the ceiling) of ``moved`` bytes; (None,
    None) when nothing moved or the time is unknown."""
    if not moved or seconds <= 0:
        return None, None
    per_s = moved / seconds
    return per_s, (per_s / ceiling if ceiling else None)


def _numbers(stats: list[dict[str, Any]], key: str) -> list[float]:
    return [float(s[key]) for s in stats if isinstance(s.get(key), int | float)]


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value) if float(value).is_integer() else float(value)
    except (TypeError, ValueError):
        return None


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by status, the geometric-mean speed-up over the queries answered correctly, and the
    geometric-mean and lowest share of the link ceiling (cold: disk, warm on the GPU: host->device)."""
    speedups = [r["speedup"] for r in results if r["status"] == "ok" and r["speedup"]]
    shares = [r.get("disk_fraction") or r.get("link_fraction") for r in results if r["status"] == "ok"]
    shares = [x for x in shares if x]
    return {"queries": len(results),
            "link_share_geomean": geomean(shares), "link_share_lowest": min(shares) if shares else None,
            "correct": sum(r["status"] == "ok" for r in results),
            "wrong": sum(r["status"] == "wrong" for r in results),
            "errors": sum(r["status"] == "error" for r in results),
            "geomean_speedup": geomean(speedups),
            "hetdb_total_s": sum(r["hetdb"]["median_s"] for r in results if r["hetdb"]),
            "duckdb_total_s": sum(r["duckdb"]["median_s"] for r in results if r["duckdb"])}


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars, tuples and other oddities turned into plain JSON types."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return value if not (isinstance(value, float) and not math.isfinite(value)) else None
    if hasattr(value, "item"):  # NumPy scalar
        return jsonable(value.item())
    return str(value)
