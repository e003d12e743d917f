"""Physical planning: the logical plan becomes pipelines split at pipeline breakers (hash build,
aggregation, sort, top-N). Pipelines are listed in an order where every pipeline comes after the
ones it depends on, so the driver can run them one after the other."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from hetdb.errors import UnsupportedError
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import Operator, PhysicalOp, Sink, Source
from hetdb.exec.operators.basic import (
    CollectSink,
    FilterOp,
    LimitOp,
    ProjectOp,
    ResultSource,
    UnionSource,
    ValuesSource,
)
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import HashBuild
from hetdb.exec.operators.recursive import RecursiveSource, WorkingSource
from hetdb.exec.operators.sample import SampleSource
from hetdb.exec.operators.scan import TableScan
from hetdb.exec.operators.scan_external import ExternalScan
from hetdb.exec.operators.sort import SortSink, TopNSink
from hetdb.exec.operators.unnest import UnnestOp
from hetdb.exec.operators.window import WindowSink
from hetdb.plan import logical as L
from hetdb.plan.expr import Cast, ColumnRef, Expr
from hetdb.plan.recursive import RecursiveCTE, WorkingScan
from hetdb.plan.sample import Sample
from hetdb.plan.unnest import Unnest
from hetdb.plan.window import Window


@dataclass
class Pipeline:
    pid: int
    source: Source
    ops: list[Operator]
    sink: Sink
    deps: list[int] = field(default_factory=list)

    def operators(self) -> list[PhysicalOp]:
        return [self.source, *self.ops, self.sink]


@dataclass
class _Open:
    source: Source
    ops: list[Operator] = field(default_factory=list)
    deps: list[int] = field(default_factory=list)


@dataclass
class PhysicalPlan:
    pipelines: list[Pipeline]
    output: L.Output
    result_pipeline: int

    def format(self, stats: dict | None = None) -> str:
        """Deterministic text; with ``stats`` (op_id -> OpStats) each operator shows its counters."""
        lines = []
        for p in self.pipelines:
            deps = f" (after {', '.join(map(str, p.deps))})" if p.deps else ""
            lines.append(f"Pipeline {p.pid}{deps}")
            ops = p.operators()
            for i, op in enumerate(ops):
                arrow = "  " if i == 0 else ("  => " if i == len(ops) - 1 else "  -> ")
                text = f"{arrow}{op.describe()}"
                if stats is not None:
                    text += "  " + _format_stats(stats.get(op.op_id))
                lines.append(text)
        out = ", ".join(f"{f.name}:={f.cid}" for f in self.output.fields)
        lines.append(f"Output {out}")
        return "\n".join(lines)


def _format_stats(s) -> str:
    if s is None:
        return "[not run]"
    parts = [f"rows in={s.rows_in:,} out={s.rows_out:,}", f"time={s.seconds * 1000:.1f} ms"]
    if s.pages_read or s.pages_skipped or s.bytes_read:
        parts.append(f"bytes read={s.bytes_read:,} pages read={s.pages_read:,} "
                     f"pages skipped={s.pages_skipped:,}")
    if s.files_read or s.files_skipped or s.row_groups_read or s.row_groups_skipped:
        parts.append(f"files read={s.files_read:,} skipped={s.files_skipped:,} "
                     f"row groups read={s.row_groups_read:,} skipped={s.row_groups_skipped:,}")
    if s.pages_cached or s.bytes_host_to_device:
        parts.append(f"pages from device cache={s.pages_cached:,} bytes host->device={s.bytes_host_to_device:,}")
    if s.routes:
        parts.append(f"paths: {s.routes.format()}")
    if s.spilled_partitions:
        parts.append(f"spilled partitions={s.spilled_partitions}")
    if s.fused:
        parts.append(s.fused)
    if s.fallbacks:
        parts.append("CPU fallback: " + ", ".join(f"{w} x{n}" for w, n in sorted(s.fallbacks.items())))
    return "[" + "; ".join(parts) + "]"


def _scan_key(e: Expr, mapping: dict[str, Expr]) -> Expr | None:
    """A join key as an expression over scanned columns, when it is columns and numeric casts
    only (evaluated on rows a filter would have dropped, it must not be able to fail)."""
    if isinstance(e, ColumnRef):
        return mapping.get(e.cid)
    if isinstance(e, Cast) and e.dtype.kind != "string" and e.arg.dtype.kind != "string":
        arg = _scan_key(e.arg, mapping)
        return None if arg is None else dataclasses.replace(e, arg=arg)
    return None


def _add_runtime_filter(o: _Open, kind: str, probe_keys: tuple[Expr, ...], build_pipeline: int) -> None:
    """Let the scan of a join's probe pipeline drop rows whose key cannot match before it gathers
    its columns, where a probe row without a match yields nothing (inner, semi, right semi/anti).
    Between the scan and the join only operators that drop rows or pass columns on may run
    (filters, projections, inner/semi probes), so an early drop changes nothing."""
    if kind not in ("inner", "semi", "right_semi", "right_anti") or not probe_keys \
            or not isinstance(o.source, TableScan):
        return
    mapping: dict[str, Expr] = {f.cid: ColumnRef(f.dtype, f.cid, f.nullable) for f in o.source.scan.fields}
    for op in o.ops:
        if isinstance(op, ProjectOp):
            mapping = {f.cid: m for f, e in op.exprs if (m := _scan_key(e, mapping)) is not None}
        elif not isinstance(op, FilterOp) and not (isinstance(op, HashProbe) and op.kind in ("inner", "semi")):
            return
    keys = tuple(_scan_key(k, mapping) for k in probe_keys)
    if any(k is None for k in keys):
        return
    o.source = dataclasses.replace(o.source, runtime_filters=o.source.runtime_filters + ((keys, build_pipeline),))


def _only_used(node: L.Aggregate) -> L.Node:
    """The aggregate's input without projected columns the aggregate never reads: count(*) over a
    join then has no column to gather, and the join only counts its output rows."""
    proj = node.input
    if not isinstance(proj, L.Project):
        return proj
    used = frozenset().union(*(e.columns() for _, e in node.keys), *(a.columns() for _, a in node.aggs))
    exprs = tuple((f, e) for f, e in proj.exprs if f.cid in used)
    return proj if len(exprs) == len(proj.exprs) else dataclasses.replace(proj, exprs=exprs)


class PhysicalPlanner:
    def __init__(self) -> None:
        self.pipelines: list[Pipeline] = []
        self._next_op = 0

    def _id(self) -> int:
        self._next_op += 1
        return self._next_op - 1

    def plan(self, root: L.Output) -> PhysicalPlan:
        if not isinstance(root, L.Output):
            raise UnsupportedError("the physical planner needs an Output node at the root")
        open_ = self._build(root.input)
        pid = self._close(open_, CollectSink(label="result", op_id=self._id()))
        return PhysicalPlan(self.pipelines, root, pid)

    def _close(self, open_: _Open, sink: Sink) -> int:
        pid = len(self.pipelines)
        self.pipelines.append(Pipeline(pid, open_.source, open_.ops, sink, sorted(set(open_.deps))))
        return pid

    def _build_join(self, node: L.Join, emit: frozenset[str] | None) -> _Open:
        """Build pipeline + probe; with ``emit`` the probe outputs only those columns and the build
        stores only the ones it outputs or its residual reads."""
        res_cols = node.residual.columns() if node.residual is not None else frozenset()

        def stored(fields: tuple) -> tuple:
            return fields if emit is None else tuple(f for f in fields if f.cid in emit or f.cid in res_cols)

        if node.build_left and node.kind in ("semi", "anti"):
            # hash the left rows, stream the right ones through, emit the (un)matched left rows
            left = self._build(node.left)
            build = HashBuild(fields=stored(node.left.schema), keys=node.left_keys, op_id=self._id())
            bpid = self._close(left, build)
            o = self._build(node.right)
            kind = "right_" + node.kind
            _add_runtime_filter(o, kind, node.right_keys, bpid)
            o.ops.append(HashProbe(kind=kind, left_fields=node.right.schema, right_fields=build.fields,
                                   left_keys=node.right_keys, residual=node.residual, build=build,
                                   build_pipeline=bpid, emit=emit, op_id=self._id()))
            o.deps.append(bpid)
            return o
        right = self._build(node.right)
        right_fields = stored(node.right.schema) if node.kind not in ("semi", "anti", "mark") \
            else tuple(f for f in node.right.schema if f.cid in res_cols)
        build = HashBuild(fields=right_fields, keys=node.right_keys, op_id=self._id())
        bpid = self._close(right, build)
        o = self._build(node.left)
        _add_runtime_filter(o, node.kind, node.left_keys, bpid)
        o.ops.append(HashProbe(kind=node.kind, left_fields=node.left.schema, right_fields=right_fields,
                               left_keys=node.left_keys, residual=node.residual, mark=node.mark,
                               mark_by_residual=node.mark_by_residual, build=build, build_pipeline=bpid, emit=emit, op_id=self._id()))
        o.deps.append(bpid)
        return o

    def _recursive(self, node: RecursiveCTE | WorkingScan) -> Source:
        """WITH RECURSIVE: the anchor and the recursive term become physical plans of their own,
        run by the RecursiveSource (operator ids continue this plan's numbering)."""
        if isinstance(node, WorkingScan):
            return WorkingSource(key=node.key, fields=node.fields, op_id=self._id())
        plans = []
        for sub in (node.anchor, node.step):
            planner = PhysicalPlanner()
            planner._next_op = self._next_op
            plans.append(planner.plan(sub))
            self._next_op = planner._next_op
        return RecursiveSource(key=node.key, fields=node.fields, distinct=node.distinct, anchor=plans[0],
                               step=plans[1], op_id=self._id())

    def _build(self, node: L.Node) -> _Open:
        if isinstance(node, L.Scan):
            cls = ExternalScan if node.source == "external" else TableScan
            return _Open(cls(scan=node, op_id=self._id()))
        if isinstance(node, L.Values):
            return _Open(ValuesSource(fields=node.fields, rows=node.rows, op_id=self._id()))
        if isinstance(node, (RecursiveCTE, WorkingScan)):
            return _Open(self._recursive(node))
        if isinstance(node, L.Filter):
            o = self._build(node.input)
            o.ops.append(FilterOp(predicate=node.predicate, op_id=self._id()))
            return o
        if isinstance(node, L.Project):
            if isinstance(node.input, L.Join):
                # the join gathers (and its build stores) only the columns the projection reads
                o = self._build_join(node.input, frozenset().union(*(e.columns() for _, e in node.exprs)))
            else:
                o = self._build(node.input)
            if isinstance(o.source, TableScan) and not o.ops and isinstance(node.input, L.Scan):
                used = frozenset().union(*(e.columns() for _, e in node.exprs))
                skip = frozenset(f.cid for f in node.input.fields if f.cid not in used)
                if skip:
                    o.source = dataclasses.replace(o.source, skip=skip)
            o.ops.append(ProjectOp(exprs=node.exprs, op_id=self._id()))
            return o
        if isinstance(node, Sample):
            o = self._build(node.input)
            pid = self._close(o, CollectSink(label="sample input", op_id=self._id()))
            return _Open(SampleSource(pipeline_id=pid, percent=node.percent, rows=node.rows, exact=node.exact,
                                      seed=node.seed, op_id=self._id()), deps=[pid])
        if isinstance(node, Unnest):
            o = self._build(node.input)
            o.ops.append(UnnestOp(lists=node.lists, op_id=self._id()))
            return o
        if isinstance(node, L.Limit):
            o = self._build(node.input)
            o.ops.append(LimitOp(limit=node.limit, offset=node.offset, op_id=self._id()))
            return o
        if isinstance(node, L.Join):
            return self._build_join(node, None)
        if isinstance(node, L.Aggregate):
            o = self._build(_only_used(node))
            pid = self._close(o, HashAggregate(keys=node.keys, aggs=node.aggs, op_id=self._id()))
            return _Open(ResultSource(pipeline_id=pid, label="aggregate", op_id=self._id()), deps=[pid])
        if isinstance(node, L.Sort):
            o = self._build(node.input)
            pid = self._close(o, SortSink(fields=node.input.schema, keys=node.keys, op_id=self._id()))
            return _Open(ResultSource(pipeline_id=pid, label="sort", is_ordered=True, op_id=self._id()),
                         deps=[pid])
        if isinstance(node, L.TopN):
            o = self._build(node.input)
            pid = self._close(o, TopNSink(fields=node.input.schema, keys=node.keys, limit=node.limit,
                                          offset=node.offset, op_id=self._id()))
            return _Open(ResultSource(pipeline_id=pid, label="top-n", is_ordered=True, op_id=self._id()),
                         deps=[pid])
        if isinstance(node, Window):
            o = self._build(node.input)
            pid = self._close(o, WindowSink(fields=node.input.schema, partition=node.partition,
                                            order=node.order, funcs=node.funcs, keep=node.keep,
                                            op_id=self._id()))
            return _Open(ResultSource(pipeline_id=pid, label="window", op_id=self._id()), deps=[pid])
        if isinstance(node, L.Union):
            pids = []
            for child in node.children:
                o = self._build(child)
                # Rename the input's columns to the union's (same types, by position).
                o.ops.append(ProjectOp(exprs=tuple(
                    (uf, ColumnRef(f.dtype, f.cid, f.nullable)) for uf, f in zip(node.fields, child.schema)),
                    op_id=self._id()))
                pids.append(self._close(o, CollectSink(label="union input", op_id=self._id())))
            return _Open(UnionSource(pipeline_ids=tuple(pids), op_id=self._id()), deps=pids)
        raise UnsupportedError(f"the executor has no physical operator for {type(node).__name__}")
