"""PNG plots of a benchmark: per-query time hetdb vs DuckDB (log scale), and effective throughput
against the machine's ceilings. matplotlib with the Agg backend (no display needed)."""

from __future__ import annotations

import os
from typing import Any

from hetdb.bench.ceilings import named_ceilings


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def write_plots(results: dict[str, Any], out_dir: str) -> list[str]:
    """Two PNGs per run (times_<mode>.png, throughput_<mode>.png); returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for run in results["runs"]:
        paths.append(plot_times(results, run, os.path.join(out_dir, f"times_{run['mode']}.png")))
        paths.append(plot_throughput(results, run, os.path.join(out_dir, f"throughput_{run['mode']}.png")))
    return paths


def _title(results: dict[str, Any], run: dict[str, Any], what: str) -> str:
    return f"{results['suite']} SF {results['sf']:g}, {run.get('device')}, {run['mode']}: {what}"


def plot_times(results: dict[str, Any], run: dict[str, Any], path: str) -> str:
    """Grouped bars per query: hetdb (end to end) and DuckDB median times, log scale; failed or wrong
    hetdb answers are marked."""
    plt = _pyplot()
    queries = run["queries"]
    names = [q["name"] for q in queries]
    hetdb = [(q.get("hetdb") or {}).get("median_s") or 0.0 for q in queries]
    duck = [(q.get("duckdb") or {}).get("median_s") or 0.0 for q in queries]
    xs = range(len(names))
    width = 0.4
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 2), 4.5))
    ax.bar([x - width / 2 for x in xs], hetdb, width, label="hetdb", color="#1f77b4")
    if any(duck):
        ax.bar([x + width / 2 for x in xs], duck, width, label="DuckDB", color="#ff7f0e")
    positive = [v for v in hetdb + duck if v > 0]
    if positive:
        ax.set_yscale("log")
        ax.set_ylim(min(positive) / 2, max(positive) * 3)
    for x, q in zip(xs, queries):
        if q["status"] != "ok":
            ax.annotate("✗" if q["status"] == "wrong" else "err", (x - width / 2, min(positive or [1])),
                        ha="center", va="bottom", color="red", fontsize=9)
    ax.set_xticks(list(xs), names, rotation=45 if len(names) > 10 else 0)
    ax.set_ylabel("median time (s), log scale")
    speedup = run["summary"].get("geomean_speedup")
    ax.set_title(_title(results, run, "time per query")
                 + (f"\ngeomean speed-up over DuckDB {speedup:.2f}×" if speedup else ""), fontsize=10)
    ax.legend()
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_throughput(results: dict[str, Any], run: dict[str, Any], path: str) -> str:
    """Bars per query of effective throughput (referenced column bytes / time) for hetdb and DuckDB,
    with every measured ceiling drawn as a horizontal line (log scale)."""
    plt = _pyplot()
    queries = run["queries"]
    names = [q["name"] for q in queries]
    hetdb = [q.get("throughput_bytes_per_s") or 0.0 for q in queries]
    duck = [q.get("duckdb_throughput_bytes_per_s") or 0.0 for q in queries]
    xs = range(len(names))
    width = 0.4
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 3), 4.5))
    ax.bar([x - width / 2 for x in xs], [v / 1e9 for v in hetdb], width, label="hetdb", color="#1f77b4")
    if any(duck):
        ax.bar([x + width / 2 for x in xs], [v / 1e9 for v in duck], width, label="DuckDB", color="#ff7f0e")
    ceilings = named_ceilings(results.get("ceilings", {}))
    styles = ["-", "--", "-.", ":"]
    colors = ["#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for i, (label, rate) in enumerate(ceilings.items()):
        relevant = label == run.get("ceiling")
        ax.axhline(rate / 1e9, color=colors[i % len(colors)], linestyle=styles[i % len(styles)],
                   linewidth=2.2 if relevant else 1.2,
                   label=f"{label} {rate / 1e9:.1f} GB/s" + (" (relevant)" if relevant else ""))
    values = [v / 1e9 for v in hetdb + duck + list(ceilings.values()) if v > 0]
    if values:
        ax.set_yscale("log")
        ax.set_ylim(min(values) / 2, max(values) * 3)
    ax.set_xticks(list(xs), names, rotation=45 if len(names) > 10 else 0)
    ax.set_ylabel("effective throughput (GB/s), log scale")
    ax.set_title(_title(results, run, "bytes of referenced columns / time"), fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
