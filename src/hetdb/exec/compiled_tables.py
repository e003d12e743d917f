"""Hash tables of compiled GPU aggregations (exec/compiled.py): the device tables kept across the
batches of one run (pipeline_runtime.GroupAccumulator, growing while the memory budget allows), and
a kernel's groups turned into a partial-state batch of the aggregation operator."""

from __future__ import annotations

from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.compiled_features import off
from hetdb.exec.compiled_rows import dictionary_lookups
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.aggregate import _g, _s, _sum_type
from hetdb.exec.operators.base import ExecContext, Timer
from hetdb.exec.wide import wide_sum


def partial_state(ctx: ExecContext, plan: Any, kernel: Any, groups: Any, dicts: dict[str, Column]) -> Batch:
    """A kernel's groups (pipeline_runtime.Groups) as a partial-state batch of the aggregation (the
    layout HashAggregate.add_partial takes); ``dicts``: the dictionaries of string group keys."""
    xp = ctx.backend.xp
    n = groups.num_groups
    keycols: list[Column] = []
    for (values, valid), key in zip(groups.keys, kernel.kernel.group_keys):
        if key.expr is not None:  # codes of a dictionary column: the key is an expression of them
            codes = Column(T.STRING, data=values.astype(xp.int32), validity=valid, dictionary=dicts[key.dict_cid])
            res = ctx.evaluator.evaluate(key.expr, Batch({key.dict_cid: codes}, n))
            keycols.append(ctx.evaluator.cast(res, key.dtype))
        elif key.build_rows_of is not None:  # build rows: their strings (equal strings merge later)
            from hetdb.exec.columns import take

            side = ctx.results[plan.row_keys[key.build_rows_of]]
            rows = values if valid is None else xp.where(valid, values, -1)
            keycols.append(take(ctx.backend, side.batch.columns[key.build_rows_of], rows, missing=valid is not None))
        else:
            d = dicts[key.dict_cid] if key.dict_cid is not None else None
            keycols.append(Column(key.dtype, data=values, validity=valid, dictionary=d))
    nk = len(plan.sink.keys)
    cols: dict[str, Column] = {_g(i): c for i, c in enumerate(keycols[:nk])}
    if plan.sink.raw_mode:  # one row per distinct (keys, arguments): the raw rows of DISTINCT
        for j, c in enumerate(keycols[nk:]):
            cols[_s(j, "raw")] = c
        return Batch(cols, n)
    parts: dict[tuple[int, str], Any] = {(a.agg, a.part): v
                                        for a, v in zip(kernel.kernel.accumulators, groups.accumulators)}
    for j, (_, a) in enumerate(plan.sink.aggs):
        if a.op in ("sum", "avg"):
            st = _sum_type(a.arg.dtype)
            data = parts[(j, "sum")].astype(st.numpy_dtype)
            if (j, "fsum") in parts:
                data = wide_sum(xp, data, parts[(j, "fsum")])  # the launch's int64 sum may have wrapped
            cols[_s(j, "sum")] = Column(st, data=data, validity=parts[(j, "cnt")] > 0)
        if a.op in ("count", "count_star", "avg"):
            cols[_s(j, "cnt")] = Column(T.INT64, data=parts[(j, "cnt")].astype(xp.int64))
        if a.op in ("min", "max"):
            cols[_s(j, "val")] = Column(a.arg.dtype, data=parts[(j, "val")].astype(a.arg.dtype.numpy_dtype),
                                        validity=parts[(j, "cnt")] > 0)
    return Batch(cols, n)


def expansion(plan: Any, probes: list) -> int:
    """The most rows one input row can become through the pipeline's probes (the product of the
    largest match counts of the probes that emit a row per match)."""
    factor = 1
    for (op, _), probe in zip(plan.probes, probes):
        if op.kind not in ("inner", "cross", "left", "single"):
            continue
        if not op.left_keys:
            factor *= max(1, probe.rows)
        elif probe.table is not None and probe.table.num_rows:
            factor *= max(1, probe.table.max_matches())
    return factor


class KeptTables:
    """The device hash tables a compiled aggregation keeps across the batches of one run (one per
    kernel and dictionaries of its group keys; pipeline_runtime.GroupAccumulator): a batch costs one
    launch, and groups reach the aggregation operator only when a table fills and at the end. A
    table's memory is reserved against the budget; without room batches run one launch each."""

    def __init__(self, ctx: ExecContext, plan: Any, probes: list) -> None:
        self.ctx, self.plan = ctx, plan
        self.expand = expansion(plan, probes)
        self.reservation = Reservation(ctx.memory)
        ctx.cleanup.append(self.reservation.close)
        self.accumulators: dict[tuple, tuple[Any, dict[str, Column]]] = {}
        self.refused: set[tuple] = set()
        self.batches = 0  # batches aggregated into a kept table
        self.partials = 0  # partial-state batches handed to the aggregation
        self.grown = 0  # times a table grew (pipeline_runtime.GroupAccumulator)

    def consume(self, kernel: Any, cids: list[str], b: Batch, probes: list, build_dicts: dict[str, Column],
                gsink: Any, lsink: Any) -> bool:
        """Aggregate ``b`` into its kernel's table; False when the batch must run on its own."""
        from hetdb.backend.gpu.codegen.pipeline_runtime import LOAD, MAX_SLOTS, GroupAccumulator

        ctx, plan = self.ctx, self.plan
        dicts = dict(build_dicts)
        dicts.update({c: b.columns[c].dictionary for c in cids if b.columns[c].dictionary is not None})
        key = (id(kernel), tuple(None if k.dict_cid is None else id(dicts[k.dict_cid])
                                 for k in kernel.kernel.group_keys))
        entry = self.accumulators.get(key)
        if entry is None:
            slots = GroupAccumulator.slots_for(b.num_rows, self.expand)
            if key in self.refused or slots > MAX_SLOTS or not self.reservation.try_grow(kernel.table_bytes(slots)):
                self.refused.add(key)
                return False
            entry = self.accumulators[key] = (
                GroupAccumulator(kernel, kernel.new_table(slots), self.expand,
                                 None if off("grow_tables") else self.reservation), dicts)
        acc, first_dicts = entry
        need = b.num_rows * self.expand
        if need > int(acc.table.slots * LOAD) and not acc.room(need):
            return False
        sink = plan.sink
        with Timer(ctx, sink.op_id):
            groups = acc.add({c: b.columns[c] for c in cids}, b.num_rows, dictionary_lookups(ctx, plan, kernel, dicts), probes)
            ctx.add(sink.op_id, rows_in=b.num_rows)
            if groups is not None:
                sink.add_partial(ctx, partial_state(ctx, plan, kernel, groups, first_dicts), gsink, lsink)
                self.partials += 1
        self.batches += 1
        return True

    def finish(self, gsink: Any, lsink: Any) -> None:
        """Hand the groups every table still holds to the aggregation; free the tables. When one
        table held every group of the run and nothing else reached the aggregation, its partial
        state holds each group once: the aggregation need not merge it (as a fused kernel's)."""
        sink = self.plan.sink
        unique = not sink.raw_mode
        with Timer(self.ctx, sink.op_id):
            for acc, dicts in self.accumulators.values():
                unique = unique and all(k.build_rows_of is None and k.expr is None
                                        for k in acc.pipeline.kernel.group_keys)
                groups = acc.take()
                if groups is not None:
                    sink.add_partial(self.ctx, partial_state(self.ctx, self.plan, acc.pipeline, groups, dicts), gsink, lsink)
                    self.partials += 1
                self.grown += acc.grown
        if unique and self.partials == 1 and gsink.parts is None and not gsink.batches and not gsink.runs \
                and len(lsink.batches) == 1:
            gsink.groups_unique = True
        self.accumulators.clear()
        self.reservation.close()
