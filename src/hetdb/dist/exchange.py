"""Exchange buffers: hash repartitioning of Arrow tables by key columns, and the physical operators
a worker's stage reads its share with (received exchange data, its share of a table's row groups)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb.column import Batch
from hetdb.exec.operators.base import ExecContext, Source
from hetdb.exec.operators.scan import TableScan
from hetdb.plan.expr import Field

_MIX = np.uint64(0x9E3779B97F4A7C15)


def _plain(arr: pa.ChunkedArray) -> pa.Array:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over uint64 lanes (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x.astype(np.uint64, copy=True)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def _hash_strings(arr: pa.Array) -> np.ndarray:
    """A polynomial hash of each string's bytes, vectorised over the Arrow buffers."""
    if not pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string())
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=arr.offset * 8)
    lengths = np.diff(offsets)
    data = (np.frombuffer(bufs[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
            if bufs[2] is not None and offsets[-1] > offsets[0] else np.zeros(0, np.uint8))
    h = lengths.astype(np.uint64)
    if data.size:
        starts = offsets[:-1] - offsets[0]
        pos = np.arange(data.size, dtype=np.int64) - np.repeat(starts, lengths)
        powers = np.cumprod(np.full(int(lengths.max()), 0x100000001B3, dtype=np.uint64))
        with np.errstate(over="ignore"):
            terms = (data.astype(np.uint64) + np.uint64(1)) * powers[pos]
            nonempty = lengths > 0
            sums = np.add.reduceat(terms, starts[nonempty])
            h[nonempty] += sums
    return h


def hash_column(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """64-bit hashes of one key column; equal values hash equally whatever their integer or float
    width, so both sides of a join agree. NULLs hash to 0 (they match nothing; any one partition)."""
    arr = _plain(arr)
    t = arr.type
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        arr, t = arr.view(pa.int32()), pa.int32()
    elif pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t):
        arr, t = arr.view(pa.int64()), pa.int64()
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        vals = pc.fill_null(arr.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        h = _mix64(vals.view(np.uint64))
    elif pa.types.is_floating(t):
        # -0.0 and 0.0 are equal keys: adding 0.0 makes both +0.0; every NaN is one key
        vals = pc.fill_null(arr.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False) + 0.0
        vals = np.where(np.isnan(vals), np.nan, vals)
        h = _mix64(vals.view(np.uint64))
    else:
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            arr = arr.cast(pa.string())
        h = _mix64(_hash_strings(pc.fill_null(arr, "")))
    if arr.null_count:
        h[np.asarray(arr.is_null().to_numpy(zero_copy_only=False))] = 0
    return h


def partition_ids(table: pa.Table, key_names: list[str], parts: int) -> np.ndarray:
    h = np.zeros(table.num_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for name in key_names:
            h = h * _MIX + hash_column(table.column(name))
    return (h % np.uint64(parts)).astype(np.int64)


def hash_partition(table: pa.Table, key_names: list[str], parts: int) -> list[pa.Table]:
    """``parts`` tables: row r goes to partition hash(keys of r) mod parts; key columns dropped."""
    ids = partition_ids(table, key_names, parts)
    data = table.drop_columns(key_names)
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(parts + 1))
    return [data.take(pa.array(order[bounds[p]:bounds[p + 1]])) for p in range(parts)]


@dataclass(frozen=True, eq=False)
class ExchangeSource(Source):
    """The Arrow tables this worker received from the exchange of stage ``stage``."""

    stage: int = 0
    kind: str = ""
    fields: tuple[Field, ...] = ()
    tables: tuple[pa.Table, ...] = ()

    def describe(self) -> str:
        return f"ExchangeScan {self.kind} from stage {self.stage}"

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        step = ctx.batch_rows
        out = []
        for i, t in enumerate(self.tables):
            if not step or t.num_rows <= step:
                if t.num_rows:
                    out.append((i, 0, t.num_rows))
            else:
                out.extend((i, s, min(s + step, t.num_rows)) for s in range(0, t.num_rows, step))
        return out

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        i, lo, hi = morsel
        part = self.tables[i].slice(lo, hi - lo)
        batch = Batch.from_arrow(part, {f.cid: f.dtype for f in self.fields})
        ctx.add(self.op_id, rows_out=batch.num_rows)
        return [batch] if batch.num_rows else []


@dataclass(frozen=True)
class ShardScan(TableScan):
    """A table scan of the row groups ``rg % shares == share``: one worker's disjoint share."""

    share: int = 0
    shares: int = 1

    def describe(self) -> str:
        return f"{super().describe()} share {self.share}/{self.shares}"

    def morsels(self, ctx: ExecContext, reader: Any) -> list:
        return [m for m in super().morsels(ctx, reader)
                if (m[0] if isinstance(m, tuple) else m) % self.shares == self.share]
