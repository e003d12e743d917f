"""Exchange batches encoded on the GPU: every partition of a device batch becomes an ``EncodedBatch``
in ``shuffle_codec``'s layout (the same sections, in the same order, each 8-byte aligned), all
partitions' payloads in one device buffer written by one packing launch for all columns and
partitions (``backend/gpu/shuffle_encode.py``). The CPU's ``decode_batch`` reads them (after a copy to
the host) and the device's ``decode_device`` reads them where they lie.

On the GPU: fixed-width columns (integers, dates, times, timestamps, doubles as bit patterns,
DECIMAL as low words plus the sign word), booleans, NULL masks and the codes of dictionary strings,
each through const / frame-of-reference / delta (the smallest, computed exactly per buffer) or plain.
On the host: dictionaries (one encoding, copied into every partition's payload) and columns of other
kinds (plain strings, wide decimals, intervals), gathered to the host per partition and encoded with
``shuffle_codec``. ``raw_bytes`` counts the batch in the uncompressed layout: Arrow's widths
(16-byte decimals), dictionary strings as their codes plus the dictionary."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from hetdb.column import Column
from hetdb.dist.segments import Segment
from hetdb.dist.shuffle_codec import ColumnLayout, EncodedBatch, Section, _encode_column, _Payload

_GPU_KINDS = ("int32", "int64", "float64", "decimal", "date", "bool", "timestamp", "time")


def _on_gpu(col: Column) -> bool:
    if col.dtype.kind == "string":
        return col.dictionary is not None
    return col.dtype.kind in _GPU_KINDS and not col.dtype.is_wide and col.data is not None \
        and np.dtype(col.data.dtype) != object


def _shift(layout: ColumnLayout, delta: int) -> ColumnLayout:
    sections = {k: replace(s, offset=s.offset + delta) for k, s in layout.sections.items()}
    dictionary = None if layout.dictionary is None else _shift(layout.dictionary, delta)
    return replace(layout, sections=sections, dictionary=dictionary)


def _host_arrow(col: Column, to_host: Any) -> pa.Array:
    from hetdb.exec.hostutil import _map_arrays

    return _map_arrays(col, to_host, None).to_arrow()


class _Piece:
    """One section of a partition's payload: a GPU segment (index into the plan) or host bytes."""

    def __init__(self, seg: int | None = None, data: np.ndarray | None = None, n: int = 0, dtype: str = ""):
        self.seg, self.data, self.n, self.dtype = seg, data, n, dtype


def encode_partitions(columns: list[tuple[str, Column]], rows: Any, bounds: list[int],
                      compress: bool = True) -> list[EncodedBatch]:
    """One ``EncodedBatch`` per partition p of the device batch ``columns`` (name, device Column):
    its rows are ``rows[bounds[p]:bounds[p + 1]]`` (device int64 row numbers; None: consecutive rows
    ``bounds[p]``..). Each payload is a view of one device buffer; ``compress=False`` stores every
    section plain (same layout)."""
    import cupy

    from hetdb.backend.gpu.shuffle_encode import SegmentPlan

    return encode_with(columns, rows, bounds, compress, cupy, SegmentPlan)  # type: ignore[return-value]


def encode_with(columns: list[tuple[str, Column]], rows: Any, bounds: list[int], compress: bool, xp: Any,
                plan_type: Any, skip: int | None = None) -> list[EncodedBatch | None]:
    """``encode_partitions`` with the array module ``xp`` (cupy) and the segment plan ``plan_type``
    (``SegmentPlan``) given: the layout is assembled the same way whatever encodes the segments.
    Partition ``skip`` (a worker's rows for itself) is not encoded: None in its place."""
    to_host = getattr(xp, "asnumpy", np.asarray)
    parts = len(bounds) - 1
    schema = pa.schema([pa.field(name, col.dtype.to_arrow()) for name, col in columns])
    segments: list[Segment] = []
    # recipe[p][c] = (kind, arrow type, n, null count, [(section name, piece)], dictionary (layout, bytes))
    recipe: list[list[tuple]] = []
    dictionaries: dict[int, tuple[ColumnLayout, np.ndarray, int]] = {}
    host_columns: dict[int, pa.Array] = {}
    host_rows = None
    raw = [0] * parts

    def segment(values: Any, start: int, n: int, **kw) -> _Piece:
        dt = np.dtype(values.dtype)
        if dt.itemsize == 2:
            values = values.astype(xp.int32)
            dt = np.dtype(np.int32)
        elif dt.kind == "f":
            values = values.view(xp.int64 if dt.itemsize == 8 else xp.int32)
            dt = np.dtype(values.dtype)
        segments.append(Segment(values, n, start, rows, plain_only=not compress, **kw))
        return _Piece(len(segments) - 1, n=n, dtype=dt.str)

    for p in range(parts):
        if p == skip:
            recipe.append([])
            continue
        lo, hi = int(bounds[p]), int(bounds[p + 1])
        n = hi - lo
        cols = []
        for ci, (_, col) in enumerate(columns):
            t = col.dtype.to_arrow()
            if n == 0 or not _on_gpu(col):
                if n == 0:
                    arr = pa.array([], type=t)
                else:
                    if ci not in host_columns:
                        host_columns[ci] = _host_arrow(col, to_host)
                    if host_rows is None and rows is not None:
                        host_rows = to_host(rows)
                    sel = np.arange(lo, hi) if rows is None else host_rows[lo:hi]
                    arr = host_columns[ci].take(pa.array(sel))
                sub = _Payload()
                layout = _encode_column(arr, sub, compress)
                cols.append(("host", layout, sub.array()))
                raw[p] += int(arr.nbytes)
                continue
            pieces = []
            nulls = 0
            if col.validity is not None:
                pieces.append(("validity", segment(col.validity, lo, n)))
                nulls = -1  # counted after the encoding (one reduction per partition and column)
                raw[p] += n
            if col.dtype.kind == "string":
                pieces.append(("codes", segment(col.data, lo, n)))
                if ci not in dictionaries:
                    sub = _Payload()
                    values = _host_arrow(col.dictionary, to_host)
                    dictionaries[ci] = (_encode_column(values, sub, compress, dict_ok=False), sub.array(),
                                        int(values.nbytes))
                cols.append(("dict", t, n, nulls, pieces))
                raw[p] += 4 * n + dictionaries[ci][2]
                continue
            kind = "bool" if col.dtype.kind == "bool" else "fixed"
            pieces.append(("values", segment(col.data, lo, n)))
            if col.dtype.kind == "decimal":
                pieces.append(("hi", segment(col.data, lo, n, sign_word=True)))
            cols.append((kind, t, n, nulls, pieces))
            raw[p] += n * (16 if col.dtype.kind == "decimal" else np.dtype(col.data.dtype).itemsize)
        recipe.append(cols)

    plan = plan_type(segments)
    offsets = np.zeros(len(segments), np.int64)
    host_copies: list[tuple[int, np.ndarray]] = []
    part_layouts: list[tuple[ColumnLayout, ...]] = []
    part_spans: list[tuple[int, int]] = []
    null_counts: list[tuple[int, int, Any]] = []  # (partition, column, device count)
    base = 0
    for p, cols in enumerate(recipe):
        size = 0
        layouts = []
        for ci, entry in enumerate(cols):
            if entry[0] == "host":
                _, layout, data = entry
                layouts.append(_shift(layout, size))
                host_copies.append((base + size, data))
                size += int(data.shape[0])
                continue
            kind, t, n, nulls, pieces = entry
            sections = {}
            for name, piece in pieces:
                nbytes = int(plan.nbytes[piece.seg])
                sections[name] = Section(size, nbytes, plan.codecs[piece.seg], piece.n, piece.dtype)
                offsets[piece.seg] = base + size
                size += nbytes + (-nbytes % 8)
            dictionary = None
            if kind == "dict":
                d_layout, d_data, _ = dictionaries[ci]
                dictionary = _shift(d_layout, size)
                host_copies.append((base + size, d_data))
                size += int(d_data.shape[0])
            if nulls:
                col = columns[ci][1]
                lo = int(bounds[p])
                valid = col.validity[lo:lo + n] if rows is None else col.validity[rows[lo:lo + n]]
                null_counts.append((p, ci, n - xp.count_nonzero(valid)))
            layouts.append(ColumnLayout(kind, t, n, 0, sections, dictionary))
        part_layouts.append(tuple(layouts))
        part_spans.append((base, size))
        base += size
    out = xp.zeros(max(base, 8), xp.uint8)
    plan.pack(offsets, out)
    for at, data in host_copies:
        out[at:at + data.shape[0]] = xp.asarray(data)
    if null_counts:
        counts = to_host(xp.stack([xp.asarray(c) for _, _, c in null_counts]))
        fixed = [list(x) for x in part_layouts]
        for (p, ci, _), count in zip(null_counts, counts):
            fixed[p][ci] = replace(fixed[p][ci], null_count=int(count))
        part_layouts = [tuple(x) for x in fixed]
    return [None if p == skip else
            EncodedBatch(schema, int(bounds[p + 1]) - int(bounds[p]), part_layouts[p], out[start:start + size], raw[p])
            for p, (start, size) in enumerate(part_spans)]


def host_copy(batch: EncodedBatch) -> EncodedBatch:
    """``batch`` with its payload copied to the host (what ``decode_batch`` reads)."""
    import cupy

    return replace(batch, payload=cupy.asnumpy(batch.payload))
