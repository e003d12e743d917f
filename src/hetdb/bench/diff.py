"""`hetdb bench compare A B`: what changed between two results.json files, query by query."""

from __future__ import annotations

from typing import Any

from hetdb.bench.ceilings import named_ceilings
from hetdb.bench.report import fmt_rate, fmt_ratio, fmt_seconds
from hetdb.bench.runner import geomean


def diff_results(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Per (mode, query) present in either file: hetdb and DuckDB medians in A and B, the ratio B/A of
    hetdb's time (< 1 means B is faster), and answer status in each. Also the geometric mean of the
    ratios over queries timed in both, and the ceilings side by side."""
    rows = []
    runs_a = {r["mode"]: r for r in a.get("runs", [])}
    runs_b = {r["mode"]: r for r in b.get("runs", [])}
    for mode in list(runs_a) + [m for m in runs_b if m not in runs_a]:
        qa = {q["name"]: q for q in (runs_a.get(mode) or {}).get("queries", [])}
        qb = {q["name"]: q for q in (runs_b.get(mode) or {}).get("queries", [])}
        for name in list(qa) + [n for n in qb if n not in qa]:
            ta, tb = _median(qa.get(name), "hetdb"), _median(qb.get(name), "hetdb")
            rows.append({"mode": mode, "query": name,
                         "hetdb_a_s": ta, "hetdb_b_s": tb,
                         "duckdb_a_s": _median(qa.get(name), "duckdb"),
                         "duckdb_b_s": _median(qb.get(name), "duckdb"),
                         "ratio": tb / ta if ta and tb else None,
                         "status_a": (qa.get(name) or {}).get("status", "absent"),
                         "status_b": (qb.get(name) or {}).get("status", "absent")})
    ca, cb = named_ceilings(a.get("ceilings", {})), named_ceilings(b.get("ceilings", {}))
    return {"rows": rows, "geomean_ratio": geomean([r["ratio"] for r in rows if r["ratio"]]),
            "ceilings": {k: (ca.get(k), cb.get(k)) for k in list(ca) + [k for k in cb if k not in ca]},
            "setup": {k: (a.get(k), b.get(k)) for k in ("suite", "sf", "device", "repeat")
                      if a.get(k) != b.get(k)}}


def _median(q: dict[str, Any] | None, engine: str) -> float | None:
    return ((q or {}).get(engine) or {}).get("median_s")


def render_diff(d: dict[str, Any], name_a: str, name_b: str) -> str:
    """Plain-text table of ``diff_results`` (ratio = B time / A time)."""
    lines = [f"A = {name_a}", f"B = {name_b}"]
    for key, (va, vb) in d["setup"].items():
        lines.append(f"note: {key} differs: {va} (A) vs {vb} (B)")
    header = ("mode", "query", "hetdb A", "hetdb B", "B/A", "change", "DuckDB A", "DuckDB B", "answers")
    table = [header]
    for r in d["rows"]:
        ratio = r["ratio"]
        change = "–" if ratio is None else ("faster" if ratio < 0.95 else "slower" if ratio > 1.05 else "same")
        answers = r["status_a"] if r["status_a"] == r["status_b"] else f"{r['status_a']} -> {r['status_b']}"
        table.append((r["mode"], r["query"], fmt_seconds(r["hetdb_a_s"]), fmt_seconds(r["hetdb_b_s"]),
                      fmt_ratio(ratio, 3), change, fmt_seconds(r["duckdb_a_s"]), fmt_seconds(r["duckdb_b_s"]),
                      answers))
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
    lines.append(f"geometric mean of B/A over {sum(1 for r in d['rows'] if r['ratio'])} queries: "
                 f"{fmt_ratio(d['geomean_ratio'], 3)}")
    for label, (va, vb) in d["ceilings"].items():
        lines.append(f"ceiling {label}: {fmt_rate(va)} (A) vs {fmt_rate(vb)} (B)")
    return "\n".join(lines)
