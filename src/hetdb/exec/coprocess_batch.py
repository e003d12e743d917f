"""Co-processing's CPU share in one compiled call per worker: no interpreter lock between row groups.

A co-processed warm scan reserves its back row groups for the CPU workers (cache/coscan.SharedScan.
reserve) while the GPU's feeder thread streams the rest. The feeder is Python: every moment a CPU
worker holds the interpreter lock delays the GPU's copies and launches, and a worker going through
its row groups one Python call at a time held it 50-100 us per row group (SSB SF 20, H100,
session 20: a thread wanting the lock every 100 us waited ~50% of a warm query; forced splits made
q2.1-q4.1 slower than the GPU alone). Here a worker takes the lock once: its loop over the reserved
back is one Numba ``nogil`` call (a driver generated per pipeline loop, ``driver_for``) that claims
row groups with one compare-and-exchange each (backend/cpu/claims.py: the GPU's ``take_rest`` stops
the claims with the same atomics), reads the pages kept decoded for the CPU (coprocess_setup.
decoded_cache) at addresses worked out before the call, runs the pipeline's loop over each, and
stops claiming when a row group at its measured pace would end after the GPU's expected end (the
clock read inside the loop). It returns to Python only when its share is done, for a row group whose
pages are not kept decoded yet (the Python path decodes and keeps them: the next scan's call reads
them), or when its group table is full.

Taken only where the loop needs nothing per morsel from Python: an aggregating loop over the scan's
own columns (no marks, no materialized rows, no key runs, no host filters), pages kept decoded (and
their narrow copies, compiled_cpu_narrow.py, where the loop reads them) with one layout. Anything else runs as before (exec/coprocess.py).
"""

from __future__ import annotations

import hashlib
import itertools
import sys
import threading
import time
from typing import Any

import numpy as np

from hetdb.backend.cpu.claims import claim_back, stop_claims
from hetdb.exec.compiled_cpu_kernels import arguments, kernel_for
from hetdb.exec.compiled_cpu_morsel import _HOST_CPU, LocalStats
from hetdb.exec.compiled_cpu_narrow import narrowed

# a worker's share of a reserved back in one compiled call (off: a Python call per row group)
BATCH = True
_STATE = 6  # a group table's parts (backend/cpu/codegen/runtime.new_state: slots, gk, gv, ia, fa, ng)
_DRIVERS: dict[str, Any] = {}


def driver_for(kernel: Any, placeholders: list[Any], arrays: list[int]) -> Any:
    """The compiled driver of ``kernel``'s loop over claimed row groups: the argument positions in
    ``arrays`` are read per row group (at addresses), the others passed as given."""
    from hetdb.backend.cpu.codegen.pipeline_py import _load_function

    py = getattr(kernel.fn, "py_func", None)
    module = getattr(py, "__module__", "") or ""
    names = [f"z{i}" for i in range(len(placeholders))]
    state = [f"q{i}" for i in range(_STATE - 1)] + ["qng"]
    call = list(names)
    reads = []
    for j, pos in enumerate(arrays):
        call[pos] = f"x{j}"
        reads.append(f"        x{j} = array_at(addrs[{j}, k], n, z{pos})\n")
    in_module = module.startswith("hetdb_cpu_pipeline_") and module in sys.modules
    head = (f'pipeline = sys.modules["{module}"].pipeline\n' if in_module else "")
    src = ("# co-processing driver (exec/coprocess_batch.py)\n"
           f"# loop {hashlib.sha256(kernel.source.encode()).hexdigest()[:24]}\n"
           "import sys\n"
           "import numpy as np\n"
           "from numba import njit\n"
           "from hetdb.backend.cpu.atomics import array_at, monotonic\n"
           "from hetdb.backend.cpu.claims import claim_one\n"
           f"{head}\n\n"
           "@njit(nogil=True, cache=True)\n"
           f"def drive(word, floor, ready, addrs, rows, limits, wid, taken, times, per_row, "
           f"{', '.join(names + state)}):\n"
           "    per = limits[1]\n"
           "    while True:\n"
           "        h = claim_one(word, floor, limits[0], per)\n"
           "        if h < 0:\n"
           "            return qng, np.int64(0), np.int64(-1), np.int64(0)\n"
           "        k = h - floor\n"
           "        if ready[k] == 0:\n"
           "            return qng, np.int64(3), np.int64(h), np.int64(0)\n"
           "        n = rows[k]\n"
           "        t0 = monotonic()\n"
           + "".join(reads) +
           f"        qng, err, start = pipeline(0, n, per_row, {', '.join(call + state)})\n"
           "        t1 = monotonic()\n"
           "        taken[k] = wid\n"
           "        times[k, 0] = t0\n"
           "        times[k, 1] = t1\n"
           "        if err != 0:\n"
           "            return qng, np.int64(err), np.int64(h), np.int64(start)\n"
           "        per = t1 - t0 if per <= 0.0 else 0.5 * (per + t1 - t0)\n")
    return _load_function(src, "hetdb_cpu_drive", "drive", None if in_module else {"pipeline": kernel.fn},
                          store=_DRIVERS)


class Share:
    """The reserved back of one co-processed scan, laid out for the workers' compiled calls."""

    def __init__(self, kernel: Any, drive: Any, word: np.ndarray, floor: int, row_groups: list[int],
                 args: list[Any], key_dicts: dict, pages: list, lengths: list[int], ready: np.ndarray,
                 addrs: np.ndarray, rows: np.ndarray, gpu_end: float | None, per: float | None) -> None:
        self.kernel, self.drive, self.word, self.floor = kernel, drive, word, floor
        self.row_groups, self.args, self.key_dicts = row_groups, args, key_dicts
        self.pages, self.lengths, self.ready, self.addrs, self.rows = pages, lengths, ready, addrs, rows
        self.limits = np.array([gpu_end or 0.0, per or 0.0], np.float64)
        self.taken = np.zeros(len(rows), np.int64)
        self.times = np.zeros((len(rows), 2), np.float64)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def worker_id(self) -> int:
        with self._lock:
            return next(self._ids)


def eligible(p: Any) -> bool:
    """Whether the CPU loop of plan ``p`` needs nothing from Python between morsels."""
    return (BATCH and p is not None and p.marks is None and not p.plan.materialize and p.run_key is None
            and p.resident is not None and p.resident.cache is not None)


def _layout(cols: dict, p: Any) -> tuple:
    return tuple((cols[c].validity is not None, cols[c].dictionary is not None) for c in p.kernel_cols)


def _bound(co: Any, p: Any, kernel: Any, cols: dict) -> tuple[list[Any], list[tuple[int, str, bool]]]:
    """``kernel``'s arguments for the morsel ``cols`` and its inputs the driver reads per row group
    (position, column, data or validity): the array ones (an absent validity stays None)."""
    args = arguments(co.cctx, p, kernel, cols)
    return args, [(pos, cid, data) for pos, cid, data in p.bound[id(kernel)].inputs
                  if isinstance(args[pos], np.ndarray)]


def prepare(co: Any) -> Share | None:
    """The reserved back of ``co``'s scan laid out for compiled calls, or None (not eligible, nothing
    reserved, or none of its pages kept decoded yet)."""
    p, crun, shared = co.plan, co.crun, co.shared
    if not eligible(p) or crun is None or not shared.reserved:
        return None
    floor = shared.reserved_from()
    reader, sink = crun.gsrc, co.pipe.sink
    rgs = shared.row_groups[floor:]
    if shared.resident is not None and any(shared.resident(rg) for rg in rgs):
        return None  # (the GPU holds some of them: the Python path's steals leave those to it)
    scratch = LocalStats()
    pages = [p.resident.read(reader, rg, False, scratch) for rg in rgs]
    first = next((i for i, got in enumerate(pages) if got is not None), None)
    if first is None:
        return None
    cols0 = dict(zip(p.base, pages[first]))
    kernel = kernel_for(p, sink, cols0, False)
    if isinstance(kernel, str) or p.host.get(id(kernel)):
        return None
    if p.narrow:  # (the loop reads the narrow copies kept beside the pages: compiled_cpu_narrow.py)
        cols0 = narrowed(p, cols0, p.resident.keys_of(reader, rgs[first]), None)
    args, inputs = _bound(co, p, kernel, cols0)
    if not inputs:
        return None
    layout = _layout(cols0, p)
    like = [args[pos] for pos, _, _ in inputs]
    n_rg = len(rgs)
    ready = np.zeros(n_rg, np.int8)
    addrs = np.zeros((len(inputs), n_rg), np.int64)
    rows = np.zeros(n_rg, np.int64)
    lengths = [0] * n_rg
    groups = p.resident.groups or {}
    for k, (rg, got) in enumerate(zip(rgs, pages)):
        rows[k] = reader.row_group_rows(rg)
        if got is None:
            continue
        cols = dict(zip(p.base, got))
        if _layout(cols, p) != layout:
            pages[k] = None
            continue
        if p.narrow:  # (a page without its narrow copy yet: the Python path makes it)
            cols = narrowed(p, cols, p.resident.keys_of(reader, rg), None)
            pages[k] = [cols[c] for c in p.base]
        ok = True
        for j, (_, cid, data) in enumerate(inputs):
            a = cols[cid].data if data else cols[cid].validity
            if (not isinstance(a, np.ndarray) or a.dtype != like[j].dtype or not a.flags.c_contiguous
                    or a.shape[0] < rows[k]):
                ok = False
                break
            addrs[j, k] = a.ctypes.data
        if not ok:
            pages[k] = None
            continue
        ready[k] = 1
        g = groups.get(rg)
        lengths[k] = g[1] if g is not None else 0
    drive = driver_for(kernel, args, [pos for pos, _, _ in inputs])
    opened = shared.open_claims()  # (from here on every claim of the scan is an atomic one)
    if opened is None or opened[1] != floor:
        return None
    word = opened[0]
    key_dicts = {c: cols0[c].dictionary for c in p.key_dicts if c is not None and c in cols0}
    per = shared.cpu_rg_seconds if shared.cpu_rg_seconds is not None else shared.cpu_prior
    return Share(kernel, drive, word, floor, rgs, args, key_dicts, pages, lengths, ready, addrs, rows,
                 shared.gpu_end, per)


def warm(co: Any, kernel: Any, cols: dict, state: tuple) -> None:
    """Compile (or load) the driver of ``kernel`` before any worker needs it: a call that claims
    nothing (a worker compiling it would hold the interpreter lock for the compile)."""
    p = co.plan
    if not eligible(p):
        return
    args, inputs = _bound(co, p, kernel, cols)
    arrays = [pos for pos, _, _ in inputs]
    if not arrays:
        return
    drive = driver_for(kernel, args, arrays)
    one = np.zeros(1, np.int64)
    claim_back(one, 0, 1)  # (the scan's Python side claims and stops with these)
    stop_claims(one)
    drive(np.zeros(1, np.int64), 0, np.zeros(1, np.int8), np.zeros((len(arrays), 1), np.int64), one,
          np.zeros(2, np.float64), 1, one.copy(), np.zeros((1, 2), np.float64), p.expansion, *args, *state)


def run_share(worker: Any, share: Share, lops: list, lsink: Any) -> None:
    """``worker``'s part of the reserved back: compiled calls until nothing is left for the CPU."""
    from hetdb.exec.compiled_cpu import _Redo

    co, p = worker.co, worker.p
    kernel, floor = share.kernel, share.floor
    wid = share.worker_id()
    while True:
        worker.table_for(kernel, share.key_dicts, 0, lsink)
        ng, err, pos, start = share.drive(share.word, floor, share.ready, share.addrs, share.rows,
                                          share.limits, wid, share.taken, share.times, p.expansion,
                                          *share.args, *worker.state)
        worker.state = (*worker.state[:_STATE - 1], ng)
        if err == 0:
            break
        k = pos - floor
        if err == 3:  # its pages are not kept decoded yet: read, decoded and kept by the Python path
            co.shared.batch_taken([int(pos)])  # (the CPU's; its time counted by ``_done_with``)
            worker._morsel(pos, share.row_groups[k], lops, lsink)
            co._done_with(worker)
            continue
        if err == 1:
            raise _Redo()
        # the group table is full: grown by the Python path, which goes on from the row that did not fit
        cols = dict(zip(p.base, share.pages[k]))
        worker.loop(kernel, arguments(co.cctx, p, kernel, cols), int(start), int(share.rows[k]), lsink, 0)
        share.times[k, 1] = time.perf_counter()
    _account(worker, share, wid)


def _account(worker: Any, share: Share, wid: int) -> None:
    """What ``worker``'s compiled calls took, in the scan's, the query's and the cost model's books."""
    co, p = worker.co, worker.p
    mine = np.flatnonzero(share.taken == wid)
    if not len(mine):
        return
    times = share.times[mine]
    walls = times[:, 1] - times[:, 0]
    total = float(walls.sum())
    co.shared.batch_taken([share.floor + int(k) for k in mine])
    co.shared.observe_cpu(len(mine), total)
    stats, src, sink = worker.stats, worker.pipe.source.op_id, worker.pipe.sink.op_id
    rows = int(share.rows[mine].sum())
    npages = len(p.base)
    stats.add(src, rows_in=rows, rows_out=rows, pages_cached=npages * len(mine))
    stats.add_route(src, _HOST_CPU, sum(share.lengths[int(k)] for k in mine), npages * len(mine))
    stats.add(sink, rows_in=rows, seconds=total)
    p.compiled += len(mine)
    with co._spent_lock:
        co.spent[0] += len(mine)
        co.spent[1] += total
        co.spent[2] += total
        co.intervals.extend((float(t0), float(t1), 1, float(t1 - t0), float(t1 - t0)) for t0, t1 in times)
