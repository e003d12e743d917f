"""Where a cold GPU query's time goes: the disk reads' timeline against the query's phases.

    PYTHONPATH=src python scripts/cold_timeline.py DB [--suite ssb] [--queries q1.1,q4.3] [--runs 1]
        [--variant NAME:k=v,@module.ATTR=value ...] [--disk-mb 256] [--disk-matrix] [--bins 25]

A cold run is what ``hetdb bench --mode cold`` times: the OS page cache dropped (``drop_caches`` as
root, else the database's files evicted), the process's pinned host tier emptied, a fresh connection.
First the disk's read ceiling is measured as the bench measures it (a fresh 256 MiB file, O_DIRECT,
8 threads, 1 to 8 MiB blocks; ``--disk-matrix`` adds a 1 GiB file read with page-sized and larger
blocks, 8 to 32 threads). Then per query one untimed cold run (compiles the kernels) and per
variant (interleaved, same process, so A/B is fair) ``--runs`` instrumented cold runs, each reporting

    e2e      ms from ``con.sql`` to the Arrow result, the disk bytes read (every ``os.preadv``, the
             engine's O_DIRECT and buffered reads alike) and their rate against the ceiling
    first    ms from the query's start to the first read's start; ``last``: the last read's end,
             ``tail``: ms from it to the query's end
    busy     ms with at least one read in flight (``idle``: without), the rate while busy, the mean
             reads in flight while busy, the mean read size and its syscall latency
    spans    the GPU streamer's read tasks (stream_io.PageReads._read_span: a span of adjacent pages
             read as one request, then each page's CRC), their count and pages, median ms, and the
             share of their time spent outside ``preadv`` (CRC, Python, waiting for the lock)
    gaps     the disk's idle gaps over 1 ms, each with the host phases it overlaps
    host     phases: table opens (manifest loads), dictionary loads, pipelines (``p<id>:<table>``), the
             early scan's start, deliveries (first and last host submit of each scan's deliveries)
    bins     per ``--bins`` equal slices of the query: reads in flight (mean) and MB/s

Variants: connection options (``hetdb bench --set`` syntax) and ``@module.ATTR=value`` switches set on
the module before the variant's runs and restored after (e.g. ``@hetdb.io.spans.MAX_SPAN_BYTES=0``: page by page).
The summary at the end has one line per query and variant (median over runs) and the geomean of
each variant's share of the ceiling.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import math
import os
import statistics
import sys
import threading
import time

from scripts_common import parse_options

import hetdb
from hetdb.bench.suites import load_queries


class Reads:
    """Every ``os.preadv`` (start, end, bytes, O_DIRECT, thread) and the streamer's page reads while ``on``."""

    def __init__(self) -> None:
        import fcntl

        from hetdb.backend.gpu import stream_io

        self.on = False
        self.reads: list[tuple] = []
        self.pages: list[tuple] = []   # streamer's read tasks: (start, end, bytes, table, pages, preadv seconds inside)
        self.phases: list[tuple] = []  # (what, start, end)
        self.deliveries: list[tuple] = []  # (host t, table)
        orig_preadv = os.preadv
        local = threading.local()
        direct_flag = getattr(os, "O_DIRECT", 0)

        def preadv(fd, buffers, offset, *rest):
            if not self.on:
                return orig_preadv(fd, buffers, offset, *rest)
            t = time.perf_counter()
            n = orig_preadv(fd, buffers, offset, *rest)
            t1 = time.perf_counter()
            direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & direct_flag) if direct_flag else False
            self.reads.append((t, t1, n, direct, threading.current_thread().name))
            local.inside = getattr(local, "inside", 0.0) + (t1 - t)
            return n

        os.preadv = preadv
        orig_span = stream_io.PageReads._read_span

        def read_span(streamer, items, wait_for):
            if not self.on:
                return orig_span(streamer, items, wait_for)
            local.inside = 0.0
            t = time.perf_counter()
            try:
                return orig_span(streamer, items, wait_for)
            finally:
                self.pages.append((t, time.perf_counter(), sum(p.location.padded_length for p, _, _ in items),
                                   streamer.reader.name, len(items), local.inside))

        stream_io.PageReads._read_span = read_span
        self._time_phases()

    def _time_phases(self) -> None:
        from hetdb.backend.gpu import batch
        from hetdb.exec import early_scan, engine
        from hetdb.storage import reader

        def timed(name_of, fn):
            def wrapper(*a, **kw):
                if not self.on:
                    return fn(*a, **kw)
                t = time.perf_counter()
                try:
                    return fn(*a, **kw)
                finally:
                    self.phases.append((name_of(*a, **kw), t, time.perf_counter()))
            return wrapper

        def pipe_name(ctx, pipe, *_):
            src = getattr(getattr(pipe.source, "scan", None), "table", None) or type(pipe.source).__name__
            return f"p{pipe.pid}:{src}"

        engine.run_pipeline = timed(pipe_name, engine.run_pipeline)
        early_scan.start_early_scans = timed(lambda *a, **k: "early", early_scan.start_early_scans)
        reader.load_manifest = timed(lambda d, t: f"open:{t}", reader.load_manifest)
        reader.TableReader.dictionary = timed(lambda r, c: f"dict:{c}", reader.TableReader.dictionary)
        orig_delivery = batch.run_delivery

        def run_delivery(plan, *a, **kw):
            if self.on:
                self.deliveries.append((time.perf_counter(), frozenset(c.name for c in plan.columns)))
            return orig_delivery(plan, *a, **kw)

        batch.run_delivery = run_delivery

    def clear(self) -> None:
        self.reads, self.pages, self.phases, self.deliveries = [], [], [], []


def cold_state(db: str) -> str:
    from hetdb.bench.environment import drop_os_cache
    from hetdb.cache.host_cache import clear_shared_host_cache

    clear_shared_host_cache()
    return drop_os_cache([db])["method"]


def union_busy(intervals: list[tuple[float, float]]) -> tuple[float, list[tuple[float, float]]]:
    """(seconds covered by the intervals, the gaps between them inside their span)."""
    busy, gaps = 0.0, []
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
                gaps.append((cur_e, s))
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return busy, gaps


def report(rd: Reads, t0: float, t_end: float, ceiling: float, bins: int) -> tuple[str, dict]:
    def ms(t: float) -> float:
        return (t - t0) * 1e3

    e2e = t_end - t0
    reads = [r for r in rd.reads if r[2] > 0]
    nbytes = sum(r[2] for r in reads)
    rate = nbytes / e2e if e2e > 0 else 0.0
    out = {"e2e_ms": e2e * 1e3, "bytes": nbytes, "gbs": rate / 1e9, "share": rate / ceiling if ceiling else 0.0}
    head = (f"e2e {e2e * 1e3:.1f} ms, disk {nbytes / 1e6:.1f} MB in {len(reads)} reads = {rate / 1e9:.2f} GB/s "
            f"= {100 * out['share']:.0f}% of {ceiling / 1e9:.2f}")
    if not reads:
        return head + " (no reads)", out
    direct = sum(r[2] for r in reads if r[3])
    first, last = min(r[0] for r in reads), max(r[1] for r in reads)
    busy, gaps = union_busy([(r[0], r[1]) for r in reads])
    inflight = sum(r[1] - r[0] for r in reads) / busy if busy > 0 else 0.0
    lat = statistics.median((r[1] - r[0]) * 1e3 for r in reads)
    threads = len({r[4] for r in reads})
    out.update(first_ms=ms(first), tail_ms=(t_end - last) * 1e3, idle_ms=(e2e - busy) * 1e3, inflight=inflight)
    lines = [head + f" ({100 * direct / nbytes:.0f}% O_DIRECT)",
             f"  first read +{ms(first):.1f} ms, last read end {ms(last):.1f} (tail {(t_end - last) * 1e3:.1f} ms) | "
             f"busy {busy * 1e3:.1f} ms at {nbytes / busy / 1e9:.2f} GB/s, idle {(e2e - busy) * 1e3:.1f} ms "
             f"(before first {ms(first):.1f}, inside {sum(b - a for a, b in gaps) * 1e3:.1f}, after "
             f"{(t_end - last) * 1e3:.1f}) | in flight {inflight:.1f} mean while busy | read {nbytes / len(reads) / 1e6:.2f} "
             f"MB mean, {lat:.2f} ms median syscall | {threads} threads"]
    if rd.pages:
        page_ms = [(p[1] - p[0]) * 1e3 for p in rd.pages]
        outside = sum((p[1] - p[0]) - p[5] for p in rd.pages) / max(1e-12, sum(p[1] - p[0] for p in rd.pages))
        by_table: dict[str, list] = {}
        for p in rd.pages:
            got = by_table.setdefault(p[3], [0, 0, 0, p[0], p[1]])
            got[0] += 1
            got[1] += p[4]
            got[2] += p[2]
            got[3], got[4] = min(got[3], p[0]), max(got[4], p[1])
        fact = max(by_table, key=lambda t: by_table[t][2])  # (the table read the most: the fact scan's)
        out["fact_first_ms"] = ms(by_table[fact][3])
        tables = " ".join(f"{t} {n} spans {k} pages {b / 1e6:.1f} MB {ms(a):.1f}-{ms(e):.1f}"
                          for t, (n, k, b, a, e) in sorted(by_table.items(), key=lambda kv: kv[1][3]))
        lines.append(f"  spans: {len(rd.pages)}, median {statistics.median(page_ms):.2f} ms, "
                     f"{100 * outside:.0f}% outside preadv (CRC, Python) | {tables}")
    big = [(a, b) for a, b in ([(t0, first)] + gaps + [(last, t_end)]) if b - a > 1e-3]
    if big:
        def during(a: float, b: float) -> str:
            names = [w for w, s, e in rd.phases if s < b and e > a]
            return ",".join(dict.fromkeys(names)) or "-"
        lines.append("  disk idle > 1 ms: " + " ".join(f"{ms(a):.1f}-{ms(b):.1f}[{during(a, b)}]" for a, b in big[:16]))
    phases = sorted(rd.phases, key=lambda p: p[1])
    merged: list[list] = []
    for w, a, b in phases:  # (repeated short phases of one name: first start - last end, count)
        if merged and merged[-1][0] == w:
            merged[-1][2] = b
            merged[-1][3] += 1
        else:
            merged.append([w, a, b, 1])
    lines.append("  host: " + " ".join(f"{w}{'x' + str(n) if n > 1 else ''} {ms(a):.1f}-{ms(b):.1f}"
                                        for w, a, b, n in merged))
    if rd.deliveries:
        per: dict = {}
        for t, cols in rd.deliveries:
            got = per.setdefault(cols, [0, t, t])
            got[0] += 1
            got[2] = t
        lines.append("  deliveries (host submit): " + " ".join(
            f"[{','.join(sorted(c))[:40]}] x{n} {ms(a):.1f}-{ms(b):.1f}" for c, (n, a, b) in per.items()))
    width = e2e / bins
    fl, mb = [], []
    for i in range(bins):
        a, b = t0 + i * width, t0 + (i + 1) * width
        fl.append(sum(max(0.0, min(b, r[1]) - max(a, r[0])) for r in reads) / width)
        # bytes by the overlap of each read with the slice (a read's bytes spread over its duration)
        mb.append(sum(r[2] * max(0.0, min(b, r[1]) - max(a, r[0])) / max(r[1] - r[0], 1e-9) for r in reads)
                  / width / 1e6)
    lines.append(f"  per {width * 1e3:.1f} ms: in flight " + " ".join(f"{x:.1f}" for x in fl))
    lines.append(f"  per {width * 1e3:.1f} ms: MB/s " + " ".join(f"{x:.0f}" for x in mb))
    return "\n".join(lines), out


def parse_variant(text: str) -> tuple[str, dict, dict]:
    """(name, connection options, {(module, attr): value}) of ``NAME:k=v,@mod.ATTR=v``."""
    name, _, body = text.partition(":")
    items = [o for o in body.split(",") if o]
    switches = {}
    for o in [o for o in items if o.startswith("@")]:
        key, _, val = o[1:].partition("=")
        mod, _, attr = key.rpartition(".")
        try:
            value = ast.literal_eval(val)
        except (ValueError, SyntaxError):
            value = val
        switches[(mod, attr)] = value
    return name, parse_options([o for o in items if not o.startswith("@")]), switches


def apply(switches: dict) -> dict:
    """Set the switches; returns the previous values."""
    old = {}
    for (mod, attr), value in switches.items():
        m = importlib.import_module(mod)
        old[(mod, attr)] = getattr(m, attr)
        setattr(m, attr, value)
    return old


def disk_ceilings(db: str, size_mb: int, matrix: bool) -> float:
    from hetdb.bench.ceilings import _evict, _timed_parallel_read, _write_random_file, measure_disk_read

    got = measure_disk_read(db, size_mb << 20, threads=8)
    ceiling = got["bytes_per_s"] or 0.0
    by = " ".join(f"{int(b) >> 20} MiB {r / 1e9:.2f}" for b, r in got.get("by_block_bytes", {}).items())
    print(f"disk ceiling (as the bench): {ceiling / 1e9:.2f} GB/s {got.get('method')} 8 threads, {by} GB/s",
          flush=True)
    if matrix:
        import tempfile

        size = 1 << 30
        fd, path = tempfile.mkstemp(prefix=".hetdb-disk-matrix-", dir=db)
        try:
            _write_random_file(fd, size)
            cells = []
            for threads, block in ((8, 1_310_720 // 4096 * 4096), (16, 1_310_720 // 4096 * 4096),
                                   (8, 4 << 20), (8, 8 << 20), (16, 8 << 20), (32, 4 << 20), (32, 8 << 20)):
                _evict(path)
                sec = _timed_parallel_read(path, size // block * block, block, threads, direct=True)
                cells.append(f"{threads}x{block / 2**20:.2f}MiB {size // block * block / sec / 1e9:.2f}")
            print("disk matrix (1 GiB file, threads x block GB/s): " + " ".join(cells), flush=True)
        finally:
            os.close(fd)
            os.unlink(path)
    return ceiling


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default=None)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--disk-mb", type=int, default=256)
    ap.add_argument("--disk-matrix", action="store_true")
    ap.add_argument("--bins", type=int, default=25)
    ap.add_argument("--device", default="gpu", help="gpu (cpu: to try the probe where there is no GPU)")
    ap.add_argument("--no-warmup", action="store_true", help="no untimed run per query first")
    args = ap.parse_args()
    ceiling = disk_ceilings(args.db, args.disk_mb, args.disk_matrix)
    variants = [parse_variant(v) for v in (args.variant or ["base:"])]
    qs = load_queries(args.suite, args.queries.split(",") if args.queries else None)
    rd = Reads()
    results: dict[str, dict[str, list[dict]]] = {}

    def summary() -> str:
        lines = ["summary (median over runs): query variant e2e_ms MB GB/s share first_ms fact_first_ms tail_ms "
                 "idle_ms inflight"]
        shares: dict[str, list[float]] = {}
        for q, per in results.items():
            for v, outs in per.items():
                if not outs:
                    continue
                med = {k: statistics.median(o.get(k, 0.0) for o in outs) for k in set().union(*outs)}
                shares.setdefault(v, []).append(max(med["share"], 1e-9))
                lines.append(f"  {q} {v} {med['e2e_ms']:.1f} {med['bytes'] / 1e6:.1f} {med['gbs']:.2f} "
                             f"{100 * med['share']:.0f}% {med.get('first_ms', 0):.1f} {med.get('fact_first_ms', 0):.1f} "
                             f"{med.get('tail_ms', 0):.1f} "
                             f"{med.get('idle_ms', 0):.1f} {med.get('inflight', 0):.1f}")
        for v, s in shares.items():
            lines.append(f"  {v}: geomean share {100 * math.exp(sum(map(math.log, s)) / len(s)):.1f}% of the ceiling, "
                         f"lowest {100 * min(s):.0f}%, queries >= 90%: {sum(x >= 0.9 for x in s)}/{len(s)}")
        return "\n".join(lines)

    import signal

    def cut(*_: object) -> None:
        print(summary(), flush=True)
        os._exit(124)

    signal.signal(signal.SIGTERM, cut)
    for q in qs:
        results[q.name] = {}
        for k, (name, opts, switches) in enumerate(variants):
            old = apply(switches)
            try:
                if not args.no_warmup and k == 0:  # (kernels compiled, the host tier's memory grown)
                    cold_state(args.db)
                    con = hetdb.connect(args.db, device=args.device, create=False, **opts)
                    con.sql(q.sql).arrow()
                    con.close()
                outs = results[q.name].setdefault(name, [])
                for i in range(args.runs):
                    method = cold_state(args.db)
                    con = hetdb.connect(args.db, device=args.device, create=False, **opts)
                    rd.clear()
                    rd.on = True
                    t0 = time.perf_counter()
                    try:
                        r = con.sql(q.sql)
                        got = r.arrow()
                    finally:
                        t_end = time.perf_counter()
                        rd.on = False
                    con.close()
                    text, out = report(rd, t0, t_end, ceiling, args.bins)
                    outs.append(out)
                    print(f"{q.name} {name} run {i + 1} ({method}, {got.num_rows} rows): {text}", flush=True)
            finally:
                apply(old)
    print(summary(), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
