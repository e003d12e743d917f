"""GPU-only vs CPU-only vs CPU+GPU co-processing on warm scans, in one process (issue 9's table).

    PYTHONPATH=src python scripts/coprocess_warm_table.py DB [--suite ssb] [--queries q1.1,q1.2,q1.3]
        [--repeat 5] [--threads N] [--modes gpu,cpu,cpu-hot,auto,on] [--budget-s 80] [--json OUT.json]

Per query and mode, after one warm-up run, the median of ``--repeat`` timed runs (the query only, not
the connect), each on a fresh connection as ``hetdb bench --mode warm`` does: the GPU's page cache is
empty, the process-wide pinned host tier and the OS page cache keep the data.

    gpu      device="gpu", gpu_coprocess="off" (GPU only: every page over the link)
    cpu      device="cpu" (CPU only, the same threads: pages from the OS page cache, decoded)
    cpu-hot  device="cpu" on one connection for every run (its decoded host page cache: the CPU's best)
    auto     device="gpu", gpu_coprocess="auto" (the cost model decides; cache/comodel.py)
    on       device="gpu", gpu_coprocess="on" (every steal succeeds: the test mode)
    split%K  device="gpu", gpu_coprocess="auto" with the split forced (coprocess_plan.FORCED_SPLIT):
             the back K row groups reserved for the CPU workers from the query's start, the GPU's
             early scan primes the rest; what the workers leave the GPU takes at its end
    MODE@N   MODE with ``threads`` N instead of ``--threads`` (e.g. auto@8: 7 CPU workers)
    MODE-first  MODE with an "auto" query's CPU workers started once the early fact scan's first
             delivery is queued, not all of them (coprocess_plan.WORKERS_AFTER "first"); MODE-fact:
             when the fact pipeline begins ("fact"); MODE-queued: once the fused pipeline has queued the
             GPU's share ("queued"); MODE-primed: once the early scan is primed (the default: "first")
    MODE-si  MODE with the interpreter's switch interval at 0.5 ms instead of 5 ms while it runs (does
             the GPU's feeder thread wait for the GIL behind the CPU workers?)
    MODE-rest   MODE with no reserved row group claimed by a worker: the GPU takes the reserved back
             at its end (what the split itself costs the GPU)
    MODE-loadN  MODE with N threads beside each timed run that stream memory in one Numba nogil call
             each (no interpreter lock held): what CPU workers that never return to Python would cost
             the GPU's copies and feeder through memory bandwidth and cores; their GB/s is reported
    MODE-gil MODE with a thread that sleeps 100 us at a time during each timed run and measures how
             late it runs again (the interpreter lock and a free core: what the GPU's feeder thread
             meets after each call that releases the lock): its mean and p99 lateness in us, and
             the share of the run a thread that wants the lock that often spends waiting for it

Answers are compared with the first mode's. After the timed runs of "auto" and "on", one EXPLAIN
ANALYZE on a fresh connection gives the co-processing line (row groups each side took, the CPU's and
GPU's time per row group, the set-up) or why it did not co-process. Rates measured by earlier runs
carry over (process-wide, as in a long-lived process). The last lines: per query the best of the
GPU-only and CPU-only times, auto against it, and the geometric means.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import hetdb  # noqa: E402
from hetdb.bench.suites import load_queries  # noqa: E402

MODES = {
    "gpu": ("gpu", {"gpu_coprocess": "off"}),
    "cpu": ("cpu", {}),
    "cpu-hot": ("cpu", {}),
    "auto": ("gpu", {"gpu_coprocess": "auto"}),
    "on": ("gpu", {"gpu_coprocess": "on"}),
    "split": ("gpu", {"gpu_coprocess": "auto"}),
}


def _timeline(stats: dict) -> str:
    """The co-processing timeline of a run (Result.stats['coprocess'], ms from the query's start),
    short: the CPU workers' morsels (first start, last end, thread CPU / wall), the feeder's scan
    loop (start, wall, its thread CPU), the GPU's wait at the end, the reserved back of the scan."""
    out = []
    for co in stats.get("coprocess") or []:
        ms = co.get("morsels") or []
        if not ms and not co.get("feeder"):
            continue
        line = f"cpu {co['cpu_row_groups']}/{co['gpu_row_groups']} w{co['workers']} res {co['reserved']}"
        if "started_ms" in co:
            line += f" start {co['started_ms']:.1f}"
        if ms:
            wall = sum(m[1] - m[0] for m in ms)
            cpu = sum(m[3] for m in ms)
            loop = sum(m[4] for m in ms)
            rgs = max(1, sum(m[2] for m in ms))
            line += (f" morsels {min(m[0] for m in ms):.1f}-{max(m[1] for m in ms):.1f} ms "
                     f"({wall / rgs:.2f} ms/rg, loop {loop / rgs:.2f}, python {1e3 * max(0.0, cpu - loop) / rgs:.0f} us/rg, "
                     f"cpu/wall {cpu / max(wall, 1e-9):.2f})")
        f = co.get("feeder")
        if f:
            line += f" feeder {f['began_ms']:.1f}+{f['wall_ms']:.1f} (cpu {f['thread_cpu_ms']:.1f})"
        if "compiled_share" in co:
            line += f" compiled {'yes' if co['compiled_share'] else 'no'} ({co['share_ms']:.2f} ms)"
        if "gpu_end_ms" in co:
            line += f" gpu_end {co['gpu_end_ms']:.1f}"
        line += f" endwait {co['end_wait_ms']:.2f}"
        out.append(line)
    return "; ".join(out)


def _notes(plan: str) -> list[str]:
    return sorted({m.group(0) for m in re.finditer(
        r"\((?:CPU\+GPU co-processing|not co-processed)(?:[^()]|\([^()]*\))*\)", plan)})


def _rates() -> dict[str, dict[str, float]]:
    """What the cost model has measured per co-processed pipeline (cache/rates.py): one CPU
    worker's and the GPU's ms per page, the GPU's slowdown per CPU worker, the last set-up (ms)."""
    from hetdb.cache.rates import shared_rates

    r = shared_rates()
    keys = sorted({k for k in [*r.cpu, *r.gpu, *r.slowdown, *r.setup] if k.startswith("coprocess:")})
    out = {}
    for k in keys:
        got: dict[str, float] = {}
        if k in r.cpu:
            got["cpu_ms_per_page"] = 1e3 / r.cpu[k].pages_per_s
            got["cpu_observations"] = r.cpu[k].observations
        if k in r.gpu:
            got["gpu_ms_per_page"] = 1e3 / r.gpu[k].pages_per_s
            got["gpu_observations"] = r.gpu[k].observations
        if k in r.slowdown:
            got["gpu_slowdown_per_worker"] = r.slowdown[k]
        if k in r.setup:
            got["setup_ms"] = r.setup[k] * 1e3
        out[k] = got
    return out


class GilLag:
    """A thread that sleeps ``nap`` s at a time (releasing the interpreter lock) and records how late it
    runs again: the wait for the lock and for a core a thread that wants the lock every ``nap`` s meets."""

    def __init__(self, nap: float = 100e-6) -> None:
        import threading

        self.nap, self.lags, self._stop = nap, [], threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="gil-lag")

    def _loop(self) -> None:
        nap, lags, stop, clock, sleep = self.nap, self.lags, self._stop, time.perf_counter, time.sleep
        while not stop.is_set():
            t0 = clock()
            sleep(nap)
            lags.append(clock() - t0 - nap)

    def __enter__(self) -> GilLag:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        lags = sorted(self.lags)
        if not lags:
            return "gil-lag -"
        late = sum(lags)
        return (f"gil-lag mean {statistics.fmean(lags) * 1e6:.0f} us p99 {lags[int(0.99 * (len(lags) - 1))] * 1e6:.0f} "
                f"max {lags[-1] * 1e6:.0f} waiting {late / (late + self.nap * len(lags)):.0%}")


def _run(con, sql: str, runs: list[str] | None = None) -> tuple[float, list]:
    """(wall seconds, rows) of ``sql``; appends to ``runs`` what co-processing did in the run, short:
    ``co 12/80`` (row groups on the CPU / on the GPU), ``gpu`` (not co-processed) or ``-``."""
    t0 = time.perf_counter()
    res = con.sql(sql)
    rows = res.fetchall()
    wall = time.perf_counter() - t0
    if runs is not None:
        fused = " ".join(getattr(o, "fused", "") for o in dict(res.stats or {}).get("operators", {}).values())
        m = re.search(r"co-processing: (\d+) row groups on (\d+) CPU workers, (\d+) on the GPU", fused)
        runs.append(f"co {m.group(1)}/{m.group(3)} w{m.group(2)}" if m else "gpu" if "not co-processed" in fused else "-")
        tl = _timeline(dict(res.stats or {}))
        if tl:
            runs[-1] += f" <{tl}>"
    return wall, rows


_GIL = [False]  # (MODE-gil: the timed runs with a GilLag beside them)
_LOAD = [0]  # (MODE-loadN: the timed runs with N MemoryLoad threads beside them)


def _burner():
    if "burn" not in _BURN:
        from numba import njit

        from hetdb.backend.cpu.atomics import atomic_load

        @njit(nogil=True, cache=False)
        def burn(a, stop):  # pragma: no cover - runs compiled
            s = 0
            passes = 0
            while atomic_load(stop, 0) == 0:  # (a plain read would be hoisted out of the loop)
                for j in range(a.shape[0]):
                    s += a[j]
                passes += 1
            return passes, s

        _BURN["burn"] = burn
    return _BURN["burn"]


_BURN: dict = {}


class MemoryLoad:
    """``n`` threads, each summing its own 64 MiB array over and over in one Numba ``nogil`` call
    until told to stop: memory traffic and busy cores without the interpreter lock."""

    def __init__(self, n: int) -> None:
        import threading

        import numpy as np

        burn = _burner()
        self.n, self.burn = n, burn
        self.arrays = [np.ones(8 << 20, np.int64) for _ in range(n)]
        self.stop = np.zeros(1, np.int64)
        burn(self.arrays[0][:16], np.ones(1, np.int64))  # (compiled before any timed run)
        self.passes = [0] * n
        self.threads = [threading.Thread(target=self._one, args=(i,), daemon=True) for i in range(n)]
        self.t0 = self.t1 = 0.0

    def _one(self, i: int) -> None:
        self.passes[i] = self.burn(self.arrays[i], self.stop)[0]

    def __enter__(self) -> MemoryLoad:
        self.t0 = time.perf_counter()
        for t in self.threads:
            t.start()
        time.sleep(0.002)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop[0] = 1
        for t in self.threads:
            t.join()
        self.t1 = time.perf_counter()

    def summary(self) -> str:
        gb = sum(self.passes) * self.arrays[0].nbytes / 1e9 if self.arrays else 0.0
        return f"load {self.n} threads {gb / max(self.t1 - self.t0, 1e-9):.1f} GB/s"


def measure(db: str, sql: str, mode: str, repeat: int, threads: int) -> tuple[list[float], list, list[str]]:
    """(timed walls, the answer, the co-processing notes) of ``sql`` in ``mode``."""
    for when in ("first", "fact", "queued", "primed"):
        if mode.endswith(f"-{when}"):
            from hetdb.exec import coprocess_plan

            before, coprocess_plan.WORKERS_AFTER = coprocess_plan.WORKERS_AFTER, when
            try:
                return measure(db, sql, mode.removesuffix(f"-{when}"), repeat, threads)
            finally:
                coprocess_plan.WORKERS_AFTER = before
    if mode.endswith("-gil"):
        before = _GIL[0]
        _GIL[0] = True
        try:
            return measure(db, sql, mode[:-4], repeat, threads)
        finally:
            _GIL[0] = before
    if mode.endswith("-rest"):  # the split, but no worker claims: the GPU takes the back at its end
        from hetdb.cache.coscan import SharedScan

        before = SharedScan._fits_reserved
        SharedScan._fits_reserved = lambda self, per: False
        try:
            return measure(db, sql, mode[:-5], repeat, threads)
        finally:
            SharedScan._fits_reserved = before
    m = re.search(r"-load(\d+)$", mode)
    if m:
        before = _LOAD[0]
        _LOAD[0] = int(m.group(1))
        try:
            return measure(db, sql, mode[:m.start()], repeat, threads)
        finally:
            _LOAD[0] = before
    if mode.endswith("-si"):
        interval = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)
        try:
            return measure(db, sql, mode[:-3], repeat, threads)
        finally:
            sys.setswitchinterval(interval)
    mode, _, n = mode.partition("@")
    threads = int(n) if n else threads
    if "%" in mode:
        from types import SimpleNamespace as NS

        from hetdb.exec import coprocess_plan

        mode, _, k = mode.partition("%")
        coprocess_plan.FORCED_SPLIT = (coprocess_plan.cpu_workers(NS(options=NS(threads=threads))), int(k))
        try:
            return measure(db, sql, f"{mode}@{threads}", repeat, threads)
        finally:
            coprocess_plan.FORCED_SPLIT = None
    device, options = MODES[mode]
    options = {**options, "threads": threads}
    walls = []
    if mode == "cpu-hot":
        with hetdb.connect(db, device=device, **options) as con:
            _, rows = _run(con, sql)
            for _ in range(repeat):
                walls.append(_run(con, sql)[0])
        return walls, rows, []
    runs: list[str] = []
    for i in range(repeat + 1):
        with hetdb.connect(db, device=device, **options) as con:
            if i and _LOAD[0]:
                with MemoryLoad(_LOAD[0]) as load:
                    wall, got = _run(con, sql, runs)
                runs[-1] += f" [{load.summary()}]"
            elif i and _GIL[0]:
                with GilLag() as lag:
                    wall, got = _run(con, sql, runs)
                runs[-1] += f" [{lag.summary()}]"
            else:
                wall, got = _run(con, sql, runs)
        if i == 0:
            rows = got
            from hetdb.exec.coprocess_plan import wait_prepared

            wait_prepared()  # (a CPU side the warm-up run set up on a thread of its own)
        else:
            walls.append(wall)
    notes = []
    if mode in ("auto", "on", "split"):
        with hetdb.connect(db, device=device, **options) as con:
            notes = _notes(con.explain(sql, analyze=True))
        notes.insert(0, "[" + "; ".join(runs) + "]")  # (what each run did, the warm-up run first)
    elif _GIL[0] or _LOAD[0]:
        notes = ["[" + "; ".join(runs[1:]) + "]"]
    return walls, rows, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--suite", default="ssb")
    ap.add_argument("--queries", default="q1.1,q1.2,q1.3")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--modes", default="gpu,cpu,cpu-hot,auto,on")
    ap.add_argument("--budget-s", type=float, default=0.0, help="start no further query after this many seconds")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    modes = args.modes.split(",")
    unknown = [m for m in modes if m.removesuffix("-first").removesuffix("-fact").removesuffix("-queued").removesuffix("-primed")
               .removesuffix("-rest").removesuffix("-si").removesuffix("-gil").split("-load")[0]
               .partition("@")[0].partition("%")[0] not in MODES]
    if unknown:
        ap.error(f"unknown modes {unknown}: use {', '.join(MODES)}")
    queries = load_queries(args.suite, args.queries.split(","))
    print(f"db={args.db} threads={args.threads} repeat={args.repeat} modes={','.join(modes)}", flush=True)
    began = time.perf_counter()
    table: dict[str, dict[str, float]] = {}
    report: dict = {"db": args.db, "threads": args.threads, "repeat": args.repeat, "runs": {}}
    for q in queries:
        if args.budget_s and time.perf_counter() - began > args.budget_s:
            print(f"{q.name}: skipped (past --budget-s {args.budget_s:g})", flush=True)
            continue
        answer = None
        for mode in modes:
            walls, rows, notes = measure(args.db, q.sql, mode, args.repeat, args.threads)
            rows = sorted(rows, key=repr)
            answer = rows if answer is None else answer
            ms = statistics.median(walls) * 1e3
            table.setdefault(q.name, {})[mode] = ms
            same = rows == answer
            report["runs"][f"{q.name} {mode}"] = {"median_ms": ms, "walls_ms": [w * 1e3 for w in walls],
                                                  "same_answer": same, "notes": notes}
            print(f"{q.name} {mode:7s} {ms:8.2f} ms (runs {', '.join(f'{w * 1e3:.1f}' for w in walls)})"
                  f"{'' if same else ' ANSWER DIFFERS'} {' '.join(notes)}", flush=True)
    # (every run of a single device counts, e.g. gpu and gpu@16 before and after the others: a
    # process's later runs of the same mode are faster, s17's checkpoint: q1.1 16.46 then 15.37 ms)
    singles = [m for m in modes if m.partition("@")[0] in ("gpu", "cpu", "cpu-hot") and not m.endswith(("-si", "-gil", "-rest")) and "-load" not in m]
    print("\nquery  " + " ".join(f"{m:>9s}" for m in modes) + "  best-single  auto/best  fastest")
    ratios = []
    for name, got in table.items():
        best = min((got[m], m) for m in singles) if singles else (math.nan, "-")
        fastest = min(got, key=lambda m: got[m])
        ratio = got["auto"] / best[0] if "auto" in got and singles else math.nan
        if ratio == ratio:
            ratios.append(ratio)
        print(f"{name:6s} " + " ".join(f"{got.get(m, math.nan):9.2f}" for m in modes)
              + f"  {best[0]:8.2f} {best[1]:>3s} {ratio:9.3f}  {fastest}")
    if table:
        geo = {m: math.exp(statistics.fmean(math.log(t[m]) for t in table.values())) for m in modes}
        print("geomean " + " ".join(f"{geo[m]:9.2f}" for m in modes)
              + (f"  auto/best-single geomean {math.exp(statistics.fmean(math.log(r) for r in ratios)):.3f}"
                 if ratios else ""))
        report["geomean_ms"] = geo
    report["table_ms"] = table
    report["rates"] = _rates()
    for key, got in report["rates"].items():
        print(f"rates {key}: " + ", ".join(f"{k} {v:.4g}" for k, v in got.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
