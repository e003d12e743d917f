"""Compiled CPU pipelines: a ``TableScan`` (or an unordered previous pipeline's result, cut into a
morsel per thread) ``-> (Filter | Project | HashProbe)* -> HashAggregate`` pipeline (or one ending in
a hash build, sort or top-N that takes the selected rows) runs as one Numba-compiled ``nogil`` loop
per morsel (backend/cpu/codegen): the scan's
pushed filters, the probes into the join builds' hash tables (inner of unique and non-unique
builds, semi, anti), projections and the grouped aggregation happen row by row with no
intermediate batches, and each worker keeps its own group table across its morsels, handed to the
aggregation as one partial-state batch when the worker is done (the operator's merge, reservation
and spilling stay its own).

Planning is the GPU pipeline compiler's (exec/compiled.plan_compiled: which stages, which columns
the loop reads and makes); a function is generated per morsel *signature* (which inputs have NULLs,
which strings are dictionary codes). What the compiler refuses runs operator at a time: the whole
pipeline (EXPLAIN ANALYZE names the reason) or a single morsel (plain-string pages). A value that
leaves its type makes the pipeline start again operator at a time, whose kernels raise the same
OutOfRangeError as ever. ``cpu_compile=False`` turns the path off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.backend.cpu.codegen.pipeline_py import (
    Kernel,
)
from hetdb.column import Batch, Column
from hetdb.exec.columns import slice_column, take
from hetdb.exec.compiled import CompiledPlan, _gather, plan_compiled
from hetdb.exec.compiled_cpu_args import BoundArgs
from hetdb.exec.compiled_cpu_budget import TableBudget, flush_table
from hetdb.exec.compiled_cpu_kernels import (
    MAX_EXPRESSION_NODES,
    arguments,
    clustered,
    copy_in_key_order,
    direct_ranges,
    expression_nodes,
    kernel_for,
    morsel_runs,
    pass_share,
    prefilter,
    run_groups,
    scan_range_of,
    verdict,
)
from hetdb.exec.compiled_cpu_marks import MARK_KINDS, mark_probe, marked_flags, plan_marks, residual_payload
from hetdb.exec.compiled_cpu_morsel import LocalStats, LocalTimer, ResidentPages
from hetdb.exec.compiled_cpu_narrow import narrow_dtypes, narrowed
from hetdb.exec.compiled_rows import selects_rows
from hetdb.exec.operators.aggregate import HashAggregate, _g, _s, _sum_type
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import ResultSource
from hetdb.exec.operators.scan import TableScan
from hetdb.plan.expr import ColumnRef, Expr

CPU_COMPILED = "compiled into one CPU loop"
# the most rows one input row may become through non-unique joins for the loop to take the pipeline
# (its outputs must have room for them before the row starts)
_MAX_EXPANSION = 1 << 20
# a worker's first output buffers of a materializing loop (they double when full)
_FIRST_ROWS = 1 << 14


# A pipeline with an inner join's residual is compiled when the residual's build has at most this many rows
# (cache-sized: TPC-H q19's few thousand parts; operator at a time its lineitem pipeline kept ~3.5 of 16 cores busy,
# 440 ms of workers for 1.54 s of thread CPU at SF 10, e58d70d, the rest waiting for the GIL).
_RESIDUAL_BUILD_ROWS = 1 << 18


class _Redo(Exception):
    """A compiled loop saw a value leave its type: run the pipeline again operator at a time."""


@dataclass
class _Plan:
    plan: CompiledPlan
    base: list[str]                              # scan cids the loop reads
    names: dict[str, str]                        # scan cid -> stored column name
    probes: list[tuple[Any, Any, list[Any]]]     # (HashProbe, BuildSide, payload Fields)
    key_dicts: list[str | None]                  # per group key: the dictionary column it reads
    kernels: dict[tuple, Any] = field(default_factory=dict)
    bound: dict[int, BoundArgs] = field(default_factory=dict)  # per kernel (by id): its arguments
    refusals: dict[str, int] = field(default_factory=dict)
    compiled: int = 0
    fallback: int = 0
    expansion: int = 1                           # most rows one input row becomes (non-unique joins)
    stages: list[Any] = field(default_factory=list)  # plan.stages, probes in the loop's order
    marks: int | None = None                     # index in pipe.ops of the probe the loop marks for
    run_key: str | None = None                   # the scan column that is the one (integer) group key
    run_morsels: int = 0                         # morsels grouped by key runs (no hash table)
    run_fill: float = 1.0                        # most groups per key run a morsel kept so far (filters)
    kernel_cols: list[str] = field(default_factory=list)  # the scan columns the loop itself reads
    fast_kernels: dict[tuple, Any] = field(default_factory=dict)  # see compiled_cpu_kernels.kernel_for
    verdicts: tuple | None = None                # see compiled_cpu_kernels.verdict
    resident: ResidentPages | None = None        # the morsels' pages through the host page cache
    direct: tuple | None = None                  # group keys' ranges: see compiled_cpu_kernels.direct_ranges
    host: dict[int, list] = field(default_factory=dict)  # per kernel (by id): its host filters (host_filters)
    narrow: dict[int, Any] = field(default_factory=dict)  # see compiled_cpu_narrow.narrow_dtypes


def _refuse(ctx: ExecContext, pipe: Any, why: str) -> None:
    ctx.stat(pipe.sink.op_id).fused = f"operator at a time: {why}"


def _string_source(plan: CompiledPlan, e: Expr) -> str | None:
    """The dictionary column a string group key reads (through projections), else None."""
    while isinstance(e, ColumnRef):
        nxt = plan.alias.get(e.cid)
        if nxt is None:
            return e.cid
        e = nxt
    return None


def _prepare(ctx: ExecContext, pipe: Any) -> _Plan | str:
    src, sink = pipe.source, pipe.sink
    rows_sink = selects_rows(ctx, pipe)
    marks = mark_probe(pipe)
    if not isinstance(sink, HashAggregate) and not rows_sink and marks is None:
        return ""
    if not isinstance(src, TableScan | ResultSource) or src.ordered:
        return f"a{'n ordered' if src.ordered else ''} {type(src).__name__} source is not compiled for the CPU"
    if isinstance(src, ResultSource):
        first = next((b for b in ctx.results[src.pipeline_id] if isinstance(b, Batch)), None)
        if first is None:
            return "a ResultSource source of no rows in memory is not compiled for the CPU"
        names = {c: c for c in first.columns}
    else:
        names = dict(zip((f.cid for f in src.scan.fields), src.scan.column_names))
    if marks is not None:
        plan: Any = plan_marks(ctx, pipe, marks)
        if isinstance(plan, str):
            return plan
    else:
        plan, why = plan_compiled(ctx, pipe)
        if plan is None:
            return why
    size = expression_nodes(plan, None if plan.materialize else sink)
    if size > MAX_EXPRESSION_NODES:
        return f"its expressions have {size} nodes (more than {MAX_EXPRESSION_NODES} take Numba too long to compile)"
    needed = set(plan.referenced - plan.produced)
    if plan.materialize:  # the scan columns the gathered rows need as well
        for c in plan.outputs:
            e = plan.alias.get(c)
            needed |= (set(e.columns()) if e is not None else {c}) - plan.produced
    base = sorted(needed)
    missing = [c for c in base if c not in names]
    if missing:
        return f"column {missing[0]} is not read by the scan"
    probes = []
    from hetdb.backend.cpu.join import CpuJoinTable

    marking: list[Any] = []
    if marks is not None:
        pay = residual_payload(ctx, pipe.ops[marks])
        if isinstance(pay, str):
            return pay
        marking = [(pipe.ops[marks], pay)]
    for op, pay in plan.probes + marking:
        if op.kind not in ("inner", "semi", "anti", "left") + MARK_KINDS:
            return f"{op.kind} join is not compiled for the CPU"
        if op.residual is not None and op.kind not in ("inner", "semi", "anti") + MARK_KINDS:
            return f"a {op.kind} join with a residual condition is not compiled for the CPU"
        side = ctx.results[op.build_pipeline]
        if not isinstance(side.table, CpuJoinTable):
            return "a join build without a hash table is not compiled for the CPU"
        if op.kind == "left" and (op.residual is not None or side.batch.num_rows == 0):
            return "a left join with a residual condition or no build rows is not compiled for the CPU"
        probes.append((op, side, pay))
    residual_rows = [side.batch.num_rows for op, side, _ in probes if op.residual is not None and op.kind == "inner"]
    if residual_rows and max(residual_rows) > _RESIDUAL_BUILD_ROWS:
        # the loop reads a large build's rows through dependent cache misses (table slot, key rows,
        # payload), where the operators' gathers overlap them: TPC-H q07 at SF 10 on 16 threads took
        # 334 ms with its orders pipeline compiled against 257 operator at a time (1.45M build rows).
        # Only the residual's own build counts: with the bushy join order (CPU) q07's residual probes
        # 120k customers beside the 1.46M-row lineitem build, and operator at a time its 15M-row
        # orders pipeline held the GIL on 16 threads (552 ms at the checkpoint)
        return "an inner join with a residual condition into a large build runs operator at a time"
    key_dicts = []
    for _, e in () if plan.materialize else sink.keys:
        if e.dtype.kind == "string":
            d = _string_source(plan, e)
            if d is None:
                return f"string group key {e} is not a column"
            key_dicts.append(d)
        else:
            key_dicts.append(None)
    expansion = 1
    for op, side, _ in probes:
        if op.kind in ("inner", "left"):
            expansion *= max(1, ctx.backend.join_max_matches(side.table))
    if expansion > _MAX_EXPANSION:
        return f"a join makes up to {expansion} rows of one input row"
    stages, probes = (list(plan.stages), probes) if plan.materialize else _probe_order(plan, probes)
    if marks is not None:
        stages.append(("probe", pipe.ops[marks]))
    grouped = not plan.materialize and marks is None
    return _Plan(plan, base, names, probes, key_dicts, expansion=expansion, stages=stages, marks=marks,
                 run_key=_run_key(plan, sink, names) if grouped else None,
                 kernel_cols=[c for c in base if c in plan.referenced],
                 direct=direct_ranges(plan, sink, probes, scan_range_of(ctx, src, names)) if grouped else None)


def _run_key(plan: CompiledPlan, sink: Any, names: dict[str, str]) -> str | None:
    """The scan column the aggregation's one group key is, when it is an integer (or date, or
    narrow decimal) column the loop reads: a morsel where it is sorted is grouped by key runs."""
    if len(sink.keys) != 1:
        return None
    e = sink.keys[0][1]
    if e.dtype.kind not in ("int32", "int64", "date", "decimal") or e.dtype.is_wide:
        return None
    c = _string_source(plan, e)
    if c is None or c not in names or c in plan.produced or c not in plan.referenced:
        return None
    return c


def _probe_order(plan: CompiledPlan, probes: list) -> tuple[list[Any], list]:
    """The stages with each run of consecutive probes that make at most one row per input row
    (unique inner, semi, anti) ordered by the share of rows they let through, smallest first: a
    row most probes reject is dropped by the first one. A probe whose keys read a column another
    probe of the run makes stays after that one; projections in the run that the loop does not
    compute (no produced column) are dropped from it, others end it."""
    entry = {id(op): (op, side, pay) for op, side, pay in probes}
    out: list[Any] = []
    run: list[Any] = []

    def movable(op: Any) -> bool:
        side = entry[id(op)][1]
        if op.residual is not None:
            return False  # it reads columns of the pipeline beside its keys: stays where it is
        return op.kind in ("semi", "anti") or (op.kind == "inner" and bool(side.table.unique))

    def close() -> None:
        # smallest share first among the probes whose keys are there (not made by a probe left
        # to place): TPC-H q08's lineitem probes orders (6% pass), part (0.7%), supplier and its
        # nation (keyed by a supplier column), which kept the run in plan order
        left = list(run)
        while left:
            made = {f.cid for op in left for f in op.right_fields}
            ready = [op for op in left if not set().union(*(k.columns() for k in op.left_keys)) & made]
            if not ready:  # (a cycle cannot happen: each key reads earlier columns) keep the order
                ready = left[:1]
            op = min(ready, key=lambda op: pass_share(op, entry[id(op)][1]))
            out.append(("probe", op))
            left.remove(op)
        run.clear()

    for kind, x in plan.stages:
        if kind == "probe" and movable(x):
            run.append(x)
        elif kind == "project" and run and not any(
                f.cid in plan.produced and not (isinstance(e, ColumnRef) and e.cid == f.cid) for f, e in x.exprs):
            continue  # computes nothing the loop reads (renames of a column to itself included)
        else:
            close()
            out.append((kind, x))
    close()
    order = [x for kind, x in out if kind == "probe"]
    return out, [entry[id(op)] for op in order]


# ---- group tables -> partial states ---------------------------------------------------------------------
def _build_strings(ctx: ExecContext, p: _Plan, cid: str, rows: np.ndarray, valid: np.ndarray) -> Column:
    """The strings of build column ``cid`` at build ``rows`` (NULL where not ``valid``)."""
    side = ctx.results[p.plan.row_keys[cid]]
    if valid.all():
        return take(ctx.backend, side.batch.columns[cid], rows)
    return take(ctx.backend, side.batch.columns[cid], np.where(valid, rows, -1), missing=True)


def _partial(ctx: ExecContext, p: _Plan, sink: HashAggregate, kernel: Kernel, state: tuple,
             dicts: dict[str, Column]) -> Batch:
    _, gk, gv, ia, fa, ng = state
    row_keys = [i for i in range(len(sink.keys)) if p.key_dicts[i] in p.plan.row_keys]
    if row_keys and ng > 1:
        # the groups in build row order: the strings are then read from the build in order (random
        # reads of them took about five times as long)
        order = np.argsort(gk[row_keys[0], :ng], kind="stable")
        gk, gv, ia, fa = gk[:, order], gv[:, order], ia[:, order], fa[:, order]
    cols: dict[str, Column] = {}
    for i, (_, e) in enumerate(sink.keys):
        t = e.dtype
        bits = gk[i, :ng]
        if i in row_keys:  # build row numbers: the build column's strings
            cols[_g(i)] = _build_strings(ctx, p, p.key_dicts[i], bits, gv[i, :ng])
            continue
        if t.kind == "float64":
            data = bits.view(np.float64).copy()
            if kernel.key_signs and kernel.key_signs[i] >= 0:
                data[ia[kernel.key_signs[i], :ng] != 0] = -0.0
        elif t.kind == "bool":
            data = bits != 0
        else:
            data = bits.astype(t.numpy_dtype)
        valid = gv[i, :ng].copy()
        d = dicts.get(p.key_dicts[i]) if p.key_dicts[i] is not None else None
        cols[_g(i)] = Column(t, data=data, validity=None if valid.all() else valid, dictionary=d)
    for j, ((_, a), s) in enumerate(zip(sink.aggs, kernel.slots)):
        cnt = ia[s.cnt, :ng].copy()
        if a.op in ("sum", "avg"):
            st = _sum_type(a.arg.dtype)
            if s.isum >= 0:
                data = ia[s.isum, :ng].copy()  # exact: the loop stops when a sum leaves int64
            else:
                data = fa[s.fsum, :ng].copy()
            cols[_s(j, "sum")] = Column(st, data=data, validity=cnt > 0)
        if a.op in ("count", "count_star", "avg"):
            cols[_s(j, "cnt")] = Column(T.INT64, data=cnt)
        if a.op in ("min", "max"):
            t = a.arg.dtype
            raw = fa[s.fval, :ng] if s.fval >= 0 else ia[s.ival, :ng]
            data = raw != 0 if t.kind == "bool" else raw.astype(t.numpy_dtype)
            cols[_s(j, "val")] = Column(t, data=data, validity=cnt > 0)
    return Batch(cols, ng)


class _Selected:
    """What compiled._gather reads: the surviving input rows and the build rows per probe stage."""

    def __init__(self, rows: np.ndarray, build_rows: dict[int, np.ndarray]) -> None:
        self.rows, self.build_rows, self.marks = rows, build_rows, {}


class _Worker:
    """One worker's morsels: its group table lives across them (one partial at the end)."""

    def __init__(self, ctx: ExecContext, pipe: Any, run: Any, p: _Plan) -> None:
        self.ctx, self.pipe, self.run, self.p = ctx, pipe, run, p
        self.state: tuple | None = None
        self.outs: list[np.ndarray] = []       # a materializing loop's output rows, reused per morsel
        self.kernel: Kernel | None = None
        self.runs = False                      # the table's groups are one morsel's key runs
        self.dicts: dict[str, Column] = {}
        self.budget = TableBudget(ctx)  # the group table's reservation
        self.stats = LocalStats()       # added to the query's statistics when the worker ends
        for _, side, pay in p.probes:
            for f in pay:
                d = side.batch.columns[f.cid].dictionary
                if d is not None:
                    self.dicts[f.cid] = d

    def flush(self, lsink: Any, trim: bool = False) -> None:
        key_range = None
        if self.state is not None and self.state[5] and self.runs:
            gk = self.state[1]
            key_range = (int(gk[0, 0]), int(gk[0, self.state[5] - 1]))
        flush_table(self, lsink, lambda state: _partial(self.ctx, self.p, self.pipe.sink, self.kernel, state, self.dicts),
                    key_range, trim)

    def _read(self, morsel: Any) -> tuple[dict[str, Column], int] | None:
        src, ctx, reader = self.pipe.source, self.ctx, self.run.gsrc
        if isinstance(src, ResultSource):  # a previous pipeline's rows, as they are
            got = src.read(ctx, morsel, reader)
            if not got:
                return None
            return {c: got[0].columns[c] for c in self.p.base}, got[0].num_rows
        rg, rows = (morsel, None) if isinstance(morsel, int) else (morsel[0], morsel[1:])
        if verdict(ctx, src, reader, self.p, rg) == "skip":
            self.stats.add(src.op_id, pages_skipped=len(src.scan.fields))
            return None
        n = reader.row_group_rows(rg) if rows is None else rows[1] - rows[0]
        base = self.p.base
        first = rows is None or rows[0] == 0
        pages = None if self.p.resident is None else self.p.resident.read(reader, rg, first, self.stats)
        if pages is None:
            pages = src.read_pages(ctx, reader, [self.p.names[c] for c in base], rg, first)
        if rows is not None:
            pages = [slice_column(ctx.backend, col, rows[0], rows[1]) for col in pages]
        self.stats.add(src.op_id, rows_in=n, rows_out=n)
        return dict(zip(base, pages)), n

    def work(self) -> None:
        ctx, pipe, run = self.ctx, self.pipe, self.run
        sink = pipe.sink
        # one kernel thread per worker among several (the pool's threads keep whatever count they
        # had: Numba's default is every core, so each worker's gathers, merges and fallback kernels
        # started a team of `threads` OpenMP threads: 16 x 16 on 16 cores)
        run.kernel_threads()
        lops = [op.init_local(ctx, g) for op, g in zip(pipe.ops, run.gops)]
        lsink = sink.init_local(ctx, run.gsink)
        try:
            self._morsels(lops, lsink)
        except BaseException:
            run.stop = True
            raise
        finally:
            self.stats.publish(ctx)
        self.flush(lsink)
        sink.combine(ctx, run.gsink, lsink)

    def _morsels(self, lops: list, lsink: Any) -> None:
        run = self.run
        while True:
            item = run.next_morsel()
            if item is None:
                break
            self._morsel(*item, lops, lsink)

    def _morsel(self, index: int, morsel: Any, lops: list, lsink: Any) -> None:
        """One morsel (a row group, a run of them, or a slice of one) through the pipeline."""
        ctx, pipe, run, p = self.ctx, self.pipe, self.run, self.p
        sink = pipe.sink
        ctx.set_morsel(index)
        with LocalTimer(self.stats, pipe.source.op_id):
            got = self._read(morsel)
        if got is None:
            return
        cols, n = got
        runs = 0 if p.marks is not None or p.plan.materialize else morsel_runs(p, cols)
        kernel = kernel_for(p, sink, cols, runs > 0)
        if isinstance(kernel, str):
            p.refusals[kernel] = p.refusals.get(kernel, 0) + 1
            p.fallback += 1
            for b in pipe.source.read(ctx, morsel, run.gsrc):
                if b.num_rows:
                    run.push(b, 0, lops, lsink)
            return
        host = p.host.get(id(kernel))
        if host:
            with LocalTimer(self.stats, pipe.source.op_id):
                cols = _with_host_filters(ctx, cols, n, host)
        if p.marks is not None:
            if not self._run_marks(kernel, cols, n):
                p.fallback += 1
                for b in pipe.source.read(ctx, morsel, run.gsrc):
                    if b.num_rows:
                        run.push(b, 0, lops, lsink)
        elif p.plan.materialize:
            if not self._run_rows(kernel, cols, n, lsink):
                p.fallback += 1
                for b in pipe.source.read(ctx, morsel, run.gsrc):
                    if b.num_rows:
                        run.push(b, 0, lops, lsink)
        else:
            if p.narrow:  # (after the host filters: the operators read the page as it is)
                rg, rows = (morsel, None) if isinstance(morsel, int) else (morsel[0], morsel[1:])
                cols = narrowed(p, cols, p.resident.keys_of(run.gsrc, rg), rows)
            self._run_kernel(kernel, cols, n, lsink, runs)

    def table_for(self, kernel: Kernel, key_dicts: dict[str, Any], runs: int, lsink: Any) -> None:
        """The worker's group table ready for a morsel of ``kernel`` (the old one's groups go to the
        sink when the layout or a key's dictionary changed, or the table was over key runs)."""
        p, sink = self.p, self.pipe.sink
        if runs and self.state is not None:
            self.flush(lsink)
        if self.state is not None and (kernel is not self.kernel or any(
                self.dicts.get(c) is not d for c, d in key_dicts.items())):
            self.flush(lsink)  # another layout or dictionary: the old groups go to the sink
        self.dicts.update(key_dicts)
        if self.state is None:
            direct = p.direct is not None and not runs
            self.kernel, self.runs = kernel, runs > 0
            self.state = self.budget.new(len(sink.keys), kernel.num_int, kernel.num_float,
                                         run_groups(p, runs), int(np.prod(p.direct[1])) if direct else 0)

    def loop(self, kernel: Kernel, args: list, start: int, n: int, lsink: Any, runs: int) -> None:
        """Rows ``start`` to ``n`` of a morsel through the aggregating loop, the table grown (or its
        groups handed to the sink) whenever it is full."""
        p, sink = self.p, self.pipe.sink
        direct = p.direct is not None and not runs
        while True:
            ng, err, start = kernel.fn(start, n, p.expansion, *args, *self.state)
            self.state = (*self.state[:5], ng)
            if err == 1:
                raise _Redo()
            if err == 0:
                break
            # the group table is full: double it and go on from the row that did not fit (or,
            # when host_memory_limit refuses the bigger table, hand its groups to the sink and
            # go on with a fresh one)
            grown = self.budget.grow(self.state, 2 * (ng + p.expansion), not runs and not direct)
            if grown is None:
                self.flush(lsink, trim=True)
                grown = self.budget.new(len(sink.keys), kernel.num_int, kernel.num_float, 0,
                                        int(np.prod(p.direct[1])) if direct else 0)
            elif direct:
                grown = (self.state[0], *grown[1:])  # the direct slots stay (they number groups)
            self.state = grown

    def _run_kernel(self, kernel: Kernel, cols: dict[str, Column], n: int, lsink: Any, runs: int) -> None:
        """One morsel through the aggregating loop. A loop over ``runs`` key runs (0: hashed) starts
        a fresh table and hands its groups (each key once, increasing) to the aggregation after
        the morsel."""
        ctx, p, sink = self.ctx, self.p, self.pipe.sink
        with LocalTimer(self.stats, sink.op_id):
            self.table_for(kernel, {c: cols[c].dictionary for c in p.key_dicts if c is not None and c in cols},
                           runs, lsink)
            self.loop(kernel, arguments(ctx, p, kernel, cols), 0, n, lsink, runs)
            self.stats.add(sink.op_id, rows_in=n)
            p.compiled += 1
            if runs:
                p.run_morsels += 1
                if p.run_morsels == 1 or self.state[5] > runs * p.run_fill:
                    p.run_fill = self.state[5] / runs  # (workers race here: any of their values will do)
                self.flush(lsink)

    def _run_marks(self, kernel: Kernel, cols: dict[str, Column], n: int) -> bool:
        """A morsel of a loop ending in a right semi / anti join: marks the build rows it matches.
        False (nothing marked) when the loop gave up on the morsel."""
        ctx, p = self.ctx, self.p
        op = self.pipe.ops[p.marks]
        with LocalTimer(self.stats, op.op_id):
            args = arguments(ctx, p, kernel, cols)
            _, err, _ = kernel.fn(0, n, p.expansion, *args, marked_flags(ctx, self.run, p.marks), 0)
            if err == 1:
                p.refusals["a value left its type"] = p.refusals.get("a value left its type", 0) + 1
                return False
            self.stats.add(op.op_id, rows_in=n)
            p.compiled += 1
        return True

    def _run_rows(self, kernel: Kernel, cols: dict[str, Column], n: int, lsink: Any) -> bool:
        """A materializing pipeline's morsel: the loop selects rows and matches, the columns the hash
        build needs are gathered from them. False (nothing sunk) when the loop gave up on the morsel."""
        ctx, p, sink = self.ctx, self.p, self.pipe.sink
        with LocalTimer(self.stats, sink.op_id):
            args = arguments(ctx, p, kernel, cols)
            width = 1 + len(kernel.inner_probes)
            if len(self.outs) != width:
                self.outs = [np.empty(_FIRST_ROWS, np.int64) for _ in range(width)]
            start = count = 0
            while True:
                count, err, start = kernel.fn(start, n, p.expansion, *args, *self.outs, count)
                if err == 1:
                    p.refusals["a value left its type"] = p.refusals.get("a value left its type", 0) + 1
                    return False
                if err == 0:
                    break
                # the outputs are full: double them (the worker keeps them for its next morsels)
                size = 2 * (count + p.expansion)
                grown = [np.empty(size, np.int64) for _ in range(width)]
                for new, old in zip(grown, self.outs):
                    new[:count] = old[:count]
                self.outs = grown
            outs = self.outs
            stage_of = [i for i, (kind, _) in enumerate(p.plan.stages) if kind == "probe"]
            sel = _Selected(outs[0][:count], {stage_of[q]: outs[1 + j][:count]
                                              for j, q in enumerate(kernel.inner_probes)})
            p.compiled += 1
        if count:
            sink.sink(ctx, _gather(ctx, p.plan, Batch(cols, n), sel), self.run.gsink, lsink)
        return True


def _with_host_filters(ctx: ExecContext, cols: dict[str, Column], n: int, host: list) -> dict[str, Column]:
    """The morsel's columns and, per host filter, the BOOL column of the rows it keeps."""
    batch = Batch(cols, n)
    out = dict(cols)
    for cid, e in host:
        out[cid] = Column(T.BOOL, data=np.ascontiguousarray(ctx.evaluator.predicate(e, batch), dtype=bool))
    return out


def _go(ctx: ExecContext, run: Any, p: _Plan, pool: Any, threads: int) -> None:
    pipe = run.pipe
    workers = max(1, min(threads, len(run.morsels)))
    if workers == 1 or pool is None:
        _Worker(ctx, pipe, run, p).work()
        return
    run.parallel = True
    from hetdb.exec.pipeline import run_workers

    run_workers(pool, [_Worker(ctx, pipe, run, p).work for _ in range(workers)])


def run_compiled_cpu(ctx: ExecContext, pipe: Any, run: Any, pool: Any, threads: int) -> Any:
    """Run ``pipe`` compiled when the CPU pipeline compiler takes it (its result stored; returns
    None), else return the run for the operators (a fresh one when the compiled run gave up)."""
    if not getattr(ctx.options, "cpu_compile", True):
        return run
    p = _prepare(ctx, pipe)
    if isinstance(p, str):
        if p:
            _refuse(ctx, pipe, p)
        return run
    if isinstance(pipe.source, TableScan):
        p.resident = ResidentPages(ctx, pipe.source, [p.names[c] for c in p.base])
        p.narrow = narrow_dtypes(ctx, p, pipe.source)
    for op, side, pay in p.probes:
        # the probe's runtime filter is built here, on every kernel thread, before the workers
        # start (else the first worker builds it on one thread while the others wait for it)
        prefilter(side.table)
        if clustered(op, side, pay):  # (so are the build columns copied in key order)
            copy_in_key_order(ctx, side, pay)
    try:
        _go(ctx, run, p, pool, threads)
    except _Redo:
        _refuse(ctx, pipe, "a value left its type in the compiled loop; ran again operator at a time")
        return type(run)(ctx, pipe)
    run.flush()
    st = ctx.stat(pipe.sink.op_id if p.marks is None else pipe.ops[p.marks].op_id)
    if p.compiled:
        what = "hash probes and hash aggregation"
        if p.marks is not None:
            what = "hash probes, marking the build rows it matches"
        elif p.plan.materialize:
            what = "hash probes and row selection" if p.probes else "row selection"
        st.fused = f"{CPU_COMPILED} (scan, filters, {what}; {p.compiled} morsels)"
        if p.run_morsels:
            st.fused += f"; {p.run_morsels} morsels sorted by the group key, grouped by key runs"
        if p.fallback:
            st.fused += f"; {p.fallback} morsels operator at a time: " + "; ".join(sorted(p.refusals))
    else:
        st.fused = "operator at a time: " + ("; ".join(sorted(p.refusals)) or "no rows")
    ctx.results[pipe.pid] = pipe.sink.finalize(ctx, run.gsink)
    return None

