"""Per-operator time of two benchmark runs side by side: where a query's time went up or down.

Usage: python scripts/bench_ops_diff.py OLD NEW [QUERY ...]   (results.json[.gz] files or run directories;
default: every query whose median changed by more than 10%)

``hetdb bench`` keeps each query's last timed run's operator stats (rows in/out, seconds). With several
workers an operator's seconds are summed over them: against a one-thread run they show how much longer
each worker took (contention) as well as the work. Prints per query both medians, then per operator of
more than 2 ms in either run its seconds in both, its rows and how it ran (compiled loop or why not).
"""

from __future__ import annotations

import re
import sys

from hetdb.bench.report import load_results

_STATS = re.compile(r"rows_in=(\d+), rows_out=(\d+), seconds=([0-9.e+-]+)")
_FUSED = re.compile(r"fused='([^']*)'")


def _queries(path: str) -> dict[str, tuple[float, dict[int, tuple[int, int, float, str]]]]:
    out = {}
    for q in load_results(path)["runs"][0]["queries"]:
        h = q.get("hetdb") or {}
        ops = {}
        for key, text in ((h.get("stats") or {}).get("operators") or {}).items():
            m, f = _STATS.search(text), _FUSED.search(text)
            if m:
                ops[int(key)] = (int(m[1]), int(m[2]), float(m[3]), f[1] if f else "")
        out[q["name"]] = (h.get("median_s") or 0.0, ops)
    return out


def main() -> None:
    old, new = _queries(sys.argv[1]), _queries(sys.argv[2])
    names = sys.argv[3:] or [n for n in old if n in new and old[n][0] and abs(new[n][0] / old[n][0] - 1) > 0.1]
    for n in names:
        (t0, a), (t1, b) = old[n], new[n]
        print(f"== {n}: {t0 * 1e3:.1f} -> {t1 * 1e3:.1f} ms")
        for k in sorted(set(a) | set(b)):
            x, y = a.get(k), b.get(k)
            if max(x[2] if x else 0.0, y[2] if y else 0.0) <= 0.002:
                continue
            rows = y or x
            print(f"  op {k:3d} {x[2] * 1e3 if x else float('nan'):9.1f} -> {y[2] * 1e3 if y else float('nan'):9.1f} ms"
                  f"  rows {rows[0]} -> {rows[1]}  {rows[3][:70]}")


if __name__ == "__main__":
    main()
