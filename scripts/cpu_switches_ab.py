"""A/B of the CPU engine's session-11 changes in one process: each query's best time with every
change at its default, then with one change switched the other way at a time (the opt-in ones, on:
the glibc thresholds, the bushy join order, the probes' key memo; the others, off).

Usage: python scripts/cpu_switches_ab.py DB THREADS [QUERY ...]   (TPC-H queries; default a set)
       AB_CONFIGS=all,one-merge,all-again python scripts/cpu_switches_ab.py ...   (only those configurations)
       AB_CONFIGS=all,small_sink_rows=32k+small_source_rows=0 ...   (a configuration may be thresholds of
       backend/cpu/tuning.py, name=value joined by '+', the values as HETDB_CPU_TUNE takes them)
AB_SUITE (default tpch; ssb: SSB queries, DB an SSB database) names the queries' suite; AB_REPEAT (default 3) timed runs per query; AB_ROUNDS (default 1) passes over the configurations, in turn
(best per query over them: drift of a shared machine spreads over every configuration), no new round or
configuration after the first round once AB_SECONDS have passed.

Each configuration gets fresh connections (plans are cached per connection); per query one warm-up
and three timed runs, the best printed in ms, then per configuration the geomean of its times
against "all" (> 1: that configuration's switch made those queries slower; < 1: faster).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable

import hetdb
from hetdb.backend.cpu import heap, join_filter, tuning
from hetdb.backend.cpu.codegen import pipeline_py
from hetdb.bench.suites import load_queries
from hetdb.exec import compiled_cpu, compiled_cpu_kernels
from hetdb.exec.operators import aggregate
from hetdb.plan import cardinality
from hetdb.plan.passes import bushy_joins

DEFAULT_QUERIES = ["q02", "q05", "q07", "q08", "q09", "q11", "q14", "q15", "q17", "q18", "q21"]


def _setter(module, name: str, value) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        old = getattr(module, name)
        setattr(module, name, value)
        compiled_cpu_kernels._SPEC_KERNELS.clear()  # (kernels generated under the other setting)
        return lambda: (setattr(module, name, old), compiled_cpu_kernels._SPEC_KERNELS.clear())
    return apply


def _tuned(spec: str) -> Callable[[], Callable[[], None]]:
    """Thresholds of backend/cpu/tuning.py (``name=value+name=value``) for one configuration."""
    changes = tuning.parse(spec.replace("+", ","))

    def apply() -> Callable[[], None]:
        old = dict(tuning.values)
        tuning.values.update(changes)
        return lambda: tuning.values.update(old)
    return apply


# every session-12 threshold at its session-11 value (backend/cpu/tuning.py names them)
S11 = ("parallel_merge_rows=off+direct_parallel_rows=off+parallel_matrix_rows=off+nogil_zero_cells=off"
       "+result_morsel_rows=32k+result_share_threads=0+small_sink_rows=32k+small_source_rows=0"
       "+small_filter_keys=0")


def _hugepages_on() -> Callable[[], None]:
    """backend/cpu/hugepages.py's hook for Numba's large arrays (HETDB_HUGEPAGES=1); it cannot be taken
    out again: the configurations after this one keep it."""
    from hetdb.backend.cpu import hugepages

    print(f"hugepages hook installed: {hugepages.install()}", flush=True)
    return lambda: None


def _heap_on() -> Callable[[], None]:
    heap.set_thresholds(heap.MMAP_THRESHOLD, heap.TRIM_THRESHOLD)
    return lambda: heap.set_thresholds(heap.DEFAULT_THRESHOLD, heap.DEFAULT_THRESHOLD)


# name -> (disabled optimizer passes, switch applied before the connections open)
CONFIGS: dict[str, tuple[list[str], Callable[[], Callable[[], None]] | None]] = {
    "all": ([], None),
    "bushy-on": ([], _setter(bushy_joins, "ENABLED", True)),  # (off by default since session 11)
    "no-single-pushdown": (["single_join_pushdown"], None),
    "old-ndv": ([], _setter(cardinality, "REFINE_NDV", False)),
    "no-run-pieces": ([], _setter(aggregate, "RUN_PIECES", False)),
    "key-memo-on": ([], _setter(pipeline_py, "KEY_MEMO", True)),  # (off by default since session 11)
    "no-cluster": ([], _tuned("cluster_payload_rows=off")),  # (session 14: payload in key order)
    "no-narrow": ([], _tuned("narrow_scan_rows=off")),  # (session 15: narrow copies of integer pages)
    "bitmap-64": ([], _setter(join_filter, "_BITMAP_BITS_PER_ROW", 64)),
    "residual-ops": ([], _setter(compiled_cpu, "_RESIDUAL_BUILD_ROWS", 0)),
    "heap-on": ([], _heap_on),
    "one-merge": ([], _tuned("parallel_merge_rows=off")),  # (session 12: partitioned final merge)
    "one-pass-direct": ([], _tuned("direct_parallel_rows=off")),  # (session 12: direct builds by ranges)
    "s11-thresholds": ([], _tuned(S11)),  # (every session-12 threshold as before it)
    "all-again": ([], None),  # (the first configuration again: order effects and noise)
    "hugepages-on": ([], _hugepages_on),  # (stays installed: list it last)
}


def _run_config(db: str, threads: int, off: list[str], names: list[str], qs: dict, repeat: int) -> dict[str, float]:
    """Each query's best of ``repeat`` timed runs (ms) after one warm-up, on a fresh connection."""
    row: dict[str, float] = {}
    with hetdb.connect(db, device="cpu", threads=threads, disabled_passes=off) as con:
        for n in names:
            sql = qs[n].sql
            con.sql(sql).arrow()
            best = math.inf
            for _ in range(repeat):
                t0 = time.perf_counter()
                con.sql(sql).arrow()
                best = min(best, time.perf_counter() - t0)
            row[n] = best * 1e3
    return row


# configurations whose switch cannot be taken back (glibc's dynamic thresholds, the huge-page hook): the
# rounds end with the one they are in
STICKY = {"heap-on", "hugepages-on"}


def main() -> None:
    db, threads = sys.argv[1], int(sys.argv[2])
    names = sys.argv[3:] or DEFAULT_QUERIES
    wanted = [c for c in os.environ.get("AB_CONFIGS", "").split(",") if c]
    configs = {c: CONFIGS[c] if c in CONFIGS else ([], _tuned(c)) for c in wanted} if wanted else CONFIGS
    repeat = int(os.environ.get("AB_REPEAT", "3"))
    rounds = int(os.environ.get("AB_ROUNDS", "1"))
    deadline = time.monotonic() + float(os.environ.get("AB_SECONDS", "inf"))
    qs = {q.name: q for q in load_queries(os.environ.get("AB_SUITE", "tpch"), None)}
    times: dict[str, dict[str, float]] = {}
    for r in range(rounds):
        if r and time.monotonic() > deadline:
            print(f"(AB_SECONDS reached: {r} rounds)", flush=True)
            break
        if r and any(c in STICKY for c in times):
            print(f"({', '.join(c for c in times if c in STICKY)} stays set: {r} rounds)", flush=True)
            break
        for config, (off, switch) in configs.items():
            if r and time.monotonic() > deadline:
                break
            undo = switch() if switch is not None else None
            try:
                row = _run_config(db, threads, off, names, qs, repeat)
            finally:
                if undo is not None:
                    undo()
            best = times.setdefault(config, {})
            for n, t in row.items():
                best[n] = min(best.get(n, math.inf), t)
            print(f"{config:20s} " + " ".join(f"{n} {row[n]:7.1f}" for n in names), flush=True)
            if not r and config == next(iter(configs)):
                import numba

                print(f"(numba threading layer {numba.threading_layer()}, OMP_WAIT_POLICY="
                      f"{os.environ.get('OMP_WAIT_POLICY')}, GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')})",
                      flush=True)
    if rounds > 1:
        print("best over the rounds:")
        for config, row in times.items():
            print(f"{config:20s} " + " ".join(f"{n} {row[n]:7.1f}" for n in names))
    first = "all" if "all" in times else next(iter(times))
    base = times[first]
    for config, row in times.items():
        ratio = math.exp(sum(math.log(row[n] / base[n]) for n in names) / len(names))
        worst = max(names, key=lambda n: row[n] / base[n])
        print(f"{config:20s} geomean time vs {first} {ratio:5.2f}  (most: {worst} {row[worst] / base[worst]:.2f})")


if __name__ == "__main__":
    main()
