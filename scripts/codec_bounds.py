"""What a column's values allow an encoding to reach, in bits per value: the distinct values and the
bits of a fixed-width code for them, the order-0 entropy H0 (no per-value code, however chosen, is
shorter on average), runs per value and the entropy of the run values per row (the bound for
run-length coding of values repeated per order), against what the page's stored encoding spends
(manifest sizes). Reads the columns' values (one table, a few columns at a time).

Usage: python scripts/codec_bounds.py DB TABLE COLUMN[,COLUMN...]
"""

from __future__ import annotations

import argparse

import numpy as np

from hetdb.storage import Database


def _entropy(counts: np.ndarray) -> float:
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("table")
    ap.add_argument("columns")
    args = ap.parse_args()
    r = Database.open(args.db).table(args.table)
    print(f"{'column':18s} {'distinct':>9s} {'code bits':>9s} {'H0':>6s} {'runs/n':>7s} {'H0 runs':>8s} "
          f"{'stored':>7s} {'plain':>6s}  (bits per value)")
    for c in args.columns.split(","):
        v = np.concatenate([r.read(c, rg).data for rg in range(r.num_row_groups)])
        n = v.shape[0]
        _, counts = np.unique(v, return_counts=True)
        starts = np.concatenate(([0], np.flatnonzero(v[1:] != v[:-1]) + 1))
        _, run_counts = np.unique(v[starts], return_counts=True)
        stored = sum(r.page_location(c, rg).length for rg in range(r.num_row_groups))
        print(f"{c:18s} {counts.shape[0]:9d} {(counts.shape[0] - 1).bit_length():9d} {_entropy(counts):6.2f} "
              f"{starts.shape[0] / n:7.3f} {_entropy(run_counts) * starts.shape[0] / n:8.2f} "
              f"{8 * stored / n:7.2f} {8 * v.dtype.itemsize:6d}")


if __name__ == "__main__":
    main()
