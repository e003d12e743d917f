"""Writing a benchmark's results: results.json (everything) and report.md (a table per run)."""

from __future__ import annotations

import gzip
import json
import math
import os
from typing import Any

from hetdb.bench.ceilings import named_ceilings
from hetdb.errors import InputError

RESULTS_FORMAT = "hetdb-bench/1"


def write_results(results: dict[str, Any], out_dir: str) -> str:
    """Write results.json into ``out_dir`` atomically; returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


def load_results(path: str) -> dict[str, Any]:
    """Read a results.json (or the one inside a directory), checking it is one of ours.

    Archived runs (docs/results) keep it gzipped as results.json.gz; either is read."""
    if os.path.isdir(path):
        plain = os.path.join(path, "results.json")
        path = plain if os.path.exists(plain) or not os.path.exists(plain + ".gz") else plain + ".gz"
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            results = json.load(f)
    except FileNotFoundError:
        raise InputError(f"no benchmark results at {path}") from None
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"cannot read benchmark results {path}: {e}") from None
    if not isinstance(results, dict) or results.get("format") != RESULTS_FORMAT:
        raise InputError(f"{path} is not a hetdb bench results.json (format {RESULTS_FORMAT})")
    return results


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_rate(r: float | None) -> str:
    if not r:
        return "–"
    return f"{r / 1e9:.2f} GB/s" if r >= 1e9 else f"{r / 1e6:.1f} MB/s"


def fmt_ratio(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}×"


def _mark(q: dict[str, Any]) -> str:
    return {"ok": "✓", "wrong": "✗ wrong", "error": "✗ error"}[q["status"]]


def render_markdown(results: dict[str, Any]) -> str:
    """The human report: setup, ceilings, one table per run with its geometric-mean speed-up, and the
    problems (wrong answers, errors) spelled out."""
    lines = [f"# hetdb bench: {results['suite']} at SF {results['sf']:g}", ""]
    if results["suite"] == "tpch":
        lines += ["_Queries derived from TPC-H, not comparable to published TPC-H results._", ""]
    m = results.get("machine", {})
    gpus = ", ".join(g.get("name", "?") for g in m.get("gpus", [])) or "none"
    v = results.get("versions", {})
    lines += [f"- command: `{results.get('command_line', '')}`",
              f"- created: {results.get('created', '')}",
              f"- machine: {m.get('cpu', '?')} × {m.get('cpu_count', '?')} threads, "
              f"{fmt_bytes(m.get('host_memory_bytes'))} RAM; GPUs: {gpus}",
              "- versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)),
              f"- device: {results.get('device')}, repeat {results.get('repeat')} (median after one warm-up)"
              + (f", GPU memory limit {results['gpu_memory_limit']}" if results.get("gpu_memory_limit") else ""),
              f"- data: {results['dataset'].get('path')}"
              + (" (generated)" if results["dataset"].get("generated") else " (reused)")
              + f"; loaded into DuckDB in {fmt_seconds(results['dataset'].get('duckdb_load_seconds'))}",
              "", "## Ceilings", "", "| ceiling | rate |", "|---|---|"]
    for label, rate in named_ceilings(results.get("ceilings", {})).items():
        lines.append(f"| {label} | {fmt_rate(rate)} |")
    for run in results["runs"]:
        lines += ["", *_run_table(run)]
    return "\n".join(lines) + "\n"


def _pipelines(h: dict[str, Any]) -> str:
    """GPU pipelines of the query: compiled / dense-fused / operator at a time (host and skipped
    pipelines apart), from the engine's ``gpu_pipelines`` statistics."""
    m = (h.get("stats") or {}).get("gpu_pipelines")
    if not m:
        return "–"
    return (f"{m.get('compiled', 0)} compiled, {m.get('dense_fused', 0)} fused, "
            f"{m.get('operator_at_a_time', 0)} op-at-a-time")


def _run_table(run: dict[str, Any]) -> list[str]:
    s = run["summary"]
    lines = [f"## Run: mode {run['mode']} on {run.get('device')}", "",
             f"Geometric-mean speed-up over DuckDB: **{fmt_ratio(s.get('geomean_speedup'))}** "
             f"({s['correct']}/{s['queries']} answers correct"
             + (f", {s['wrong']} wrong" if s["wrong"] else "") + (f", {s['errors']} errors" if s["errors"] else "")
             + f"). Throughput is bytes of the referenced columns / end-to-end time; the ceiling is "
             f"{run.get('ceiling')} ({fmt_rate(run.get('ceiling_bytes_per_s'))}).", ""]
    if run.get("cache_drop"):
        lines += [f"Cache dropping: {run['cache_drop'].get('method')}.", ""]
    lines += ["| query | answer | hetdb | hetdb exec | DuckDB | speed-up | rows | disk read | H→D | "
              "peak GPU | peak host | referenced | throughput | of ceiling | GPU pipelines |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for q in run["queries"]:
        h = q.get("hetdb") or {}
        d = q.get("duckdb") or {}
        frac = q.get("fraction_of_ceiling")
        cells = [q["name"], _mark(q), fmt_seconds(h.get("median_s")), fmt_seconds(h.get("exec_median_s")),
                 fmt_seconds(d.get("median_s")), fmt_ratio(q.get("speedup")), str(q.get("rows", "–")),
                 fmt_bytes(h.get("bytes_read")), fmt_bytes(h.get("bytes_host_to_device")),
                 fmt_bytes(h.get("peak_gpu_bytes")), fmt_bytes(h.get("peak_host_bytes")),
                 fmt_bytes(q.get("referenced_bytes")), fmt_rate(q.get("throughput_bytes_per_s")),
                 "–" if frac is None else f"{frac * 100:.3g}%", _pipelines(h)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += _link_tables(run)
    lines += _paths_table(run)
    problems = [q for q in run["queries"] if q["status"] != "ok"]
    if problems:
        lines += ["", "Problems:", ""]
        lines += [f"- {q['name']}: {q.get('check') or q.get('error')}" for q in problems]
    return lines


# (key in a query's entry, the statistic of bytes moved, title, the link's name in the table)
_LINKS = (("disk", "bytes_read", "Disk read rate (bytes read from disk / end-to-end time)", "disk"),
          ("link", "bytes_host_to_device",
           "Host->GPU link rate (bytes copied host->device / end-to-end time)", "H→D"))


def _link_tables(run: dict[str, Any]) -> list[str]:
    """A cold run: each query's disk reads per second of its end-to-end time against the disk ceiling;
    a warm GPU run: its host->device copies against the pinned PCIe ceiling."""
    lines: list[str] = []
    for key, moved, title, name in _LINKS:
        rows = [q for q in run["queries"] if q.get(f"{key}_bytes_per_s")]
        if not rows:
            continue
        shares = [q[f"{key}_fraction"] for q in rows if q.get(f"{key}_fraction")]
        ceiling = "disk ceiling" if key == "disk" else "H2D pinned ceiling"
        lines += ["", f"{title} against the {ceiling} ({fmt_rate(run.get('ceiling_bytes_per_s'))})"
                  + (f": geomean {math.exp(sum(map(math.log, shares)) / len(shares)) * 100:.3g}%, lowest "
                     f"{min(shares) * 100:.3g}%" if shares else "") + ":",
                  "", f"| query | {name} bytes | hetdb | {name} rate | of {ceiling} |", "|---|---:|---:|---:|---:|"]
        for q in rows:
            h = q.get("hetdb") or {}
            frac = q.get(f"{key}_fraction")
            lines.append(f"| {q['name']} | {fmt_bytes(h.get(moved))} | {fmt_seconds(h.get('median_s'))} | "
                         f"{fmt_rate(q[f'{key}_bytes_per_s'])} | {'–' if frac is None else f'{frac * 100:.3g}%'} |")
    return lines


_PATHS = (("gpu_resident", "GPU-resident"), ("host_to_gpu", "host→GPU copy"), ("host_cpu", "on CPU"),
          ("disk_to_host", "disk→host tier"), ("disk_direct", "disk direct"))


def _paths_table(run: dict[str, Any]) -> list[str]:
    """Pages (and bytes) of the last timed run of each query by path, and the cache decisions."""
    rows = [(q["name"], (q.get("hetdb") or {}).get("paths")) for q in run["queries"]]
    if not any(p for _, p in rows):
        return []
    lines = ["", "Pages by path (last timed run; pages / bytes) and page-cache decisions:", "",
             "| query | " + " | ".join(label for _, label in _PATHS) + " | admitted | evicted | bypassed |",
             "|---|" + "---:|" * (len(_PATHS) + 3)]
    for name, p in rows:
        if not p:
            continue
        pages, nbytes = p.get("pages") or {}, p.get("bytes") or {}
        cells = [f"{pages[k]:,} / {fmt_bytes(nbytes.get(k))}" if pages.get(k) else "–" for k, _ in _PATHS]
        lines.append(f"| {name} | " + " | ".join(cells)
                     + f" | {p.get('admitted', 0):,} | {p.get('evicted', 0):,} | {p.get('bypassed', 0):,} |")
    return lines


def write_report(results: dict[str, Any], out_dir: str) -> str:
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_markdown(results))
    return path
