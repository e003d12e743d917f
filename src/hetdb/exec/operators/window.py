"""Window functions: a sink that buffers its input, sorts it by PARTITION BY + ORDER BY keys and
computes every function of one window specification with segmented passes.

On the CPU the sort and the passes are compiled (Numba) loops (``backend/cpu/window``). On a GPU the
same operator runs the array-module kernels (``exec/window_array``) on CuPy arrays: the backend's
stable sort (rows grouped by small partitions already: one thread per partition, backend/gpu/window),
cumulative sums, vectorised binary searches, a sparse table and per-partition sums (variance,
stddev); only the other holistic aggregates over a window (quantile, mode, string_agg,
arg_max/arg_min, ...) copy the input to the host, which EXPLAIN ANALYZE shows as a CPU fallback. The buffered input is a reservation against
the memory limit; past it, a window with PARTITION BY spills its rows into hash partitions and
computes them one at a time (``operators/window_spill.py``). One window partition larger than the
limit (or a window without PARTITION BY) fails on the CPU with a typed OutOfMemoryError naming the
operator; on a GPU it is computed on the host within host_memory_limit (EXPLAIN ANALYZE says so).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetdb.backend.cpu import window as K
from hetdb.backend.cpu import window_sort as KS
from hetdb.backend.cpu.backend import CpuBackend
from hetdb.backend.cpu.groupby import int_ranges
from hetdb.backend.cpu.sort import order_key
from hetdb.column import Batch, Column
from hetdb.errors import OutOfMemoryError
from hetdb.exec.columns import (
    batch_nbytes,
    concat_batches,
    slice_batch,
    take,
    take_batch,
)
from hetdb.exec.hostutil import batch_to_device, batch_to_host, column_to_host
from hetdb.exec.memory import Reservation
from hetdb.exec.operators import window_concat, window_spill
from hetdb.exec.operators.base import ExecContext, Sink, Timer, in_morsel_order
from hetdb.exec.operators.window_functions import VARIANCES, _Bounds, _function, _key, _order_key
from hetdb.exec.window_array import ArrayKernels
from hetdb.plan.expr import Field, SortKey
from hetdb.plan.window import AGGREGATES, FRAME_VALUES, OFFSETS, RANKING, WHOLE_PARTITION, WindowCall

_HOST = CpuBackend()


class _WindowState:
    def __init__(self, ctx: ExecContext) -> None:
        self.lock = threading.Lock()
        self.batches: list[tuple[Any, Batch]] = []
        self.reservation = Reservation(ctx.memory)
        ctx.cleanup.append(self.reservation.close)
        self.held = 0  # bytes reserved for the batches buffered now
        self.spilled: window_spill.SpillState | None = None  # the partition files, once spilling
        self.spill_lock = threading.Lock()
        # On a GPU, a window without PARTITION BY whose input outgrew the device budget: the batches
        # are moved to host memory (reserved against host_memory_limit) and computed there.
        self.host: Reservation | None = None


def _sort_arrays(kern, backend, cols: list[Column], desc: list[bool], nulls_first: list[bool]):
    xp = backend.xp
    arrays, d = [], []
    for col, de, nf in zip(cols, desc, nulls_first):
        if col.validity is not None:
            arrays.append(col.validity if nf else xp.logical_not(col.validity))
            d.append(False)
        arrays.append(_order_key(kern, backend, _key(backend, col)))
        d.append(de)
    return arrays, d


def _permutation(kern, backend, arrays: list, desc: list[bool], n: int, n_part: int):
    """Stable sort order of the rows by ``arrays`` (the first ``n_part`` of them the PARTITION BY
    keys), None where the rows are in that order already: compiled sorts on the CPU, packed-key
    radix sorts on the array path (``ArrayKernels.sort_permutation``)."""
    if kern is K:
        return _presorted_permutation(arrays, desc, n, n_part)
    return kern.sort_permutation(arrays, desc, n, n_part)


def _presorted_permutation(arrays: list[np.ndarray], desc: list[bool], n: int, n_part: int) -> np.ndarray | None:
    """``_sort_permutation`` that uses order already in the input (tables are often stored by their
    partition key, e.g. lineitem by l_orderkey): None when the rows are sorted, a sort within each
    partition when only the PARTITION BY keys are. A last key that the input is sorted by already
    (o_orderkey in ORDER BY ..., o_orderkey over orders) is left out: the stable sort keeps ties in
    input order."""
    if not arrays or n == 0:
        return None
    okeys = [_okey(a, d) for a, d in zip(arrays, desc)]
    while len(okeys) > 1 and KS.is_sorted(okeys[-1]):
        okeys.pop()
    n_part = min(n_part, len(okeys))
    ranges = int_ranges(okeys)
    if ranges is None or _bits(ranges) > 63:
        return _sort_permutation(okeys, [False] * len(okeys), n)
    part = _pack(okeys[:n_part], ranges[:n_part], None)
    code = _pack(okeys[n_part:], ranges[n_part:], part)
    if KS.is_sorted(code):
        return None
    if 0 < n_part < len(okeys) and KS.is_sorted(part):
        return KS.sort_within_runs(code, part)
    return KS.sort_codes(code, _bits(ranges))


def _okey(a: np.ndarray, descending: bool) -> np.ndarray:
    """``order_key`` with integer DESC keys inverted by every kernel thread."""
    if descending and a.dtype.kind in "iu":
        return KS.inverted(a.astype(np.int64, copy=False))
    return order_key(a, descending)


def _pack(okeys: list[np.ndarray], ranges: list[tuple[int, int]], code: np.ndarray | None) -> np.ndarray | None:
    """``code`` (None: no key yet) extended by the keys: one int64 per row ordering like them
    (their combined range fits 63 bits), a new array per key written in one parallel pass."""
    for k, (lo, hi) in zip(okeys, ranges):
        code = KS.pack_first(k, hi - lo + 1, lo, code)
    return code


def _sort_permutation(arrays: list[np.ndarray], desc: list[bool], n: int) -> np.ndarray:
    """Stable sort order of the rows by ``arrays`` (LSD radix sorts): one pass set over a packed
    int64 code when the keys' combined range fits 63 bits, else key by key from the last."""
    order = np.arange(n, dtype=np.int64)
    if not arrays or n == 0:
        return order
    okeys = [_okey(a, d) for a, d in zip(arrays, desc)]
    ranges = int_ranges(okeys)
    if ranges is None:
        return np.asarray(_HOST.sort_indices(arrays, desc), dtype=np.int64)
    if _bits(ranges) <= 63:
        return KS.sort_codes(_pack(okeys, ranges, None), _bits(ranges))
    for k, (lo, hi) in reversed(list(zip(okeys, ranges))):
        if hi > lo:  # the span may exceed int64: shift by the minimum in unsigned arithmetic
            code = (k.view(np.uint64) - np.uint64(lo & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
            order = K.radix_refine(code, _bits([(lo, hi)]), order)
    return order


def _bits(ranges: list[tuple[int, int]]) -> int:
    total = 1
    for lo, hi in ranges:
        total *= hi - lo + 1
    return (total - 1).bit_length()


def _starts(kern, xp, arrays: list, n: int):
    """Flags of the rows where any of ``arrays`` changes (row 0 set)."""
    flags = xp.zeros(n, dtype=bool)
    if n:
        flags[0] = True
    for a in arrays:
        if kern is K:
            K.mark_changes(a, flags)
        else:
            flags[1:] |= a[1:] != a[:-1]
    return flags


@dataclass(frozen=True)
class WindowSink(Sink):
    fields: tuple[Field, ...] = ()       # input columns, passed on
    partition: tuple = ()
    order: tuple[SortKey, ...] = ()
    funcs: tuple[tuple[Field, WindowCall], ...] = ()
    keep: tuple[str, ...] | None = None  # the input columns passed on (None: all)

    def describe(self) -> str:
        p = ", ".join(map(str, self.partition))
        o = ", ".join(f"{k.expr} {'DESC' if k.descending else 'ASC'}" for k in self.order)
        fs = ", ".join(f"{f.cid}={c}" for f, c in self.funcs)
        passed = "" if self.keep is None else f" pass=[{', '.join(self.keep)}]"
        return f"Window partition=[{p}] order=[{o}] [{fs}]{passed}"

    def init_global(self, ctx: ExecContext) -> Any:
        return _WindowState(ctx)

    def sink(self, ctx: ExecContext, batch: Batch, g: _WindowState, local: Any) -> None:
        nbytes = batch_nbytes(batch)
        key = ctx.current_morsel_key()
        ctx.add(self.op_id, rows_in=batch.num_rows)
        if g.spilled is None and g.host is None and g.reservation.try_grow(nbytes):
            with g.lock:
                if g.host is None:
                    g.batches.append((key, batch))
                    g.held += nbytes
                    return
            g.reservation.shrink(nbytes)  # another thread moved the input to the host meanwhile
        if not self.partition:
            self._hold_on_host(ctx, g, batch, key, nbytes)
            return
        window_spill.spill_buffered(self, ctx, g)
        window_spill.spill(self, ctx, g, [(key, batch)])

    def _hold_on_host(self, ctx: ExecContext, g: _WindowState, batch: Batch, key: Any, nbytes: int) -> None:
        """A window without PARTITION BY past the memory limit: on the CPU a typed error; on a GPU its
        input moves to host memory (within host_memory_limit) and the window runs there."""
        with g.lock:
            if ctx.device is None:
                raise self._too_large(ctx, ctx.memory, g.reservation.nbytes + nbytes)
            if g.host is None:
                g.host = Reservation(ctx.host_memory)
                ctx.cleanup.append(g.host.close)
            if not g.host.try_grow(g.held + nbytes):  # held: device bytes that move now
                raise self._too_large(ctx, ctx.host_memory, g.host.nbytes + g.held + nbytes)
            if g.held:  # the batches buffered on the device so far move to the host once
                g.batches = [(k, batch_to_host(ctx.backend, b)) for k, b in g.batches]
                g.reservation.shrink(g.held)
                g.held = 0
            g.batches.append((key, batch_to_host(ctx.backend, batch)))

    def finalize(self, ctx: ExecContext, g: _WindowState) -> list[Batch]:
        with Timer(ctx, self.op_id):
            if g.host is not None:
                batches = in_morsel_order(g.batches)
                host = concat_batches(_HOST, batches, [f.cid for f in self.fields])
                return [self.compute_batch(ctx, host, "a window partition past the GPU budget, on the host",
                                           on_host=True)]
            if g.spilled is not None:
                return window_spill.finish(self, ctx, g)
            batches = in_morsel_order(g.batches)
            if not batches:
                return []
            rows = sum(b.num_rows for b in batches)
            work = Reservation(ctx.memory)
            try:
                need = window_spill.work_bytes(self, g.held, rows) - g.held  # beyond the held input
                if not work.try_grow(need):
                    if self.partition:
                        return window_spill.finish(self, ctx, g)
                    if rows > window_spill.MIN_ROWS:
                        out = self.compute_on_host(ctx, lambda: self._concat(ctx, batches), g.held + need)
                        if out is None:
                            raise self._too_large(ctx, ctx.host_memory if ctx.device is not None else ctx.memory,
                                                  g.held + need)
                        return [out]
                    work.force_grow(need)
                return _morsels(ctx, self.compute_batch(ctx, self._concat(ctx, batches)))
            finally:
                work.close()

    def _concat(self, ctx: ExecContext, batches: list[Batch]) -> Batch:
        threads = int(getattr(ctx.options, "threads", 0) or 0)
        return window_concat.concat(ctx.backend, batches, [f.cid for f in self.fields], threads)

    def compute_on_host(self, ctx: ExecContext, load, nbytes: int) -> Batch | None:
        """On a GPU: one window partition (``load()``) past the device budget, computed on the host
        within host_memory_limit (EXPLAIN ANALYZE shows the fallback); None on the CPU, or where the
        host refuses the ``nbytes`` too."""
        if ctx.device is None:
            return None
        host = Reservation(ctx.host_memory)
        try:
            if not host.try_grow(nbytes):
                return None
            return self.compute_batch(ctx, load(), "a window partition past the GPU budget, on the host")
        finally:
            host.close()

    def _too_large(self, ctx: ExecContext, memory: Any, nbytes: int) -> OutOfMemoryError:
        return OutOfMemoryError(
            f"{self.describe()}: a window without PARTITION BY needs its whole input in memory: "
            f"{nbytes:,} bytes exceed host_memory_limit={memory.limit:,}; raise host_memory_limit or "
            "filter the input first")

    def compute_batch(self, ctx: ExecContext, batch: Batch, host_reason: str | None = None,
                      on_host: bool = False) -> Batch:
        """Input rows (whole window partitions, in collection order) with every function's column; on
        a GPU computed on the host where ``host_reason`` says why (``on_host``: ``batch`` is already
        in host memory; the result goes back to the device)."""
        ev = _host_evaluator() if on_host else ctx.evaluator
        part = [ev.evaluate(e, batch) for e in self.partition]
        order = [ev.evaluate(k.expr, batch) for k in self.order]
        args = [[ev.evaluate(a, batch) for a in c.args] for _, c in self.funcs]
        if ctx.device is None:
            out = self._compute(host_kernels(), _HOST, batch, part, order, args)
        elif host_reason is None and all(_on_device(c) for _, c in self.funcs):
            out = self._compute(_device_kernels(ctx.backend), ctx.backend, batch, part, order, args)
        else:
            ctx.note_fallback(host_reason or "window functions on the host")
            if not on_host:
                batch = batch_to_host(ctx.backend, batch)
                part = [column_to_host(ctx.backend, c) for c in part]
                order = [column_to_host(ctx.backend, c) for c in order]
                args = [[column_to_host(ctx.backend, c) for c in a] for a in args]
            out = self._compute(K, _HOST, batch, part, order, args)
            out = batch_to_device(ctx.backend, out, ctx.dict_cache)
        ctx.add(self.op_id, rows_out=out.num_rows)
        return out

    def _compute(self, kern, backend, batch: Batch, part, order, args) -> Batch:
        """The window over ``batch`` with the kernels ``kern`` (the CPU's compiled loops, or
        ``ArrayKernels`` over the backend's array module) on ``backend``'s arrays."""
        xp = backend.xp
        n = batch.num_rows
        p_arrays, p_desc = _sort_arrays(kern, backend, part, [False] * len(part), [False] * len(part))
        o_arrays, o_desc = _sort_arrays(kern, backend, order, [k.descending for k in self.order],
                                        [k.nulls_first for k in self.order])
        perm = _permutation(kern, backend, p_arrays + o_arrays, p_desc + o_desc, n, len(p_arrays))
        if perm is not None:
            p_arrays = [backend.gather(a, perm) for a in p_arrays]
        part_start = _starts(kern, xp, p_arrays, n)

        def peer_start():  # only ranks, peers and RANGE frames need the ORDER BY keys' runs
            keys = o_arrays if perm is None else [backend.gather(a, perm) for a in o_arrays]
            return part_start | _starts(kern, xp, keys, n)

        passed = batch if self.keep is None else Batch({k: c for k, c in batch.columns.items() if k in self.keep}, n)
        out = passed if perm is None else take_batch(backend, passed, perm)
        # expressions that are input columns reuse the permuted input instead of a second gather
        permuted = {id(batch.columns[k]): c for k, c in out.columns.items()}

        def sort_col(c: Column) -> Column:
            if perm is None:
                return c
            hit = permuted.get(id(c))
            return hit if hit is not None else take(backend, c, perm)

        # the sorted ORDER BY columns only for RANGE frames with an offset (their one key's values):
        # a ranking, ROWS or peer frame never reads them (w6's ntile: no 15M-row gather of o_orderkey)
        ranged = any(c.frame.kind == "range" and (c.frame.start_n is not None or c.frame.end_n is not None)
                     for _, c in self.funcs)
        sorted_order = [sort_col(c) for c in order] if ranged else []
        cols = dict(out.columns)
        b = _Bounds(kern, backend, part_start, peer_start)
        for (f, call), a in zip(self.funcs, args):
            cols[f.cid] = _function(b, call, [sort_col(c) for c in a], sorted_order, self.order)
        return Batch(cols, n)


_MORSEL_ROWS = 1 << 17


def _morsels(ctx: ExecContext, batch: Batch) -> list[Batch]:
    """The window's output on the CPU as zero-copy slices, so that the pipeline reading it runs one
    worker per slice (one batch would be one morsel: a single thread filtering and aggregating every
    row); on a GPU one batch (its pipelines take whole batches)."""
    threads = int(getattr(ctx.options, "threads", 0) or 0)
    if ctx.device is not None or threads <= 1 or batch.num_rows < 2 * _MORSEL_ROWS:
        return [batch]
    step = max(_MORSEL_ROWS, -(-batch.num_rows // (threads * 4)))
    return [slice_batch(ctx.backend, batch, lo, lo + step) for lo in range(0, batch.num_rows, step)]


_host_eval: list = []


def _host_evaluator():
    """An expression evaluator over host arrays (a GPU query's window input held on the host)."""
    if not _host_eval:
        from hetdb.exec.expressions import ExprEvaluator

        _host_eval.append(ExprEvaluator(_HOST))
    return _host_eval[0]


def _device_kernels(backend) -> ArrayKernels:
    """The array kernels on the GPU's arrays, partitions of grouped input sorted by backend/gpu/window."""
    if backend.name != "gpu":
        return ArrayKernels(backend.xp)
    from hetdb.backend.gpu import window as GW

    return ArrayKernels(backend.xp, GW.sort_within_segments, GW.MAX_SEGMENT_ROWS)


def host_kernels():
    """The window kernels of the CPU path: the compiled loops (tests run ``ArrayKernels(numpy)``,
    the GPU's algorithm, in their place)."""
    return K


# Functions the array path computes on the backend's arrays; the holistic aggregates run on the host.
ARRAY_OPS = RANKING + OFFSETS + FRAME_VALUES + AGGREGATES + VARIANCES


def _on_device(call) -> bool:
    """The array path computes ``call`` (variances: over whole partitions; over frames on the host)."""
    return call.op in ARRAY_OPS and (call.op not in VARIANCES or call.frame == WHOLE_PARTITION)
