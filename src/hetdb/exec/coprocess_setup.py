"""The CPU side's set-up of a co-processed scan (exec/coprocess.py), made when its first CPU morsel
is taken and kept on the cached pipeline for the plan's next runs: the GPU join builds copied to the
host and hashed there (small dimension tables), the CPU loop's plan, the length of a worker's run of
row groups; and the process's co-processing threads (started once)."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb.cache.pages import _of, page_info
from hetdb.column import Batch, Column
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import BuildSide, key_name

# decoded bytes of one CPU worker's run of row groups (its reused buffers); a run is one loop call
RUN_BYTES = 32 << 20
# the share of the pinned host tier's capacity the CPU workers may keep pages decoded in beside it
# (``decoded_cache``; 0: none, every run decodes its pages out of the tier again)
DECODED_SHARE = 0.25


def decoded_cache(tier: Any) -> Any:
    """The pages co-processing's CPU workers decoded out of the pinned host tier ``tier``, kept
    decoded (exec/host_cache.DecodedPageCache, by benefit, within DECODED_SHARE of the tier): a
    worker then reads a row group as the CPU engine's workers read a hot one (the cached pages, their
    narrow copies; no decoding), where decoding its pages out of the tier took about as long as the
    loop over them (SSB SF 5 q4.1, one worker: 5.4 of 11.4 ms a row group). The CPU's share of a
    scan is its back, the same row groups run after run, so the pages it keeps are the ones it
    reads. None without a tier; dropped with the tier's pages (cache.host_cache.clear_shared_host_cache)."""
    if tier is None or DECODED_SHARE <= 0:
        return None
    got = tier.__dict__.get("decoded_for_cpu")
    if got is None:
        from hetdb.exec.host_cache import DecodedPageCache

        with _POOL_LOCK:
            got = tier.__dict__.get("decoded_for_cpu")
            if got is None:
                got = tier.__dict__["decoded_for_cpu"] = DecodedPageCache(int(tier.capacity_bytes * DECODED_SHARE))
    return got


def host_build_side(cctx: ExecContext, side: BuildSide, keys: int) -> BuildSide:
    """A GPU join build copied to the host and hashed there (the CPU loops probe it)."""
    from hetdb.exec.keys import encoders_for, key_arrays

    be = cctx.backend
    batch = _to_host(side.batch)
    keycols = [batch.columns[key_name(i)] for i in range(keys)]
    encoders = encoders_for(be, [c.dtype for c in keycols])
    table = valid_idx = None
    if keys and batch.num_rows:
        arrays, valid = key_arrays(be, keycols, encoders)
        if valid is not None:
            valid_idx = be.nonzero(valid)
            arrays = [be.gather(a, valid_idx) for a in arrays]
        if int(arrays[0].shape[0]):
            table = be.join_build(arrays)
    return BuildSide(batch, table, valid_idx, encoders, side.has_null_key, side.nonempty,
                     scanned_rows=side.scanned_rows)


def _to_host(batch: Batch) -> Batch:
    """A device Batch's columns as host arrays (dictionaries too)."""

    def host(a: Any) -> Any:
        return None if a is None else (a.get() if hasattr(a, "get") else np.asarray(a))

    def col(c: Column) -> Column:
        d = c.dictionary
        return Column(c.dtype, data=host(c.data), validity=host(c.validity),
                      dictionary=None if d is None else col(d), offsets=host(c.offsets), chars=host(c.chars))

    return Batch({k: col(c) for k, c in batch.columns.items()}, batch.num_rows)


@dataclass
class CoSetup:
    """What the CPU side of a co-processed pipeline set up, kept on the (cached) pipeline for its
    next runs: the join builds as host hash tables, the CPU loop's plan (with its compiled loops),
    the row groups in a worker's run; ``refused``: why the CPU compiler does not take it."""

    backend: Any
    host: dict[int, BuildSide] = field(default_factory=dict)
    plan: Any = None
    most: int = 1
    refused: str = ""
    compiler_refused: bool = False  # (the CPU pipeline compiler's refusal holds for every run of the plan)


_SETUP_KEY = "_coprocess_setup"


def setup_of(pipe: Any, reader: Any) -> CoSetup | None:
    got = getattr(pipe, "__dict__", {}).get(_SETUP_KEY)
    return got[1] if got is not None and got[0] == getattr(reader, "path", None) else None


def keep_setup(pipe: Any, reader: Any, setup: CoSetup) -> None:
    if hasattr(pipe, "__dict__"):
        pipe.__dict__[_SETUP_KEY] = (getattr(reader, "path", None), setup)


def copy_builds(ctx: ExecContext, pipe: Any, gpu: tuple | None) -> dict[int, BuildSide] | str:
    """The rows of the GPU join builds ``pipe`` probes copied to the host (on a stream of this
    thread's own, after ``gpu``'s event: the builds are done), by build pipeline, not hashed yet
    (``host_build_side`` hashes them); or why not."""
    sides = []
    for op in pipe.ops:
        if isinstance(op, HashProbe):
            side = ctx.results.get(op.build_pipeline)
            if side is None or side.partitions is not None:
                return "a join build is not at hand (built inside the fused kernel, or spilled)"
            sides.append((op, side))
    out = {}
    if sides:
        with HostCopyStream(gpu):
            for op, side in sides:
                out[op.build_pipeline] = BuildSide(_to_host(side.batch), None, None, [], side.has_null_key,
                                                   side.nonempty,
                                                   scanned_rows=side.scanned_rows or build_scan_rows(ctx, op))
    return out


def build_scan_rows(ctx: ExecContext, op: HashProbe) -> int:
    """Rows of the table ``op``'s build pipeline scans (0: not known), for a GPU build, which records
    none (exec/pipeline.note_scanned_rows: CPU pipelines): the CPU loop probes first the builds that
    keep the smallest share of their table (compiled_cpu._probe_order; a foreign key's fact rows
    match that share of the whole table, whatever its scan pruned). Without it the loop probed in the
    GPU plan's order (H100, SSB SF 20 q4.1: date, part, supplier, customer: 22 ms of loop a row group
    beside the GPU; the CPU engine's order supplier, customer, part, date: 8.9 ms on one thread)."""
    from hetdb.exec.operators.scan import TableScan

    physical = getattr(ctx, "physical", None)
    pipe = next((p for p in getattr(physical, "pipelines", ()) if p.pid == op.build_pipeline), None)
    src = getattr(pipe, "source", None)
    if not isinstance(src, TableScan):
        return 0
    try:
        return int(ctx.db.table(src.scan.table).num_rows)
    except Exception:  # noqa: BLE001 - only the probes' order depends on it
        return 0


def new_setup(ctx: ExecContext, cctx: ExecContext, pipe: Any, reader: Any, row_groups: list[int],
               gpu: tuple | None, copied: dict[int, BuildSide] | None = None) -> CoSetup:
    """The host copies of the GPU join builds the pipeline probes (``copy_builds``; ``copied``: made
    already), hashed on the host, and the CPU loop's plan."""
    from hetdb.exec.compiled_cpu import _prepare

    setup = CoSetup(cctx.backend)
    got = copy_builds(ctx, pipe, gpu) if copied is None else copied
    if isinstance(got, str):
        setup.refused = got
        return setup
    for op in pipe.ops:
        if isinstance(op, HashProbe):
            setup.host[op.build_pipeline] = host_build_side(cctx, got[op.build_pipeline], len(op.left_keys))
    cctx.results.update(setup.host)
    plan = _prepare(cctx, pipe)
    if isinstance(plan, str):
        setup.refused = plan or "the CPU pipeline compiler does not take this pipeline"
        setup.compiler_refused = True
    elif plan.marks is not None or plan.plan.materialize:
        setup.refused = "only aggregating pipelines are co-processed"
        setup.compiler_refused = True
    else:
        setup.plan = plan
        names = list(dict.fromkeys(plan.names[c] for c in plan.base))
        setup.most = run_length(reader, names, row_groups)
        if getattr(cctx, "host_cache", None) is not None and row_width(reader, names, row_groups) is not None:
            from hetdb.exec.compiled_cpu_morsel import ResidentPages
            from hetdb.exec.compiled_cpu_narrow import narrow_dtypes

            # pages kept decoded (``decoded_cache``): a row group a morsel, read as the CPU engine's
            # workers read a hot one (no run buffers: a run would copy cached pages into them)
            plan.resident = ResidentPages(cctx, pipe.source, [plan.names[c] for c in plan.base])
            plan.narrow = narrow_dtypes(cctx, plan, pipe.source)
            setup.most = 1
        from hetdb.exec.compiled_cpu_kernels import clustered, copy_in_key_order, prefilter

        for op, side, pay in plan.probes:  # (as the CPU engine makes them before its workers start)
            prefilter(side.table)
            if clustered(op, side, pay):
                copy_in_key_order(cctx, side, pay)
    return setup


def builds_done() -> tuple | None:
    """(device id, an event recorded on this thread's stream): the join builds, made on this
    stream, are done once it completes. None without CuPy."""
    try:
        import cupy
    except ImportError:
        return None
    ev = cupy.cuda.Event(disable_timing=True)
    ev.record()
    return cupy.cuda.Device().id, ev


class HostCopyStream:
    """Device-to-host copies on a non-blocking stream of the calling thread, after ``gpu``'s event
    (the legacy default stream would wait for, and hold up, the GPU's scan)."""

    def __init__(self, gpu: tuple | None) -> None:
        self.gpu, self.ctxs = gpu, []

    def __enter__(self) -> HostCopyStream:
        if self.gpu is not None:
            import cupy

            device, event = self.gpu
            event.synchronize()
            self.ctxs = [cupy.cuda.Device(device), cupy.cuda.Stream(non_blocking=True)]
            for c in self.ctxs:
                c.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for c in reversed(self.ctxs):
            c.__exit__(*exc)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def worker_pool(workers: int) -> ThreadPoolExecutor:
    """The process's co-processing threads (started once; two scans' workers at a time)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < 2 * workers:
            old, _POOL = _POOL, ThreadPoolExecutor(max_workers=2 * workers, thread_name_prefix="hetdb-coprocess")
            if old is not None:
                old.shutdown(wait=False)
        return _POOL


def link_bytes(reader: Any, names: list[str], row_groups: list[int]) -> list[int]:
    """Stored bytes of each row group's pages of ``names`` (kept per reader and columns)."""
    memo = _of(reader)
    what = ("coprocess link bytes", tuple(names))
    per = memo.get(what)
    if per is None:
        per = memo[what] = {}
    out = []
    for rg in row_groups:
        n = per.get(rg)
        if n is None:
            n = per[rg] = sum(page_info(reader, name, rg, False).location.length for name in names)
        out.append(n)
    return out


def run_length(reader: Any, names: list[str], row_groups: list[int]) -> int:
    """Row groups in one CPU worker's run: as many as ``RUN_BYTES`` of decoded columns hold; one when
    a row group's pages are not all runnable (``row_width``)."""
    width = row_width(reader, names, row_groups)
    if width is None:
        return 1
    rows = max(1, reader.rows_per_page)
    return max(1, RUN_BYTES // max(1, width * rows))


def row_width(reader: Any, names: list[str], row_groups: list[int]) -> int | None:
    """Decoded bytes of a row of ``names``; None when a string column has a page not
    dictionary-encoded (the loop refuses such a page, and the operators then read that row group
    alone) or a column holds Python objects (wide decimals)."""
    width = 0
    for name in names:
        spec = reader.column(name)
        dtype = np.dtype(spec.dtype.numpy_dtype)
        if dtype.kind == "O" or spec.dtype.kind == "list" or (spec.dtype.kind == "string" and any(
                page_info(reader, name, rg, False).encoding != "dict" for rg in row_groups)):
            return None
        width += dtype.itemsize + (1 if spec.nullable else 0)
    return width


# the interpreter's switch interval while CPU workers run beside the GPU's feeder thread (None: leave
# it): a thread that wants the GIL waits up to this long for a holder that does not release it
SWITCH_INTERVAL_S: float | None = None
_switch = {"users": 0, "before": None}


def enter_switch_interval() -> None:
    """Shorten the switch interval for a co-processed scan (refcounted: concurrent scans share it)."""
    if SWITCH_INTERVAL_S is None:
        return
    with _POOL_LOCK:
        if _switch["users"] == 0:
            _switch["before"] = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        _switch["users"] += 1


def exit_switch_interval() -> None:
    if SWITCH_INTERVAL_S is None:
        return
    with _POOL_LOCK:
        if _switch["users"] <= 0:
            return
        _switch["users"] -= 1
        if _switch["users"] == 0 and _switch["before"] is not None:
            sys.setswitchinterval(_switch["before"])
