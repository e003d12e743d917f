"""Where the window suite's time goes: each query of ``hetdb bench window`` (w1..w7) timed on one
device after a warm-up, its EXPLAIN ANALYZE, and (``--phases``) the inclusive time of every window
kernel and driver step: the functions of backend/cpu/window*, exec/window_array and the operator's
sort/bounds/function steps, summed over all threads that call them (on a GPU each step waits for
the device, so its time is its kernels' time).

    python3 scripts/window_probe.py DB [--device cpu|gpu] [--threads N] [--queries w3,w6] [--repeat 3] [--phases]
                                       [--option cpu_compile=0 ...] [--no-hugepage]
"""

from __future__ import annotations

import argparse
import functools
import threading
import time
from collections import defaultdict
from pathlib import Path

import hetdb

QUERIES = Path(__file__).resolve().parent.parent / "src/hetdb/bench/queries/window"

_lock = threading.Lock()
_spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
_sync: list = []  # on a GPU: the device synchronisation each timer waits for (kernels run async)


def _timed(name: str, fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            for sync in _sync:
                sync()
            dt = time.perf_counter() - t
            with _lock:
                _spent[name][0] += dt
                _spent[name][1] += 1
    return run


def _instrument(gpu: bool) -> None:
    """Wrap the window's kernels and driver steps with timers (module attributes and the names the
    operator module imported)."""
    from hetdb.backend.cpu import window as K
    from hetdb.backend.cpu import window_near as KN
    from hetdb.backend.cpu import window_passes as KP
    from hetdb.backend.cpu import window_running as KR
    from hetdb.backend.cpu import window_sort as KS
    from hetdb.backend.cpu import window_take as KT
    from hetdb.exec.operators import window as W
    from hetdb.exec.operators import window_functions as WF
    from hetdb.exec.operators import window_sums as WS
    from hetdb.exec.window_array import ArrayKernels

    for mod, label in ((K, "K"), (KN, "KN"), (KP, "KP"), (KR, "KR"), (KS, "KS"), (KT, "KT"), (WS, "sums")):
        for name in dir(mod):
            fn = getattr(mod, name)
            if name.startswith("__") or not callable(fn) or isinstance(fn, type):
                continue
            if getattr(fn, "__module__", None) != mod.__name__ or hasattr(fn, "py_func"):
                continue  # Numba kernels stay: other kernels call them (their Python callers are timed)
            setattr(mod, name, _timed(f"{label}.{name}", fn))
    for name in ("_permutation", "_starts", "_function", "_sort_arrays", "_key", "take_batch", "take", "_morsels",
                 "batch_to_host", "batch_to_device"):
        setattr(W, name, _timed(f"W.{name}", getattr(W, name)))
    for name in ("_frame", "_pick", "_shifted_or_default", "take"):
        setattr(WF, name, _timed(f"WF.{name}", getattr(WF, name)))
    for name in ("compute_batch", "_compute", "_concat", "finalize", "sink"):
        setattr(W.WindowSink, name, _timed(f"WindowSink.{name}", getattr(W.WindowSink, name)))
    if gpu:
        import cupy

        _sync.append(cupy.cuda.runtime.deviceSynchronize)
        for name in dir(ArrayKernels):
            fn = getattr(ArrayKernels, name)
            if not name.startswith("__") and callable(fn):
                setattr(ArrayKernels, name, _timed(f"AK.{name}", fn))


def _show_huge_pages(off: bool) -> None:
    """Print the kernel's transparent-huge-page settings; with ``off`` stop NumPy asking for them
    (its large allocations are madvise(MADV_HUGEPAGE)d: with defrag=madvise a fault may compact)."""
    for name in ("enabled", "defrag"):
        path = Path("/sys/kernel/mm/transparent_hugepage") / name
        print(f"THP {name}: {path.read_text().strip() if path.exists() else '?'}")
    if off:
        try:
            from numpy._core import multiarray
        except ImportError:
            from numpy.core import multiarray
        multiarray._set_madvise_hugepage(False)
        print("NumPy madvise(MADV_HUGEPAGE): off")


_VMSTAT = ("pgfault", "thp_fault_alloc", "thp_fault_fallback", "compact_stall", "compact_fail")


def _vmstat() -> dict[str, int]:
    """The kernel's page-fault and huge-page compaction counters (all processes)."""
    try:
        lines = Path("/proc/vmstat").read_text().split("\n")
    except OSError:
        return {}
    pairs = (line.split() for line in lines if line)
    return {k: int(v) for k, v in pairs if k in _VMSTAT}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--queries", default="w1,w2,w3,w4,w5,w6,w7")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--option", action="append", default=[], help="a connection option, e.g. cpu_compile=0")
    ap.add_argument("--no-hugepage", action="store_true",
                    help="NumPy does not madvise(MADV_HUGEPAGE) its large arrays (transparent huge pages)")
    a = ap.parse_args()
    _show_huge_pages(a.no_hugepage)
    import os

    import numba

    print(f"cpus {os.cpu_count()}, numba threads {numba.config.NUMBA_NUM_THREADS}")
    from hetdb.bench.cli import parse_settings

    options = {"threads": a.threads} if a.threads else {}
    options.update(parse_settings(a.option))
    gpu = a.device == "gpu"
    if a.phases:
        _instrument(gpu)
    with hetdb.connect(a.db, device=a.device, **options) as con:
        for q in a.queries.split(","):
            sql = (QUERIES / f"{q}.sql").read_text()
            con.sql(sql).arrow()  # warm-up: compiles, cache
            _spent.clear()
            before = _vmstat()
            times = []
            for _ in range(a.repeat):
                if gpu:
                    import cupy

                    cupy.cuda.runtime.deviceSynchronize()
                t = time.perf_counter()
                con.sql(sql).arrow()
                if gpu:
                    cupy.cuda.runtime.deviceSynchronize()
                times.append((time.perf_counter() - t) * 1000)
            after = _vmstat()
            print(f"== {q} {a.device} threads={a.threads or 'default'} {' '.join(a.option)}: "
                  + " ".join(f"{t:.1f}" for t in times) + f" ms (min {min(times):.1f})", flush=True)
            print("   per run: " + ", ".join(f"{k} {(after[k] - before.get(k, 0)) / a.repeat:,.0f}" for k in after))
            if a.phases:
                rows = sorted(_spent.items(), key=lambda kv: -kv[1][0])
                for name, (s, c) in rows[:30]:
                    print(f"   {name:<36} {s * 1000 / a.repeat:9.1f} ms/run  calls/run {c / a.repeat:g}")
            print(con.explain(sql, analyze=True), flush=True)
    try:
        print(f"numba threading layer: {numba.threading_layer()}")
    except ValueError:  # no parallel kernel ran
        pass


if __name__ == "__main__":
    main()
