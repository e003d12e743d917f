"""A worker's side of a collective exchange: its stage output (a Batch on its backend) cut into one
encoded batch per destination, every partition encoded together (on a GPU worker by
``gpu_shuffle.encode_partitions``: one packing launch; on a CPU worker by the host codecs, same
layout), sent as frames through a communicator (``collective``: NCCL between GPUs), and what arrives
decoded where it lands (``decode_device`` on the GPU) into Columns on the worker's backend, read by
the next stage through ``ReceivedSource``. A worker's rows for itself are never encoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.dist.nccl import frame_prefix, unframe
from hetdb.dist.shuffle_codec import ColumnLayout, EncodedBatch, _arrow_column, decode_arrays
from hetdb.exec.columns import slice_batch, take_batch, to_plain
from hetdb.exec.hostutil import _map_arrays
from hetdb.exec.operators.base import ExecContext, Source, Timer
from hetdb.plan.expr import Field


class CollectiveExchange:
    """Exchanges of one worker (``comm.rank`` of ``comm.workers``) on ``backend`` (cpu or gpu)."""

    def __init__(self, comm: Any, backend: Any, compress: bool = True):
        self.comm, self.backend, self.compress = comm, backend, compress
        self.xp = backend.xp
        self.device = backend.name == "gpu"

    def _to_host(self, a: Any) -> np.ndarray:
        return self.xp.asnumpy(a) if self.device else np.asarray(a)

    def _encode(self, columns: list[tuple[str, Column]], rows: Any, bounds: list[int],
                skip: int | None) -> list[EncodedBatch | None]:
        from hetdb.dist.gpu_shuffle import encode_with

        if self.device:
            from hetdb.backend.gpu.shuffle_encode import SegmentPlan

            plan_type = SegmentPlan
        else:
            from hetdb.dist.segments import HostSegmentPlan

            plan_type = HostSegmentPlan
        return encode_with(columns, rows, bounds, self.compress, self.xp, plan_type, skip=skip)

    def exchange(self, batch: Batch, rows: Any = None, bounds: list[int] | None = None
                 ) -> tuple[list[Batch], list[tuple[int, int, int, int, int]]]:
        """Sends partition p (``rows[bounds[p]:bounds[p + 1]]`` of ``batch``) to worker p, or with
        ``bounds`` None the whole batch to every worker (a broadcast); returns the batches received
        (this worker's own rows first, then each sender's non-empty one) and per other destination
        (worker, level 1, rows, raw bytes, bytes on the wire)."""
        n, me = self.comm.workers, self.comm.rank
        columns = list(batch.columns.items())
        if bounds is None:
            one = self._encode(columns, None, [0, batch.num_rows], None)[0] if n > 1 and batch.num_rows else None
            sends: list[EncodedBatch | None] = [None if p == me else one for p in range(n)]
            own = batch
        else:
            sends = self._encode(columns, rows, bounds, me)
            lo, hi = int(bounds[me]), int(bounds[me + 1])
            own = take_batch(self.backend, batch, rows[lo:hi]) if (lo, hi) != (0, batch.num_rows) else batch
        frames = [None if b is None or not b.num_rows else self._frame(b) for b in sends]
        if self.device:  # another thread's stream may read them (NCCL itself orders by stream)
            self.xp.cuda.get_current_stream().synchronize()
        got = self.comm.all_to_all(frames)
        dtypes = {name: col.dtype for name, col in columns}
        received = [own] + [self._decode(buf, dtypes) for p, buf in enumerate(got)
                            if p != me and buf is not None and int(buf.nbytes)]
        messages = [(p, 1, b.num_rows, b.raw_bytes, int(frames[p].nbytes))
                    for p, b in enumerate(sends) if p != me and b is not None and b.num_rows]
        return share_dictionaries(self.backend, [b for b in received if b.num_rows]), messages

    def _frame(self, batch: EncodedBatch) -> Any:
        prefix = frame_prefix(batch)
        return self.xp.concatenate([self.xp.asarray(prefix), self.xp.asarray(batch.payload)])

    def _decode(self, buf: Any, dtypes: dict[str, T.DataType]) -> Batch:
        if self.device:
            from hetdb.backend.gpu.decode import decode_device

            size = int(self._to_host(buf[:8]).view(np.int64)[0])
            layout, payload = unframe(buf, self._to_host(buf[:8 + size]))
            arrays = decode_arrays(layout, payload=payload, decode_fn=decode_device)
        else:
            layout, payload = unframe(buf)
            arrays = decode_arrays(layout, payload=payload)
        cols = {name: self._column(c, bufs, dtypes[name])
                for name, c, bufs in zip(layout.schema.names, layout.columns, arrays)}
        return Batch(cols, layout.num_rows)

    def _column(self, layout: ColumnLayout, bufs: dict, dtype: T.DataType) -> Column:
        xp = self.xp
        validity = bufs.get("validity")
        validity = None if validity is None else validity.astype(bool, copy=False)
        if layout.kind == "ipc" or dtype.is_wide or dtype.kind in ("interval", "list", "int128"):
            arr = _arrow_column(layout, _host_tree(bufs, self._to_host))
            return _map_arrays(Column.from_arrow(arr, dtype), xp.asarray, None)
        if layout.kind == "dict":
            codes = bufs["codes"].astype(xp.int32, copy=False)
            if validity is not None:  # codes under NULLs stay inside the dictionary
                codes = xp.where(validity, codes, 0).astype(xp.int32)
            return Column(dtype, data=codes, validity=validity,
                          dictionary=self._column(layout.dictionary, bufs["dictionary"], T.STRING))
        if layout.kind == "string":
            return Column(dtype, offsets=bufs["offsets"].astype(xp.int64), chars=bufs["data"], validity=validity)
        values = bufs["values"]
        if dtype.kind == "float64":
            values = values.view(xp.float64)
        return Column(dtype, data=values.astype(dtype.numpy_dtype, copy=False), validity=validity)


def _host_tree(bufs: dict, to_host: Any) -> dict:
    return {k: _host_tree(v, to_host) if isinstance(v, dict) else to_host(v) for k, v in bufs.items()}


def share_dictionaries(backend: Any, batches: list[Batch]) -> list[Batch]:
    """``batches`` (from different senders) with one dictionary per string column: where every batch
    has the column dictionary-coded, their dictionaries are merged and codes remapped (the compiled
    loops join and group on codes); where only some do, those are made plain."""
    if len(batches) < 2:
        return batches
    xp = backend.xp
    to_host = xp.asnumpy if backend.name == "gpu" else np.asarray
    out = [dict(b.columns) for b in batches]
    for name, col in batches[0].columns.items():
        if col.dtype.kind != "string":
            continue
        cols = [b.columns[name] for b in batches]
        if all(c.dictionary is None for c in cols) or len({id(c.dictionary) for c in cols}) == 1:
            continue
        if any(c.dictionary is None for c in cols):
            for o, c in zip(out, cols):
                o[name] = to_plain(backend, c)
            continue
        values = [_map_arrays(c.dictionary, to_host, None).to_arrow() for c in cols]
        union = pc.unique(pa.chunked_array(values, pa.string()))
        shared = _map_arrays(Column.from_arrow(union.cast(pa.large_string()), T.STRING),
                             xp.asarray, None)
        for o, c, v in zip(out, cols, values):
            mapping = xp.asarray(pc.index_in(v, value_set=union).to_numpy(zero_copy_only=False).astype(np.int32))
            o[name] = Column(c.dtype, data=mapping[c.data], validity=c.validity, dictionary=shared)
    return [Batch(o, b.num_rows) for o, b in zip(out, batches)]


@dataclass(frozen=True, eq=False)
class ReceivedSource(Source):
    """The batches this worker received from the collective exchange of stage ``stage`` (already on
    its backend), sliced to ``batch_rows``."""

    stage: int = 0
    kind: str = ""
    fields: tuple[Field, ...] = ()
    batches: tuple[Batch, ...] = ()

    def describe(self) -> str:
        return f"ExchangeScan {self.kind} from stage {self.stage} (collective)"

    def morsels(self, ctx: ExecContext, g: Any) -> list:
        step = ctx.batch_rows
        out = []
        for i, b in enumerate(self.batches):
            if not step or b.num_rows <= step:
                out.append((i, 0, b.num_rows))
            else:
                out.extend((i, s, min(s + step, b.num_rows)) for s in range(0, b.num_rows, step))
        return out

    def read(self, ctx: ExecContext, morsel: Any, g: Any) -> list[Batch]:
        with Timer(ctx, self.op_id):
            i, lo, hi = morsel
            b = self.batches[i]
            out = b if (lo, hi) == (0, b.num_rows) else slice_batch(ctx.backend, b, lo, hi)
            out = Batch({f.cid: out.columns[f.cid] for f in self.fields}, out.num_rows)
            ctx.add(self.op_id, rows_out=out.num_rows)
            return [out] if out.num_rows else []
