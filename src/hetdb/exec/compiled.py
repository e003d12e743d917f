"""Compiled GPU pipelines: any ``source -> (Filter | Project | HashProbe)* -> HashAggregate`` that the
dense fused path (exec/fusion.py) does not take runs as one generated kernel per batch through
backend/gpu/codegen's pipeline compiler: NULLs through validity, dictionary strings through per-
dictionary lookups, hash probes of every kind except right/full/cross into the join build's hash
table (several keys, non-unique builds, residuals on inner/semi/anti), and hash aggregation with any
group keys. The kernel's groups become a partial-state batch of the aggregation, so its merge,
memory reservation and spilling (partitioned aggregation) are the operator's own.

A kernel is generated per batch *signature* (which inputs have NULLs, which strings are dictionary
codes, which pages are kept compressed in device memory and in which codec: the kernel decodes
those in place, see backend/gpu/encoded.py and option ``gpu_compressed_cache``); a batch the compiler refuses (a plain-string page it reads, an expression it does not
translate) goes through the operators, and EXPLAIN ANALYZE says how many batches did and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hetdb.column import Batch, Column
from hetdb.errors import UnsupportedError
from hetdb.exec.compiled_features import expr_refusal, off, on
from hetdb.exec.compiled_paged import run_paged
from hetdb.exec.compiled_rows import consume_rows, dictionary_lookups, selects_rows, topk_first
from hetdb.exec.compiled_rows import gather as _gather  # noqa: F401 (exec/compiled_cpu.py imports it from here)
from hetdb.exec.compiled_scan import resident_scan
from hetdb.exec.compiled_tables import KeptTables, expansion, partial_state
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild
from hetdb.exec.operators.scan import TableScan, conjunction
from hetdb.plan.expr import Cast, ColumnRef, Expr
from hetdb.plan.exprutil import conjuncts, substitute

COMPILED = "compiled into one generated kernel"
_KINDS = ("inner", "left", "single", "semi", "anti", "mark")
_RIGHT = ("right_semi", "right_anti")
_KEYLESS = ("inner", "cross", "left", "single", "semi", "anti")
KEYLESS_MAX_ROWS = 4096  # a join without keys multiplies rows: compiled for small build sides only
_AGGS = ("sum", "count", "count_star", "min", "max", "avg")


class _Refused(Exception):
    """Why a pipeline is not compiled; ``op_id`` names the operator the compiler refuses (its line
    in EXPLAIN ANALYZE says so), None when it is the sink."""

    def __init__(self, message: str, op_id: int | None = None) -> None:
        super().__init__(message)
        self.op_id = op_id


@dataclass
class CompiledPlan:
    stages: list[Any]                      # ("filter", expr) | ("project", ProjectOp) | ("probe", HashProbe)
    sink: Any                              # HashAggregate, or a row sink (HashBuild, SortSink, TopNSink)
    produced: set[str]                     # cids made inside the kernel (projections, payload, marks)
    referenced: set[str]
    probes: list[tuple[HashProbe, list[Any]]] = field(default_factory=list)  # (op, payload Fields)
    kernels: dict[tuple, Any] = field(default_factory=dict)   # signature -> CompiledPipeline | reason
    luts: dict[tuple, tuple] = field(default_factory=dict)
    refusals: dict[str, int] = field(default_factory=dict)
    materialize: bool = False              # sink takes the gathered rows (compiled_rows.selects_rows)
    outputs: list[str] = field(default_factory=list)          # cids the sink reads (materialize)
    alias: dict[str, Expr] = field(default_factory=dict)      # projected cid -> expr over base cids
    mark_index: int | None = None          # pipe.ops index of a right_semi/right_anti probe ending the kernel
    row_keys: dict[str, int] = field(default_factory=dict)    # plain-string group key -> build pipeline
    unique_rows: bool = False              # no probe expands a row (run_compiled: expansion is 1)


def _refs(e: Expr | None) -> set[str]:
    return set() if e is None else set(e.columns())


def plan_compiled(ctx: ExecContext, pipe: Any) -> tuple[CompiledPlan | None, str]:
    """(plan, "") when the pipeline can run compiled, else (None, why not)."""
    sink = pipe.sink
    right = next((i for i, op in enumerate(pipe.ops) if isinstance(op, HashProbe) and op.kind in _RIGHT), None)
    materialize = selects_rows(ctx, pipe)
    if right is None and not isinstance(sink, HashAggregate) and not materialize:
        return None, ""
    try:
        if right is None and materialize and not (isinstance(sink, HashBuild)
                                                  and any(isinstance(op, HashProbe) for op in pipe.ops)):
            why = off("row_sinks")
            if why:
                raise _Refused(why)
        if right is not None:
            why = off("right_semi_anti")
            if why:
                raise _Refused(why, pipe.ops[right].op_id)
        return _plan(ctx, pipe, sink, right), ""
    except _Refused as e:
        if e.op_id is not None:
            ctx.stat(e.op_id).fused = f"not compiled: {e}"
        return None, str(e)


def _plan(ctx: ExecContext, pipe: Any, sink: Any, right: int | None = None) -> CompiledPlan:
    """``right``: index of a right_semi/right_anti probe in ``pipe.ops``: the kernel runs the operators
    up to it and marks its build rows; what comes after it runs on the rows the join emits at its end."""
    materialize = right is None and not isinstance(sink, HashAggregate)  # (plan_compiled: selects_rows)
    if right is None and not materialize:
        if sink.raw_mode:
            # the kernel groups by the keys and every argument: one row per distinct tuple goes to
            # the aggregation's DISTINCT machinery (which no duplicate changes, nor min/max)
            why = off("count_distinct")
            if not why and getattr(ctx, "device", None) is None:
                why = "compiled by GPU kernels only"
            if why:
                raise _Refused(f"DISTINCT aggregates are not compiled ({why})")
            for _, a in sink.aggs:
                if not (a.distinct or a.op in ("min", "max")) or a.arg is None:
                    raise _Refused(f"{a.op} without DISTINCT next to a DISTINCT aggregate is not compiled")
        for _, a in sink.aggs:
            if a.op not in _AGGS and not sink.raw_mode:
                raise _Refused(f"aggregate {a.op} is not compiled")
    stages: list[Any] = []
    if isinstance(pipe.source, TableScan):
        stages += [("filter", c) for f in pipe.source.scan.filters for c in conjuncts(f)]
    for op in pipe.ops if right is None else pipe.ops[:right + 1]:
        if isinstance(op, FilterOp):
            stages += [("filter", c) for c in conjuncts(op.predicate)]
        elif isinstance(op, ProjectOp):
            stages.append(("project", op))
        elif isinstance(op, HashProbe):
            if op.kind == "cross" and not op.left_keys:
                pass  # every build row matches every row: an inner join without keys
            elif op.kind not in _KINDS and op.kind not in _RIGHT:
                raise _Refused(f"{op.kind} join is not compiled", op.op_id)
            if op.residual is not None and op.kind not in ("inner", "semi", "anti") + _RIGHT:
                raise _Refused(f"{op.kind} join with a residual condition is not compiled", op.op_id)
            if not op.left_keys:
                why = off("keyless_join")
                if why or op.kind not in _KEYLESS:
                    raise _Refused(why or f"a {op.kind} join without keys is not compiled", op.op_id)
                side = ctx.results[op.build_pipeline]
                most = 1 if materialize and op.kind in ("inner", "cross") else KEYLESS_MAX_ROWS
                if side.partitions is None and side.num_rows > most:
                    # (rows gathered for a hash build multiply by the build rows: one at most)
                    raise _Refused(f"a join without keys over {side.num_rows} build rows is not compiled "
                                   f"here (at most {most})", op.op_id)
            if any(k.dtype.kind == "string" for k in op.left_keys):
                # (GPU kernels look a dictionary code's build id up: codegen/pipeline_gen._string_key)
                why = off("string_join_keys") if getattr(ctx, "device", None) is not None \
                    else "compiled by GPU kernels only"
                if why:
                    raise _Refused(f"string join keys are not compiled ({why})", op.op_id)
            side = ctx.results[op.build_pipeline]
            if side.partitions is not None:
                raise _Refused("the join's build side was partitioned (spilled)", op.op_id)
            stages.append(("probe", op))
        else:
            raise _Refused(f"{type(op).__name__} is not compiled", op.op_id)
    # backwards: ``later`` = columns needed after a stage (by the sink or kernel), ``kneed`` = the
    # ones the kernel itself reads (a materializing sink's other columns are gathered afterwards)
    later: set[str] = set()
    kneed: set[str] = set()
    if materialize:
        later |= {f.cid for f in sink.fields}
        for e in sink.keys:  # (hash build keys are expressions, sort keys SortKeys)
            later |= _refs(getattr(e, "expr", e))
    elif right is None:  # (a kernel marking build rows has no other output)
        for _, a in sink.aggs:
            kneed |= _refs(a.arg)
        for _, e in sink.keys:
            kneed |= _refs(e)
        later |= kneed
    produced: set[str] = set()
    referenced = set(kneed)
    plan = CompiledPlan(stages, sink, produced, referenced, materialize=materialize, outputs=sorted(later),
                        mark_index=right)
    for kind, x in stages:
        if kind == "project":
            for f, e in x.exprs:
                if not (isinstance(e, ColumnRef) and e.cid == f.cid):
                    e = substitute(e, plan.alias)
                    plan.alias[f.cid] = e if e.dtype == f.dtype else Cast(f.dtype, e)
    key_only = set() if materialize or right is not None else _group_key_only(plan, sink)
    if not materialize and right is None:
        why = off("dict_expr_keys")
        computed = [e for _, e in sink.keys if e.dtype.kind == "string"
                    and not isinstance(substitute(e, plan.alias), ColumnRef)]
        if why and computed:
            raise _Refused(f"string group key {computed[0]} is computed ({why})")
    payloads: dict[int, list[Any]] = {}
    for i in range(len(stages) - 1, -1, -1):
        kind, x = stages[i]
        if kind == "filter":
            later |= _refs(x)
            kneed |= _refs(x)
        elif kind == "project":
            for f, e in x.exprs:
                if not (isinstance(e, ColumnRef) and e.cid == f.cid):
                    if f.cid in later:
                        later.discard(f.cid)
                        later |= _refs(e)
                        produced.add(f.cid)
                    if f.cid in kneed:
                        kneed.discard(f.cid)
                        kneed |= _refs(e)
        else:
            need = kneed | _refs(x.residual)
            pay = [f for f in x.right_fields if f.cid in need]
            for f in pay:
                col = ctx.results[x.build_pipeline].batch.columns[f.cid]
                if f.dtype.kind == "string" and col.dictionary is None:
                    why = off("string_group_rows") if f.cid in key_only else "not only a group key"
                    if why:
                        raise _Refused(f"build column {f.cid} is a plain (not dictionary-encoded) string "
                                       f"({why})", x.op_id)
                    plan.row_keys[f.cid] = x.build_pipeline
            payloads[i] = pay
            produced |= {f.cid for f in x.right_fields if f.cid in later or f.cid in need}
            if x.mark is not None:
                produced.add(x.mark.cid)
            keys = {c for k in x.left_keys for c in k.columns()} | _refs(x.residual)
            later |= keys
            kneed |= keys
        referenced |= kneed
    plan.probes = [(x, payloads[i]) for i, (kind, x) in enumerate(stages) if kind == "probe"]
    why = expr_refusal(_kernel_exprs(plan)) if getattr(ctx, "device", None) is not None else None
    if why:  # (the switches are the GPU kernels': the CPU's compiled pipelines share this planning)
        raise _Refused(why)
    return plan


def _kernel_exprs(plan: CompiledPlan) -> list[Expr | None]:
    """The expressions a kernel of ``plan`` may evaluate (for the switches of compiled_features)."""
    out: list[Expr | None] = []
    for kind, x in plan.stages:
        if kind == "filter":
            out.append(x)
        elif kind == "project":
            out += [e for _, e in x.exprs]
        else:
            out += [*x.left_keys, x.residual]
    if isinstance(plan.sink, HashAggregate):
        out += [e for _, e in plan.sink.keys] + [a.arg for _, a in plan.sink.aggs]
    return out


def _group_key_only(plan: CompiledPlan, sink: HashAggregate) -> set[str]:
    """Columns that are group keys as they are and that nothing else the kernel computes reads (a
    plain-string build column among them groups by its build row: see pipeline_spec.Input)."""
    bare, other = set(), set()
    for _, e in sink.keys:
        e = substitute(e, plan.alias)
        if isinstance(e, ColumnRef):
            bare.add(e.cid)
        else:
            other |= _refs(e)
    for _, a in sink.aggs:
        other |= _refs(None if a.arg is None else substitute(a.arg, plan.alias))
    for kind, x in plan.stages:
        if kind == "filter":
            other |= _refs(substitute(x, plan.alias))
        elif kind == "probe":
            for e in (*x.left_keys, x.residual):
                other |= _refs(None if e is None else substitute(e, plan.alias))
    return bare - other


# ---- kernels per batch signature ----------------------------------------------------------------------
def _kernel(ctx: ExecContext, plan: CompiledPlan, batch: Batch) -> tuple[Any, list[str]]:
    """(CompiledPipeline, input cids) for this batch, or (reason, []) when it cannot run compiled."""
    from hetdb.backend.gpu.codegen.pipeline_spec import (
        AggregateSink,
        FilterStage,
        Input,
        MarkBuildSink,
        MaterializeSink,
        PipelineSpec,
        ProbeStage,
        ProjectStage,
    )

    cids = [c for c in batch.columns if c in plan.referenced and c not in plan.produced]
    missing = plan.referenced - plan.produced - set(batch.columns)
    if missing:
        return f"column {sorted(missing)[0]} is not in the batch", []
    sig = []
    for c in cids:
        col = batch.columns[c]
        if col.dtype.kind == "string" and col.dictionary is None:
            why = off("plain_like")
            if why or getattr(col, "device_page", None) is not None:
                return f"column {c} is a plain (not dictionary-encoded) string page ({why or 'compressed'})", []
        page = getattr(col, "device_page", None)  # a compressed page: the kernel decodes it in place
        sig.append((c, col.dtype, col.validity is not None, col.dictionary is not None,
                    "plain" if page is None else page.codec))
    key = tuple(sig)
    hit = plan.kernels.get(key)
    if hit is not None:
        return hit, cids
    from hetdb.backend.gpu.codegen.pipeline_runtime import CompiledPipeline

    inputs = tuple(Input(c, t, nullable, d, codec) for c, t, nullable, d, codec in sig)
    stages = []
    pay_of = {id(op): pay for op, pay in plan.probes}
    for kind, x in plan.stages:
        if kind == "filter":
            stages.append(FilterStage(x))
        elif kind == "project":
            stages.append(ProjectStage(tuple((f.cid, e) for f, e in x.exprs if f.cid in plan.produced)))
        else:
            side = ctx.results[x.build_pipeline]
            payload = []
            for f in pay_of[id(x)]:
                col = side.batch.columns[f.cid]
                payload.append(Input(f.cid, f.dtype, col.validity is not None, col.dictionary is not None,
                                     build_row=f.cid in plan.row_keys))
            stages.append(ProbeStage("inner" if x.kind == "cross" else x.kind, tuple(x.left_keys), tuple(k.dtype for k in x.left_keys),
                                     tuple(payload), x.residual, x.mark.cid if x.mark is not None else None))
    if plan.mark_index is not None:
        sink: Any = MarkBuildSink()
    elif plan.materialize:
        sink = MaterializeSink()
    else:
        keys = tuple(e for _, e in plan.sink.keys)
        if plan.sink.raw_mode:  # distinct (keys, arguments) tuples
            sink = AggregateSink(keys + tuple(a.arg for _, a in plan.sink.aggs), ())
        else:
            sink = AggregateSink(keys, tuple((a.op, a.arg) for _, a in plan.sink.aggs),
                                 fold=off("group_fold") is None, share=on("slot_share"))
    spec = PipelineSpec(inputs, tuple(stages), sink)
    try:
        compiled: Any = CompiledPipeline(spec)
    except UnsupportedError as e:
        compiled = str(e)
    plan.kernels[key] = compiled
    return compiled, cids


def _probe_inputs(ctx: ExecContext, plan: CompiledPlan) -> tuple[list, dict[str, Column]]:
    from hetdb.backend.gpu.codegen.pipeline_runtime import ProbeInput

    probes, dicts = [], {}
    for op, pay in plan.probes:
        side = ctx.results[op.build_pipeline]
        cols = [side.batch.columns[f.cid] for f in pay]
        for f, c in zip(pay, cols):
            if c.dictionary is not None:
                dicts[f.cid] = c.dictionary
        keyless = not op.left_keys  # (no hash table: every build row matches)
        table = valid_idx = None
        if not keyless:
            # (made at its first probe: the build's time in EXPLAIN ANALYZE)
            with Timer(ctx, op.op_id if op.build is None else op.build.op_id):
                table, valid_idx = side.table, side.valid_idx
        probes.append(ProbeInput(table, valid_idx, cols, side.nonempty, side.has_null_key, side.num_rows))
    return probes, dicts


def _consume(ctx: ExecContext, plan: CompiledPlan, kernel: Any, cids: list[str], b: Batch, probes: list,
             build_dicts: dict[str, Column], gsink: Any, lsink: Any) -> None:
    """One batch through its kernel; the groups join the aggregation as a partial-state batch."""
    sink = plan.sink
    with Timer(ctx, sink.op_id):
        dicts = dict(build_dicts)
        dicts.update({c: b.columns[c].dictionary for c in cids if b.columns[c].dictionary is not None})
        groups = kernel.aggregate({c: b.columns[c] for c in cids}, b.num_rows,
                                  dictionary_lookups(ctx, plan, kernel, dicts), probes)
        ctx.add(sink.op_id, rows_in=b.num_rows)
        sink.add_partial(ctx, partial_state(ctx, plan, kernel, groups, dicts), gsink, lsink)


class _Marks:
    """The runs (pipeline_runtime.MarkRun, one per kernel) of a pipeline ending in a right_semi /
    right_anti probe, all into the join operator's matched flags."""

    def __init__(self, ctx: ExecContext, plan: CompiledPlan, pipe: Any, run: Any) -> None:
        self.ctx, self.plan = ctx, plan
        self.op = pipe.ops[plan.mark_index]
        self.marked = self.op._matched(ctx, ctx.results[self.op.build_pipeline], run.gops[plan.mark_index])
        self.runs: dict[int, Any] = {}

    def consume(self, kernel: Any, cids: list[str], b: Batch, probes: list, build_dicts: dict[str, Column]) -> None:
        from hetdb.backend.gpu.codegen.pipeline_runtime import MarkRun

        ctx, plan = self.ctx, self.plan
        with Timer(ctx, self.op.op_id):
            mr = self.runs.get(id(kernel))
            if mr is None:
                mr = self.runs[id(kernel)] = MarkRun(kernel, self.marked)
            dicts = dict(build_dicts)
            dicts.update({c: b.columns[c].dictionary for c in cids if b.columns[c].dictionary is not None})
            mr.add({c: b.columns[c] for c in cids}, b.num_rows, dictionary_lookups(ctx, plan, kernel, dicts), probes)
            ctx.add(self.op.op_id, rows_in=b.num_rows)

    def finish(self) -> None:
        with Timer(self.ctx, self.op.op_id):
            for mr in self.runs.values():
                mr.finish()


class BatchCompiler:
    """Compiled kernels for the batches a dense fused pipeline cannot take (pages with NULLs): planned
    at the first such batch (the builds the pipeline probes must have run by then)."""

    def __init__(self, ctx: ExecContext, pipe: Any, gsink: Any, lsink: Any) -> None:
        self.ctx, self.pipe, self.gsink, self.lsink = ctx, pipe, gsink, lsink
        self.plan: CompiledPlan | None = None
        self.tried = False
        self.probes: list = []
        self.build_dicts: dict[str, Column] = {}
        self.why = ""                              # why the pipeline is not compiled
        self.refusals: dict[str, int] = {}         # why batches were not: reason -> batches
        self.tables: KeptTables | None = None         # one device table across the batches it takes

    def _ready(self) -> bool:
        """Plan the compiled pipeline (once); whether it runs compiled."""
        if not self.tried:
            self.tried = True
            if self.ctx.device is None:  # a CPU emulation of fused kernels: no device to compile for
                self.why = "no GPU to compile for"
            else:
                self.plan, self.why = plan_compiled(self.ctx, self.pipe)
                if self.plan is not None:
                    self.probes, self.build_dicts = _probe_inputs(self.ctx, self.plan)
                    if not self.plan.materialize and self.plan.mark_index is None:
                        self.tables = KeptTables(self.ctx, self.plan, self.probes)
        return self.plan is not None

    def run_resident(self, hot: Any) -> str | None:
        """Every row of the resident scan ``hot`` (compiled_scan.ResidentScan) in one launch of the
        paged kernel (exec/compiled_paged.py); what it did, or None (nothing done) when it cannot."""
        if not self._ready() or self.plan.materialize or self.plan.mark_index is not None:
            return None
        return run_paged(self.ctx, self.pipe, self.plan, hot, self.probes, self.build_dicts, None, self.gsink,
                         self.lsink)

    def consume(self, b: Batch) -> bool:
        """Run ``b`` (unfiltered scan rows) compiled; False when the compiler refuses it (the reason
        is counted in ``refusals``)."""
        self._ready()
        if self.plan is None:
            why = self.why or "the pipeline is not compiled"
            self.refusals[why] = self.refusals.get(why, 0) + 1
            return False
        kernel, cids = _kernel(self.ctx, self.plan, b)
        if isinstance(kernel, str):
            self.refusals[kernel] = self.refusals.get(kernel, 0) + 1
            return False
        if self.tables is None or not self.tables.consume(kernel, cids, b, self.probes, self.build_dicts,
                                                          self.gsink, self.lsink):
            _consume(self.ctx, self.plan, kernel, cids, b, self.probes, self.build_dicts, self.gsink, self.lsink)
        return True

    def finish(self) -> None:
        """Hand the groups the kept table holds to the aggregation (before its local state combines)."""
        if self.tables is not None:
            self.tables.finish(self.gsink, self.lsink)


def run_compiled(ctx: ExecContext, pipe: Any, plan: CompiledPlan, run: Any) -> None:
    """Drive ``pipe`` batch by batch through its compiled kernels (operators for refused batches)."""
    src, sink = pipe.source, pipe.sink
    scan = isinstance(src, TableScan)
    lops = [op.init_local(ctx, g) for op, g in zip(pipe.ops, run.gops)]
    lsink = sink.init_local(ctx, run.gsink)
    probes, build_dicts = _probe_inputs(ctx, plan)
    tables = None if plan.materialize or plan.mark_index is not None else KeptTables(ctx, plan, probes)
    marks = None if plan.mark_index is None else _Marks(ctx, plan, pipe, run)
    plan.unique_rows = expansion(plan, probes) == 1
    hot = resident_scan(ctx, src, run.gsrc, run.morsels) if scan else None
    paged = None
    try:
        if hot is not None:
            paged = run_paged(ctx, pipe, plan, hot, probes, build_dicts, marks, run.gsink, lsink)
        if paged is None:
            compiled, fallback, encoded = _drive(ctx, pipe, plan, run, hot, lops, lsink, probes, build_dicts,
                                                 tables, marks)
        else:
            compiled, fallback, encoded = 1, 0, 0
    finally:
        if hot is not None:
            hot.close()
    if tables is not None:
        tables.finish(run.gsink, lsink)
    if marks is not None:
        marks.finish()  # (before the join emits the marked rows: run.flush)
    sink.combine(ctx, run.gsink, lsink)
    run.flush()
    st = ctx.stat(sink.op_id)
    if compiled:
        what = "hash probes and hash aggregation"
        if plan.materialize:
            what = "hash probes, compaction and gather" if plan.probes else "filters, compaction and gather"
            if topk_first(plan):
                what += " (a top-k on the device first)"
        if plan.mark_index is not None:
            what = (f"hash probes marking the build rows of the {pipe.ops[plan.mark_index].kind} join; "
                    "its rows then go through the operators")
        st.fused = f"{COMPILED} ({what}; {paged or f'{compiled} batches'})"
        if hot is not None and paged is None:
            st.fused += "; pages read from the device cache without streaming"
        if encoded:
            st.fused += f"; {encoded} batches read compressed pages in place"
        if tables is not None and tables.batches:
            st.fused += f"; {tables.batches} batches into hash tables kept across launches"
            if tables.grown:
                st.fused += f" (grown {tables.grown} times)"
        if fallback:
            st.fused += f"; {fallback} batches operator at a time: " + "; ".join(sorted(plan.refusals))
    else:
        st.fused = "operator at a time: " + ("; ".join(sorted(plan.refusals)) or "no rows")


def _drive(ctx: ExecContext, pipe: Any, plan: CompiledPlan, run: Any, hot: Any, lops: list, lsink: Any,
           probes: list, build_dicts: dict[str, Column], tables: Any, marks: Any) -> tuple[int, int, int]:
    """Every morsel's batches through their kernels (or the operators); (compiled, operator at a
    time, reading compressed pages) batch counts."""
    from hetdb.exec.operators.scan_device import read_device_scan

    src = pipe.source
    scan = isinstance(src, TableScan)
    pred = conjunction(src.scan.filters) if scan else None
    compiled = fallback = encoded = 0
    for index, morsel in run.morsels:
        ctx.set_morsel(index)
        if hot is not None:
            batches = hot.batches(index)
        elif scan:
            with Timer(ctx, src.op_id):
                batches = read_device_scan(src, ctx, morsel, run.gsrc, apply_filters=False)
        else:
            batches = src.read(ctx, morsel, run.gsrc)
        for b in batches:
            if not b.num_rows:
                continue
            kernel, cids = _kernel(ctx, plan, b)
            if isinstance(kernel, str):
                plan.refusals[kernel] = plan.refusals.get(kernel, 0) + 1
                fallback += 1
                if pred is not None:
                    from hetdb.exec.columns import filter_batch

                    b = filter_batch(ctx.backend, b, ctx.evaluator.predicate(pred, b))
                if b.num_rows:
                    run.push(b, 0, lops, lsink)
                continue
            if marks is not None:
                marks.consume(kernel, cids, b, probes, build_dicts)
            elif tables is None or not tables.consume(kernel, cids, b, probes, build_dicts, run.gsink, lsink):
                consume = consume_rows if plan.materialize else _consume
                consume(ctx, plan, kernel, cids, b, probes, build_dicts, run.gsink, lsink)
            compiled += 1
            encoded += any(i.codec != "plain" for i in kernel.spec.inputs)
    return compiled, fallback, encoded
