"""Issue 11's numbers from ``hetdb bench`` runs of one suite at several thread counts (CPU, DuckDB in the
same run at the same thread count): per thread count the geomean speed-up over DuckDB and the lowest
query, and per query hetdb's and DuckDB's 1 -> most-threads scaling.

Usage: python scripts/cpu_scaling.py DIR [DIR ...]   (each DIR a ``hetdb bench --out`` directory holding
results.json or results.json.gz, e.g. ssb20-t1 ssb20-t4 ssb20-t16; their suite and --threads are read
from the files)

Aims (issue 11, 16-core machine): geomean >= 0.8x DuckDB at 16 threads on SSB SF 20 and TPC-H SF 10, no
query below 0.4x; >= 10x from 1 to 16 threads on SSB.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys


def _load(d: str) -> dict:
    for name in ("results.json", "results.json.gz"):
        path = os.path.join(d, name)
        if os.path.exists(path):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt") as f:
                return json.load(f)
    raise SystemExit(f"{d}: no results.json(.gz)")


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main() -> None:
    runs: dict[int, dict[str, tuple[float, float | None, bool]]] = {}
    suite = sf = None
    for d in sys.argv[1:]:
        res = _load(d)
        suite, sf = res["config"]["suite"], res["config"]["sf"]
        threads = int(res["config"].get("threads") or os.cpu_count() or 1)
        per = runs.setdefault(threads, {})
        for q in res["runs"][0]["queries"]:
            if q.get("status") != "ok":
                continue
            duck = (q.get("duckdb") or {}).get("median_s")
            per[q["name"]] = (q["hetdb"]["median_s"], duck, bool(q.get("correct", True)))
    print(f"{suite} SF {sf}")
    for t in sorted(runs):
        per = runs[t]
        sp = {n: d / h for n, (h, d, _) in per.items() if d}
        low = sorted(sp, key=sp.get)[:3]
        wrong = [n for n, (_, _, ok) in per.items() if not ok]
        print(f"  threads {t:3d}: {len(per)} queries, geomean hetdb {_geomean([h for h, _, _ in per.values()]) * 1e3:8.1f} ms, "
              f"DuckDB {_geomean([d for _, d, _ in per.values() if d]) * 1e3:8.1f} ms, speed-up {_geomean(list(sp.values())):.2f}x "
              f"(lowest {', '.join(f'{n} {sp[n]:.2f}x' for n in low)}){'; WRONG: ' + ', '.join(wrong) if wrong else ''}")
    if len(runs) > 1:
        lo, hi = min(runs), max(runs)
        names = [n for n in runs[lo] if n in runs[hi]]
        hs = {n: runs[lo][n][0] / runs[hi][n][0] for n in names}
        ds = {n: runs[lo][n][1] / runs[hi][n][1] for n in names if runs[lo][n][1] and runs[hi][n][1]}
        print(f"  scaling {lo} -> {hi} threads: hetdb geomean {_geomean(list(hs.values())):.2f}x, "
              f"DuckDB {_geomean(list(ds.values())):.2f}x")
        print("  " + " ".join(f"{n} {hs[n]:.1f}/{ds.get(n, float('nan')):.1f}" for n in names) + "  (hetdb/DuckDB)")


if __name__ == "__main__":
    main()
