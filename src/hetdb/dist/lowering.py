"""Lowering of an optimized logical plan for N workers: the plan is cut into stages at exchange
nodes. A stage is a logical subplan every worker (or only worker 0, for a single-worker stage) runs
with hetdb's own operators over its share of the input; its output goes through one exchange:

- ``hash``: rows are repartitioned by the hash of key expressions (join keys, group keys, window
  partition keys);
- ``broadcast``: every worker receives all rows (small build sides);
- ``gather``: all rows go to worker 0 (final ORDER BY / LIMIT, global aggregates, the result).

Aggregations whose functions decompose (sum, count, min, max, any; avg as an exact sum and a count)
get a partial aggregation before the shuffle and a final one after; DISTINCT aggregates of one
argument first deduplicate (group key, argument) pairs, shuffled by both. With one worker no exchange is inserted: the plan is one stage.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from hetdb import types as T
from hetdb.errors import UnsupportedError
from hetdb.plan import logical as L
from hetdb.plan.expr import AggCall, Call, ColumnRef, Expr, Field
from hetdb.plan.window import Window

# Build sides estimated at most this many rows are broadcast instead of repartitioning both sides;
# so are build sides of at most 1 / (BROADCAST_SHARE x workers) of the probe side's estimated rows
# (sending the build side to every worker then moves fewer rows than shuffling the probe side).
BROADCAST_ROWS = 20_000
BROADCAST_SHARE = 4
# A repartitioned join on one integer key whose stored values span at most this many times the larger
# side's rows is cut by key ranges (see Lowering._dense_range).
DENSE_RANGE = 8
_PARTIAL = {"sum": "sum", "count": "sum", "count_star": "sum", "min": "min", "max": "max", "any": "any"}
# joins whose build (right) side may be broadcast: every probe row meets the whole build side
_BROADCAST_KINDS = ("inner", "left", "semi", "anti", "mark", "cross")


class DistUnsupportedError(UnsupportedError):
    """The distributed lowering has no plan for this query (it runs on one worker instead)."""


@dataclass(frozen=True)
class ExchangeInput(L.Node):
    """The rows a worker received from the exchange of stage ``stage``."""

    stage: int
    fields: tuple[Field, ...]
    kind: str = ""

    @property
    def schema(self) -> tuple[Field, ...]:
        return self.fields

    def label(self) -> str:
        return f"Exchange {self.kind} from stage {self.stage}"


@dataclass
class Stage:
    sid: int
    plan: L.Node
    exchange: str                  # "hash", "broadcast", "gather" or "result"
    keys: tuple[Expr, ...] = ()    # hash keys, over ``plan``'s output columns
    single: bool = False           # runs on worker 0 only
    inputs: list[int] = field(default_factory=list)
    note: str = ""
    # a hash exchange on one integer key may cut the key range [lo, hi] into equal parts instead
    key_range: tuple[int, int] | None = None

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.plan.schema


@dataclass
class DistPlan:
    stages: list[Stage]
    output: L.Output
    workers: int
    fallback: str = ""  # why the whole query runs as one stage on one worker ("" when it does not)

    @property
    def result(self) -> Stage:
        return self.stages[-1]


def _ref(f: Field) -> ColumnRef:
    return ColumnRef(f.dtype, f.cid, f.nullable)


def _inputs_of(node: L.Node) -> list[int]:
    if isinstance(node, ExchangeInput):
        return [node.stage]
    return [s for k in node.inputs() for s in _inputs_of(k)]


class Lowering:
    """Cuts a logical plan into stages. ``_lower`` returns (subplan of the open stage, distribution):
    ``part`` (each row on exactly one worker) or ``single`` (all rows on worker 0)."""

    def __init__(self, workers: int, broadcast_rows: int = BROADCAST_ROWS,
                 row_counts: dict[str, int] | None = None, estimate: Callable[[L.Node], float] | None = None,
                 key_range: Callable[[str, str], tuple[int, int] | None] | None = None):
        self.workers = workers
        self.key_range = key_range
        self.row_counts = row_counts or {}
        self.broadcast_rows = broadcast_rows
        self.estimate = estimate
        self.stages: list[Stage] = []

    def _small(self, node: L.Join) -> bool:
        """Whether the join's build side is small enough to broadcast: at most ``broadcast_rows``
        rows, or a small share of the probe side (``broadcast_rows=0`` broadcasts nothing by size)."""
        if self.broadcast_rows <= 0:
            return False
        build = self._rows(node.right)
        return build <= self.broadcast_rows or build * BROADCAST_SHARE * self.workers <= self._rows(node.left)

    def _rows(self, node: L.Node) -> float:
        """Rows ``node`` is expected to have: the stored row counts bound scans, filters
        and projections; the optimizer's estimate (``estimate``: sampled filter selectivities, join
        cardinalities) covers joins and filtered scans. Only the plan's shape depends on it."""
        rows = _estimate(node, self.row_counts)
        if self.estimate is not None:
            try:
                rows = min(rows, float(self.estimate(node)))
            except Exception:  # noqa: BLE001 - an estimate must never fail a query
                pass
        return rows

    def lower(self, root: L.Output) -> DistPlan:
        if self.workers <= 1:
            return DistPlan([Stage(0, root.input, "result", single=True)], root, 1)
        node, dist = self._lower(root.input)
        top = self._close(node, dist, "gather") if dist != "single" else node
        self.stages.append(Stage(len(self.stages), top, "result", single=True, inputs=_inputs_of(top)))
        return DistPlan(self.stages, root, self.workers)

    def _close(self, node: L.Node, dist: str, exchange: str, keys: tuple[Expr, ...] = (),
               note: str = "", key_range: tuple[int, int] | None = None) -> ExchangeInput:
        """End the open stage with ``exchange``; the returned leaf reads its output."""
        sid = len(self.stages)
        self.stages.append(Stage(sid, node, exchange, keys, single=dist == "single", inputs=_inputs_of(node),
                                 note=note, key_range=key_range))
        return ExchangeInput(sid, node.schema, exchange)

    def _gathered(self, node: L.Node, dist: str) -> L.Node:
        return node if dist == "single" else self._close(node, dist, "gather")

    def _lower(self, node: L.Node) -> tuple[L.Node, str]:
        if isinstance(node, L.Scan):
            if node.source != "table":
                raise DistUnsupportedError(f"the workers cannot read the {node.source} source {node.path!r}")
            return node, "part"
        if isinstance(node, L.Values):
            return node, "single"
        if isinstance(node, (L.Filter, L.Project)):
            child, dist = self._lower(node.input)
            return dataclasses.replace(node, input=child), dist
        if isinstance(node, L.Aggregate):
            return self._aggregate(node)
        if isinstance(node, L.Join):
            return self._join(node)
        if isinstance(node, L.Sort):
            child, dist = self._lower(node.input)
            return dataclasses.replace(node, input=self._gathered(child, dist)), "single"
        if isinstance(node, (L.TopN, L.Limit)):
            child, dist = self._lower(node.input)
            if dist != "single" and node.limit is not None:
                # each worker keeps its first limit+offset rows, worker 0 takes the final cut
                child = self._close(dataclasses.replace(node, input=child, limit=node.limit + node.offset,
                                                        offset=0), dist, "gather")
                dist = "single"  # gathered: no second gather stage
            return dataclasses.replace(node, input=self._gathered(child, dist)), "single"
        if isinstance(node, Window):
            return self._window(node)
        if isinstance(node, L.Union):
            kids = [self._lower(c) for c in node.children]
            if any(d == "single" for _, d in kids):
                return dataclasses.replace(node, children=tuple(self._gathered(c, d) for c, d in kids)), \
                    "single"
            return dataclasses.replace(node, children=tuple(c for c, _ in kids)), "part"
        raise DistUnsupportedError(f"no distributed lowering for {type(node).__name__}")

    def _aggregate(self, node: L.Aggregate) -> tuple[L.Node, str]:
        node = _plain_distinct(node)
        dedup = _dedup_distinct(node)
        if dedup is not None:
            return self._aggregate(dedup)
        child, dist = self._lower(node.input)
        if dist == "single":
            return dataclasses.replace(node, input=child), "single"
        decomposable = all(not c.distinct and (c.op in _PARTIAL or c.op == "avg") for _, c in node.aggs)
        if not decomposable:
            why = "no partial aggregation (" + ", ".join(sorted({str(c.op) + (" distinct" if c.distinct else "")
                                                                 for _, c in node.aggs
                                                                 if c.distinct or c.op not in _PARTIAL})) + ")"
            if not node.keys:
                return dataclasses.replace(node, input=self._close(child, dist, "gather", note=why)), "single"
            keys = tuple(e for _, e in node.keys)
            return dataclasses.replace(node, input=self._close(child, dist, "hash", keys, note=why)), "part"
        partial_aggs = []
        final_aggs = []
        outputs = []  # (field, expression over the final aggregate's columns)
        for f, call in node.aggs:
            if call.op == "avg":
                # avg = exact sum / count: the partials are a sum (HUGEINT, DECIMAL(38, s) or DOUBLE,
                # as SUM's own result) and a count; the division is the one avg's final step does
                st = _sum_type(call.arg.dtype)
                ps = Field(f"{f.cid}__psum", f.name, st, True)
                pc = Field(f"{f.cid}__pcnt", f.name, T.INT64, True)
                fs = Field(f"{f.cid}__sum", f.name, st, True)
                fc = Field(f"{f.cid}__cnt", f.name, T.INT64, True)
                partial_aggs += [(ps, AggCall(st, "sum", call.arg)), (pc, AggCall(T.INT64, "count", call.arg))]
                final_aggs += [(fs, AggCall(st, "sum", _ref(ps))), (fc, AggCall(T.INT64, "sum", _ref(pc)))]
                outputs.append((f, Call(T.FLOAT64, "div", (_ref(fs), _ref(fc)))))
                continue
            pf = Field(f"{f.cid}__partial", f.name, call.dtype, True)
            partial_aggs.append((pf, call))
            final_aggs.append((f, dataclasses.replace(call, op=_PARTIAL[call.op], arg=_ref(pf))))
            outputs.append((f, _ref(f)))
        partial = L.Aggregate(child, node.keys, tuple(partial_aggs))
        final_keys = tuple((f, _ref(f)) for f, _ in node.keys)
        if not node.keys:
            inp = self._close(partial, dist, "gather", note="partial aggregation")
            return _project(L.Aggregate(inp, (), tuple(final_aggs)), final_keys, outputs), "single"
        inp = self._close(partial, dist, "hash", tuple(_ref(f) for f, _ in node.keys), note="partial aggregation")
        return _project(L.Aggregate(inp, final_keys, tuple(final_aggs)), final_keys, outputs), "part"

    def _window(self, node: Window) -> tuple[L.Node, str]:
        """Window functions (and the aggregates computed as them: stddev, median, string_agg, mode,
        arg_max, ...) run where each partition is whole: after a hash exchange on the PARTITION BY
        expressions, or on worker 0 without them."""
        child, dist = self._lower(node.input)
        if dist == "single":
            return dataclasses.replace(node, input=child), "single"
        if not node.partition:
            return dataclasses.replace(node, input=self._close(child, dist, "gather",
                                                               note="window without PARTITION BY")), "single"
        inp = self._close(child, dist, "hash", node.partition, note="window partition")
        return dataclasses.replace(node, input=inp), "part"

    def _join(self, node: L.Join) -> tuple[L.Node, str]:
        left, ldist = self._lower(node.left)
        right, rdist = self._lower(node.right)
        if ldist == "single" or rdist == "single":
            return dataclasses.replace(node, left=self._gathered(left, ldist),
                                       right=self._gathered(right, rdist)), "single"
        probe_only = node.kind in ("semi", "anti", "mark") or not node.left_keys
        if not node.build_left and node.kind in _BROADCAST_KINDS and (probe_only or self._small(node)):
            note = "small build side" if not probe_only else f"{node.kind} join needs the whole build side"
            return dataclasses.replace(node, left=left,
                                       right=self._close(right, rdist, "broadcast", note=note)), "part"
        if not node.left_keys or node.kind in ("semi", "anti", "mark"):
            # build-left semi/anti and key-less joins that emit unmatched build rows: one worker
            return dataclasses.replace(node, left=self._gathered(left, ldist),
                                       right=self._gathered(right, rdist)), "single"
        span = self._dense_range(node)
        note = "join key" if span is None else f"join key, ranges of [{span[0]}, {span[1]}]"
        lin = self._close(left, ldist, "hash", node.left_keys, note=note, key_range=span)
        rin = self._close(right, rdist, "hash", node.right_keys, note=note, key_range=span)
        return dataclasses.replace(node, left=lin, right=rin), "part"

    def _dense_range(self, node: L.Join) -> tuple[int, int] | None:
        """[lo, hi] of a join on one integer key whose stored columns' zone maps bound it to a range
        at most ``DENSE_RANGE`` times the larger side's rows: the exchange then gives each worker an
        equal slice of the range (hash partitioning spreads a worker's keys over the whole range, and
        the CPU join's direct-indexed table needs a range of at most 8x its keys)."""
        if self.key_range is None or len(node.left_keys) != 1:
            return None
        bounds = []
        for side, key in ((node.left, node.left_keys[0]), (node.right, node.right_keys[0])):
            origin = _origin(side, key) if key.dtype.kind in ("int32", "int64") else None
            got = self.key_range(*origin) if origin is not None else None
            if got is None:
                return None
            bounds.append(got)
        lo, hi = min(b[0] for b in bounds), max(b[1] for b in bounds)
        rows = max(self._rows(node.left), self._rows(node.right))
        return (lo, hi) if hi >= lo and math.isfinite(rows) and hi - lo + 1 <= DENSE_RANGE * rows else None


def _sum_type(t: T.DataType) -> T.DataType:
    """SUM's result type (the binder's): DOUBLE, HUGEINT for integers, DECIMAL(38, s)."""
    if t.kind == "float64":
        return T.FLOAT64
    return T.INT128 if t.is_integer else T.wide_decimal(T.MAX_WIDE_PRECISION, t.scale)


def _project(agg: L.Aggregate, keys: tuple, outputs: list) -> L.Node:
    """``agg`` itself where every output is one of its columns, else a projection computing them."""
    if all(isinstance(e, ColumnRef) for _, e in outputs):
        return agg
    return L.Project(agg, tuple(keys) + tuple(outputs))


def _plain_distinct(node: L.Aggregate) -> L.Aggregate:
    """min/max/any DISTINCT are the same without DISTINCT."""
    if not any(c.distinct and c.op in ("min", "max", "any") for _, c in node.aggs):
        return node
    return dataclasses.replace(node, aggs=tuple(
        (f, dataclasses.replace(c, distinct=False) if c.op in ("min", "max", "any") else c) for f, c in node.aggs))


def _dedup_distinct(node: L.Aggregate) -> L.Aggregate | None:
    """``GROUP BY k: f(DISTINCT x), min/max(x)`` as two aggregations: ``GROUP BY k, x`` (no aggregates:
    the distinct pairs, partially deduplicated per worker and shuffled by k and x), then ``GROUP BY k:
    f(x)`` over them, which has partial aggregates. None when the aggregates do not all read one
    argument that way (they then shuffle their input rows)."""
    distinct = [c for _, c in node.aggs if c.distinct]
    if not distinct:
        return None
    arg = distinct[0].arg
    if not all(c.arg == arg and (c.distinct or c.op in ("min", "max", "any")) for _, c in node.aggs):
        return None
    d = Field(f"{node.aggs[0][0].cid}__distinct", "distinct", arg.dtype, True)
    inner = L.Aggregate(node.input, node.keys + ((d, arg),), ())
    keys = tuple((f, _ref(f)) for f, _ in node.keys)
    return L.Aggregate(inner, keys, tuple((f, dataclasses.replace(c, arg=_ref(d), distinct=False))
                                          for f, c in node.aggs))


def _estimate(node: L.Node, counts: dict[str, int]) -> float:
    """Rows ``node`` may produce, from the optimizer's estimate where it made one, else an upper
    bound from the stored row counts (unknown: infinite, so nothing unknown is broadcast)."""
    est = getattr(node, "estimated_rows", None)
    if est is not None:
        return float(est)
    if isinstance(node, L.Scan):
        return float(counts.get(node.table, float("inf"))) if node.source == "table" else float("inf")
    if isinstance(node, (L.Filter, L.Project, L.Sort, Window)):
        return _estimate(node.input, counts)
    if isinstance(node, L.Aggregate):
        return 1.0 if not node.keys else _estimate(node.input, counts)
    if isinstance(node, (L.Limit, L.TopN)) and node.limit is not None:
        return float(node.limit + node.offset)
    if isinstance(node, L.Values):
        return float(len(node.rows))
    return float("inf")


def _origin(node: L.Node, e: Expr) -> tuple[str, str] | None:
    """(stored table, column) whose values expression ``e`` over ``node``'s output passes on
    unchanged, or None."""
    if not isinstance(e, ColumnRef):
        return None
    if isinstance(node, L.Scan):
        for f, name in zip(node.fields, node.column_names):
            if f.cid == e.cid:
                return (node.table, name) if node.source == "table" else None
        return None
    if isinstance(node, L.Project):
        inner = next((x for f, x in node.exprs if f.cid == e.cid), None)
        return None if inner is None else _origin(node.input, inner)
    if isinstance(node, L.Aggregate):
        inner = next((x for f, x in node.keys if f.cid == e.cid), None)
        return None if inner is None else _origin(node.input, inner)
    if isinstance(node, (L.Filter, L.Sort, L.Limit, L.TopN)):
        return _origin(node.input, e)
    if isinstance(node, L.Join):
        return _origin(node.left, e) or _origin(node.right, e)
    return None


def lower(root: L.Output, workers: int, broadcast_rows: int = BROADCAST_ROWS,
          row_counts: dict[str, int] | None = None, estimate: Callable[[L.Node], float] | None = None,
          key_range: Callable[[str, str], tuple[int, int] | None] | None = None) -> DistPlan:
    """The distributed plan of ``root`` for ``workers`` workers; a plan the lowering does not cover
    becomes one stage on worker 0 with the reason in ``fallback`` (never a wrong answer).
    ``estimate``: the optimizer's row estimate of a plan node (``Estimator(db).rows``), used with
    ``row_counts`` to choose broadcast joins; ``key_range(table, column)``: the [min, max] of a stored
    integer column (zone maps), used to cut dense join keys by range."""
    try:
        return Lowering(workers, broadcast_rows, row_counts, estimate, key_range).lower(root)
    except DistUnsupportedError as e:
        return DistPlan([Stage(0, root.input, "result", single=True)], root, workers, fallback=str(e))


