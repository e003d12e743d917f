"""A replayed aggregation's result made straight from its groups (exec/hot_replay.py).

A hot SSB query's host tail after its fused aggregation is a projection that renames the
aggregation's columns, an ORDER BY on its group keys (or none) and the result's collection, then
the Arrow table. A kept launch (hot_replay._KeptLaunch) knows the group keys of every group of its
dense domain; what the tail does with them does not depend on the data: a group's key values in
the result, as Arrow arrays, and its place in the ORDER BY are its index's. ``TailRecipe`` keeps
those for the whole domain — the key columns' Arrow arrays and each group's rank in the sort,
made by the same projection, sort and conversion code as the tail's, over every group — so a
replay's result is: the non-empty groups ordered by their ranks (an ORDER BY on aggregates too:
one stable sort over the keys' kept sort arrays and the aggregates' own), the key columns taken
from the kept arrays, the aggregate columns through the tail's casts and conversion. A recipe is
used only after its table matched the tail's own for one replay (hot_replay.check_tail); a tail
of another shape (an expression in the projection, a LIMIT...) has none.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from hetdb.column import Batch, Column
from hetdb.exec.host_tail import host_note
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import CollectSink, ProjectOp, ResultSource
from hetdb.exec.operators.sort import SortSink
from hetdb.plan.expr import ColumnRef


class TailRecipe:
    """The tail of one kept launch: its pipelines (``chain``: the projection-and-sort or projection
    pipeline, then the collection, if separate), per result column the kept Arrow array of a key
    column or the aggregate column it converts, and the domain's sort ranks (None: no ORDER BY)."""

    def __init__(self, chain: list, schema: pa.Schema, columns: list[tuple], ranks: Any, order: list | None) -> None:
        self.chain, self.schema, self.columns, self.ranks, self.order = chain, schema, columns, ranks, order
        self.pids = frozenset(p.pid for p in chain)

    def run(self, host: ExecContext, out: Batch, groups: Any, count: bool = True) -> pa.Table:
        """The result table of the aggregation's final values ``out`` (its groups' indices in the
        domain: ``groups``, ascending), with (``count``) the statistics the tail's operators would
        count."""
        n = out.num_rows
        if self.ranks is not None:
            perm = np.argsort(self.ranks[groups], kind="stable")
            rows = groups[perm]
        elif self.order is not None:
            perm = self._order(host, out, groups)
            rows = groups[perm]
        else:
            perm, rows = None, groups
        idx = pa.array(rows)
        arrays = []
        for kind, what, casts, want in self.columns:
            if kind == "key":
                arrays.append(what.take(idx))
                continue
            col = out.columns[what]
            for dtype in casts:
                col = host.evaluator.cast(col, dtype)
            if perm is not None:
                col = Column(col.dtype, data=col.data[perm], validity=None if col.validity is None else col.validity[perm],
                             dictionary=col.dictionary)
            arrays.append(_to_arrow(col, want))
        for p in self.chain if count else ():  # (the replay's one thread writes the statistics)
            host.stat(p.source.op_id).rows_out += n
            for op in (*p.ops, p.sink):
                st = host.stat(op.op_id)
                st.rows_in += n
                st.rows_out += n
            st.fused = host_note(n)
        return pa.Table.from_arrays(arrays, schema=self.schema)


    def _order(self, host: ExecContext, out: Batch, groups: Any) -> Any:
        """The ORDER BY's permutation of the groups when it reads aggregate columns too: the key
        columns' sort arrays taken from the domain's, the aggregate columns' made as the sort makes
        them (operators/sort.sort_keys), one stable sort over them all."""
        from hetdb.exec.operators.sort import sort_keys

        arrays, desc = [], []
        for kind, what, key, casts in self.order:
            if kind == "key":
                arrays += [a[groups] for a in what]
                desc += key
                continue
            col = out.columns[what]
            for dtype in casts:
                col = host.evaluator.cast(col, dtype)
            got, d = sort_keys(host, (key,), Batch({key.expr.cid: col}, out.num_rows))
            arrays += got
            desc += d
        return host.backend.sort_indices(arrays, desc)


def _to_arrow(col: Column, want: pa.Field) -> pa.Array:
    """hostutil.to_arrow_table's conversion of one column."""
    from hetdb.exec.hostutil import _dictionary_strings_to_arrow

    arr = _dictionary_strings_to_arrow(col) if col.dictionary is not None and want.type == pa.string() \
        else col.to_arrow()
    return arr.cast(want.type) if arr.type != want.type else arr


def tail_chain(physical: Any, pid: int) -> list | None:
    """The pipelines after aggregation ``pid`` up to the result, when they are one projection
    pipeline (ColumnRef projections only) into an ORDER BY on columns or the result's collection,
    then (after the ORDER BY) the result's collection, and nothing else reads them."""
    readers: dict[int, list] = {}
    for p in physical.pipelines:
        for d in p.deps:
            readers.setdefault(d, []).append(p)
    chain, at = [], pid
    while True:
        nxt = readers.get(at, [])
        if len(nxt) != 1:
            return None
        p = nxt[0]
        if type(p.source) is not ResultSource or p.source.pipeline_id != at or p.deps != [at]:
            return None
        if any(type(op) is not ProjectOp or not all(type(e) is ColumnRef for _, e in op.exprs) for op in p.ops):
            return None
        if type(p.sink) is SortSink:
            if chain or not all(type(k.expr) is ColumnRef for k in p.sink.keys):
                return None
        elif type(p.sink) is not CollectSink:
            return None
        chain.append(p)
        if p.pid == physical.result_pipeline:
            return chain if type(p.sink) is CollectSink else None
        if type(p.sink) is CollectSink:
            return None
        at = p.pid


def make_recipe(host: ExecContext, sink: Any, chain: list, keys: list[Column], fields: Any,
                schema: pa.Schema) -> TailRecipe | None:
    """The recipe of ``chain`` (tail_chain's) after aggregation ``sink`` whose key columns over every
    group of the domain are ``keys`` (hot_replay._domain_keys, in the aggregation's key order); None
    when the ORDER BY reads an aggregate column."""
    n = len(keys[0]) if keys else 1
    # the aggregation's output columns: its keys' (over the domain) as _outputs makes them
    key_cid = {f.cid: i for i, (f, _) in enumerate(sink.keys)}
    cols = {f.cid: host.evaluator.cast(keys[i], f.dtype) for i, (f, _) in enumerate(sink.keys)}
    dtype_of = {f.cid: f.dtype for f, _ in sink.keys} | {f.cid: f.dtype for f, _ in sink.aggs}
    source = {cid: (cid, []) for cid in dtype_of}  # column -> (aggregation column, casts on the way)
    batch = Batch(cols, n)
    for p in chain:
        for op in p.ops:
            source = {f.cid: (source[e.cid][0], [*source[e.cid][1], f.dtype]) for f, e in op.exprs}
            batch = Batch({f.cid: host.evaluator.cast(batch.columns[e.cid], f.dtype) for f, e in op.exprs
                           if e.cid in batch.columns}, n)
    ranks = order = None
    sort = chain[0].sink if type(chain[0].sink) is SortSink else None
    if sort is not None:
        from hetdb.exec.operators.sort import sort_keys

        if all(k.expr.cid in batch.columns for k in sort.keys):  # (on group keys only: each group's rank)
            arrays, desc = sort_keys(host, sort.keys, batch)
            perm = host.backend.sort_indices(arrays, desc) if n else np.zeros(0, np.int64)
            ranks = np.empty(n, np.int64)
            ranks[perm] = np.arange(n, dtype=np.int64)
        else:  # (on aggregates too: per key, the domain's sort arrays or how to make them)
            order = []
            for k in sort.keys:
                if k.expr.cid in batch.columns:
                    arrays, desc = sort_keys(host, (k,), batch)
                    order.append(("key", arrays, desc, None))
                elif k.expr.cid in source:
                    agg_cid, casts = source[k.expr.cid]
                    order.append(("value", agg_cid, k, casts))
                else:
                    return None
    columns = []
    for f, want in zip(fields, schema):
        if f.cid not in source:
            return None
        agg_cid, casts = source[f.cid]
        if agg_cid in key_cid:
            columns.append(("key", _to_arrow(batch.columns[f.cid], want), None, want))
        else:
            columns.append(("value", agg_cid, casts, want))
    return TailRecipe(chain, schema, columns, ranks, order)
