"""DISTINCT aggregation over the raw rows of one group key that do not fit ``host_memory_limit``.

A spilled partition of raw rows (an aggregation with DISTINCT keeps its input rows) that cannot be
split by its group-key hash holds one group key (a hash collision aside). Each aggregate is then
computed on its own, into the ordinary partial-state layout (sum / count / value columns):

- a non-DISTINCT aggregate folds the partition a slice at a time (its states reduce to one row per
  group);
- a DISTINCT aggregate splits the partition by the hash of (group key, argument value), so that every
  occurrence of a value lies in one part, again by the next hash bits while a part does not fit; each
  part is reduced to its distinct (group, value) pairs a slice at a time and aggregated, and the parts'
  states add up (their value sets are disjoint).

The states of all aggregates are merged by group key (``HashAggregate._merge``) into the final row.
"""

from __future__ import annotations

from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.columns import batch_nbytes, concat_batches, full_column, take
from hetdb.exec.keys import encoders_for
from hetdb.exec.memory import Reservation
from hetdb.exec.operators.aggregate import _g, _s, _sum_type
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.spill_partition import NUM_PARTITIONS, partition_ids, spill_partitioned
from hetdb.exec.wide import key_value

SLICE_ROWS = 1 << 14
MAX_LEVEL = 15


def state_dtypes(op: Any) -> dict[str, T.DataType]:
    """The partial-state layout of ``op``'s aggregates (as without DISTINCT)."""
    d = {_g(i): e.dtype for i, (_, e) in enumerate(op.keys)}
    for j, (_, a) in enumerate(op.aggs):
        if a.op in ("sum", "avg"):
            d[_s(j, "sum")] = _sum_type(a.arg.dtype)
        if a.op in ("count", "count_star", "avg"):
            d[_s(j, "cnt")] = T.INT64
        if a.op in ("min", "max", "any"):
            d[_s(j, "val")] = a.arg.dtype
    return d


def one_key_raw(op: Any, ctx: ExecContext, g: Any, f: Any) -> Batch:
    """Final rows of raw-row partition ``f`` (one group key), in bounded memory."""
    dtypes = state_dtypes(op)
    pieces = []
    for j, (_, a) in enumerate(op.aggs):
        if a.distinct and a.arg is not None:
            parts = _split_values(op, ctx, g, j, f, 0)
            states = [_states(op, ctx, g, j, _distinct_rows(op, ctx, g, j, p)) for p in parts]
            for p in parts:
                if p is not f:
                    p.remove()
        else:
            states = [_states(op, ctx, g, j, b) for b in f.iter_batches(ctx.backend, SLICE_ROWS)]
        pieces += [_padded(ctx, dtypes, s) for s in states if s.num_rows]
    res = Reservation(ctx.memory)
    try:
        res.force_grow(sum(batch_nbytes(p) for p in pieces))  # one row per group and piece
        merged = op._merge(ctx, g, concat_batches(ctx.backend, pieces, list(dtypes)))
        return op._outputs(ctx, merged)
    finally:
        res.close()


def _states(op: Any, ctx: ExecContext, g: Any, j: int, raw: Batch) -> Batch:
    """Group keys and aggregate ``j``'s states over ``raw`` (group key and argument columns)."""
    a = op.aggs[j][1]
    keycols = [raw.columns[_g(i)] for i in range(len(op.keys))]
    gid, ng, first = op._group(ctx, g, keycols, raw.num_rows)
    cols = {_g(i): take(ctx.backend, c, first) for i, c in enumerate(keycols)}
    arg = raw.columns.get(_s(j, "raw"))
    cols.update(op._agg_states(ctx, j, a, arg, gid, ng, merge=False))
    return Batch(cols, ng)


def _padded(ctx: ExecContext, dtypes: dict, states: Batch) -> Batch:
    """``states`` with the other aggregates' state columns neutral (NULL sums and values, 0 counts)."""
    be, n = ctx.backend, states.num_rows
    cols = {}
    for name, dtype in dtypes.items():
        if name in states.columns:
            cols[name] = states.columns[name]
        elif name.endswith("cnt"):
            cols[name] = Column(T.INT64, data=be.xp.zeros(n, dtype=be.xp.int64))
        else:
            cols[name] = full_column(be, None, dtype, n)
    return Batch(cols, n)


def _value_key(ctx: ExecContext, g: Any, j: int, arg: Column) -> Any:
    """int64 per row, equal for equal values (strings through the aggregate's value encoder; -0.0 and
    0.0 alike, every NaN alike)."""
    xp = ctx.backend.xp
    if arg.dtype.kind == "string":
        enc = g.value_encoders.setdefault(j, encoders_for(ctx.backend, [arg.dtype])[0])
        data = enc.encode(arg)
    elif arg.dtype.kind == "float64":
        data = arg.data + 0.0
        data = xp.where(xp.isnan(data), xp.float64("nan"), data).view(xp.int64)
    else:
        data = key_value(xp, arg.data)
        if data.dtype == bool:
            data = data.astype(xp.int32)
    if arg.validity is not None:
        data = xp.where(arg.validity, data, xp.zeros(1, dtype=data.dtype))
    return data


def _split_values(op: Any, ctx: ExecContext, g: Any, j: int, f: Any, level: int) -> list[Any]:
    """Files that together hold ``f``'s (group key, argument ``j``) rows, every value in one file,
    each small enough to reduce to its distinct pairs (``f`` itself when it fits)."""
    res = Reservation(ctx.memory)
    try:
        if res.try_grow(2 * f.nbytes + op.merge_bytes(f.num_rows)) or level > MAX_LEVEL:
            return [f]
    finally:
        res.close()
    names = [_g(i) for i in range(len(op.keys))] + [_s(j, "raw")]
    dtypes = {n: f.dtypes[n] for n in names}
    subs = [ctx.spill_file(dtypes) for _ in range(NUM_PARTITIONS)]
    for s in subs:
        ctx.cleanup.append(s.remove)
    for b in f.iter_batches(ctx.backend, SLICE_ROWS):
        keycols = [b.columns[_g(i)] for i in range(len(op.keys))]
        arg = b.columns[_s(j, "raw")]
        valid = arg.validity if arg.validity is not None else ctx.backend.xp.ones(len(arg), dtype=bool)
        # the same arrays for every slice (a validity even where none is NULL): equal rows hash alike
        arrays = op._key_arrays(ctx, g, keycols, b.num_rows) + [_value_key(ctx, g, j, arg), valid]
        spill_partitioned(ctx, Batch({n: b.columns[n] for n in names}, b.num_rows),
                          partition_ids(ctx, arrays, None, level), subs)
    if sum(1 for s in subs if s.num_rows) <= 1:  # one value: its pairs reduce slice by slice
        for s in subs:
            s.remove()
        return [f]
    ctx.add(op.op_id, spilled_partitions=NUM_PARTITIONS)
    out = []
    for s in subs:
        if s.num_rows:
            out += _split_values(op, ctx, g, j, s, level + 1)
            if out[-1] is not s:
                s.remove()
        else:
            s.remove()
    return out


def _distinct_rows(op: Any, ctx: ExecContext, g: Any, j: int, f: Any) -> Batch:
    """The distinct (group key, argument ``j``) rows of ``f``, reduced a slice at a time."""
    be = ctx.backend
    names = [_g(i) for i in range(len(op.keys))] + [_s(j, "raw")]
    res = Reservation(ctx.memory)
    try:
        kept = None
        for b in f.iter_batches(be, SLICE_ROWS):
            b = Batch({n: b.columns[n] for n in names}, b.num_rows)
            both = b if kept is None else concat_batches(be, [kept, b], names)
            keycols = [both.columns[_g(i)] for i in range(len(op.keys))]
            arg = both.columns[_s(j, "raw")]
            valid = arg.validity if arg.validity is not None else be.xp.ones(len(arg), dtype=bool)
            arrays = op._key_arrays(ctx, g, keycols, both.num_rows) + [_value_key(ctx, g, j, arg), valid]
            _, _, first = be.group_ids(arrays)
            kept = Batch({n: take(be, both.columns[n], first) for n in names}, int(first.shape[0]))
            res.close()
            res.force_grow(batch_nbytes(kept))
        return kept
    finally:
        res.close()
