"""The CPU backend on compressed pages against plain pages, in one run: the same suite on two
databases written by `hetdb generate` with the default compression and with ``--compression none``.

Per query and database, REPEAT rounds (the databases alternate which goes first), each on a fresh
connection: the *first* run reads every page from disk (O_DIRECT: no OS cache) and decodes it into
the connection's host page cache; the *hot* runs (HOT of them) then read decoded pages from that
cache. Reported: medians, compressed / plain time, and the CPU time spent inside ``TableReader.decode``
(checksum + decode of the pages; thread CPU time, summed over the worker threads, so time a thread
waits for a core on a shared machine is left out) in the first runs, and the process CPU time of the
first and the hot runs (less disturbed than wall time by other work on a shared machine). Every query runs
once on each database before timing (compilation), and the two answers must be equal.

Usage: python scripts/codec_cpu_compare.py AUTO_DB NONE_DB SUITE [--threads 2] [--repeat 3] [--hot 3]
       [--queries q1.1,q2.1]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import hetdb
from hetdb.bench.suites import load_queries
from hetdb.storage.reader import TableReader

_lock = threading.Lock()
_decode_s = [0.0]
_decode = TableReader.decode


def _timed_decode(self, column, rg, raw):
    t0 = time.thread_time()
    try:
        return _decode(self, column, rg, raw)
    finally:
        with _lock:
            _decode_s[0] += time.thread_time() - t0


TableReader.decode = _timed_decode


def _rows(table) -> list:
    return sorted(map(repr, zip(*(c.to_pylist() for c in table.columns))))


def run(db: str, sql: str, threads: int, hot: int) -> tuple[float, float, float, float, float, list]:
    """(first-run s, median hot s, decode CPU s in the first run, median hot process CPU s, first-run
    process CPU s, rows)."""
    con = hetdb.connect(db, device="cpu", threads=threads)
    try:
        _decode_s[0] = 0.0
        t0, c0 = time.perf_counter(), time.process_time()
        out = con.sql(sql).arrow()
        first = time.perf_counter() - t0
        first_cpu = time.process_time() - c0
        decode = _decode_s[0]
        times, cpu = [], []
        for _ in range(hot):
            t0, c0 = time.perf_counter(), time.process_time()
            con.sql(sql).arrow()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        return first, statistics.median(times), decode, statistics.median(cpu), first_cpu, _rows(out)
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("auto_db")
    ap.add_argument("none_db")
    ap.add_argument("suite")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hot", type=int, default=3)
    ap.add_argument("--queries")
    args = ap.parse_args()
    queries = load_queries(args.suite, args.queries.split(",") if args.queries else None)
    dbs = {"compressed": args.auto_db, "plain": args.none_db}
    print(f"{args.suite}, {args.threads} threads, {args.repeat} rounds of (fresh connection: first run + "
          f"median of {args.hot} hot runs), medians in ms")
    print(f"{'query':6s} {'first comp':>10s} {'plain':>7s} {'ratio':>6s}  {'first CPU comp':>14s} {'plain':>6s}  {'decode CPU comp':>15s} {'plain':>6s}   "
          f"{'hot comp':>8s} {'plain':>7s} {'ratio':>6s}   {'hot CPU comp':>12s} {'plain':>7s} {'ratio':>6s}")
    firsts: dict[str, list[float]] = {k: [] for k in dbs}
    hots: dict[str, list[float]] = {k: [] for k in dbs}
    hot_cpu: dict[str, list[float]] = {k: [] for k in dbs}
    first_cpu: dict[str, list[float]] = {k: [] for k in dbs}
    for q in queries:
        answers = {k: run(db, q.sql, args.threads, 1)[5] for k, db in dbs.items()}
        if answers["compressed"] != answers["plain"]:
            raise AssertionError(f"{q.name}: compressed and plain answers differ")
        res: dict[str, list[tuple]] = {k: [] for k in dbs}
        for i in range(args.repeat):
            for k in (list(dbs) if i % 2 == 0 else list(dbs)[::-1]):
                res[k].append(run(dbs[k], q.sql, args.threads, args.hot)[:5])
        med = {k: [statistics.median(r[j] for r in v) * 1e3 for j in range(5)] for k, v in res.items()}
        for k in dbs:
            firsts[k].append(med[k][0])
            hots[k].append(med[k][1])
            hot_cpu[k].append(med[k][3])
            first_cpu[k].append(med[k][4])
        c, p = med["compressed"], med["plain"]
        print(f"{q.name:6s} {c[0]:10.1f} {p[0]:7.1f} {c[0] / p[0]:6.2f}  {c[4]:14.1f} {p[4]:6.1f}  {c[2]:15.1f} {p[2]:6.1f}   "
              f"{c[1]:8.1f} {p[1]:7.1f} {c[1] / p[1]:6.2f}   {c[3]:12.1f} {p[3]:7.1f} {c[3] / p[3]:6.2f}", flush=True)
    geo = {k: [statistics.geometric_mean(x[k]) for x in (firsts, hots, hot_cpu, first_cpu)] for k in dbs}
    c, p = geo["compressed"], geo["plain"]
    print(f"{'geomean':6s} {c[0]:10.1f} {p[0]:7.1f} {c[0] / p[0]:6.2f}  {c[3]:14.1f} {p[3]:6.1f}  {'':15s} {'':6s}   {c[1]:8.1f} "
          f"{p[1]:7.1f} {c[1] / p[1]:6.2f}   {c[2]:12.1f} {p[2]:7.1f} {c[2] / p[2]:6.2f}")


if __name__ == "__main__":
    main()
