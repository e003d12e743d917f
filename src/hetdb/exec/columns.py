"""Backend-neutral Column and Batch operations (gather, slice, concatenate, broadcast a literal).

Everything goes through ``backend.xp`` and backend kernels, so it runs unchanged on CPU and GPU.
Dictionary strings keep their dictionary object when every input shares it (so code comparisons stay
valid); otherwise they are turned into plain offsets+chars strings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.column import Batch, Column
from hetdb.exec.hostutil import column_from_pylist, host_scalar
from hetdb.types import DataType


def and_valid(xp, a: Any, b: Any) -> Any:
    """Combine two validity masks (None = all valid)."""
    if a is None:
        return b
    if b is None:
        return a
    return xp.logical_and(a, b)


def column_nbytes(col: Column) -> int:
    """Bytes held by a column (a shared dictionary is not counted: it belongs to the table)."""
    return col.held_nbytes()


def batch_nbytes(batch: Batch) -> int:
    return sum(column_nbytes(c) for c in batch.columns.values())


def full_column(backend, value: object, dtype: DataType, n: int) -> Column:
    """A column of ``n`` copies of a physical literal (None = NULL)."""
    xp = backend.xp
    if dtype.kind == "string":
        dictionary = column_from_pylist(backend, ["" if value is None else str(value)], dtype)
        validity = xp.zeros(n, dtype=bool) if value is None else None
        return Column(dtype, data=xp.zeros(n, dtype=xp.int32), validity=validity, dictionary=dictionary)
    if value is None:
        return Column(dtype, data=xp.zeros(n, dtype=dtype.numpy_dtype), validity=xp.zeros(n, dtype=bool))
    if dtype.kind == "interval":
        from hetdb.exec.functions_interval import pack

        return Column(dtype, data=pack(xp, *(xp.full(n, v, dtype=xp.int64) for v in value)))
    if dtype.is_wide and not -(2**63) <= value < 2**63:
        from hetdb.exec.wide import object_full

        return Column(dtype, data=object_full(xp, value, n))
    return Column(dtype, data=xp.full(n, value, dtype=dtype.numpy_dtype))


def to_plain(backend, col: Column) -> Column:
    """Dictionary string column -> plain offsets+chars (plain columns are returned as they are)."""
    if col.dictionary is None:
        return col
    d = col.dictionary
    if len(d) == 0:
        n = len(col)
        return Column(col.dtype, offsets=backend.xp.zeros(n + 1, dtype=backend.xp.int64),
                      chars=backend.xp.zeros(0, dtype=backend.xp.uint8), validity=col.validity)
    idx = col.data.astype(backend.xp.int64)
    offsets, chars = backend.gather_strings(d.offsets, d.chars, idx)
    return Column(col.dtype, offsets=offsets, chars=chars, validity=col.validity)


def take(backend, col: Column, idx: Any, missing: bool = False) -> Column:
    """Rows ``idx`` (int64) of ``col``; with ``missing`` an index of -1 yields NULL."""
    xp = backend.xp
    n = int(idx.shape[0])
    if len(col) == 0:
        if n == 0 or missing:
            return null_column(backend, col, n)
        raise IndexError("take from an empty column")
    safe = idx
    miss = None
    if missing:
        miss = idx < 0
        safe = xp.where(miss, 0, idx)
    validity = None if col.validity is None else backend.gather(col.validity, safe)
    if miss is not None:
        validity = and_valid(xp, validity, xp.logical_not(miss))
    if col.is_plain_string:
        offsets, chars = backend.gather_strings(col.offsets, col.chars, safe)
        return Column(col.dtype, offsets=offsets, chars=chars, validity=validity)
    return Column(col.dtype, data=backend.gather(col.data, safe), validity=validity,
                  dictionary=col.dictionary)


def null_column(backend, like: Column, n: int) -> Column:
    """``n`` NULLs of ``like``'s type (keeping its dictionary)."""
    xp = backend.xp
    valid = xp.zeros(n, dtype=bool)
    if like.is_plain_string:
        return Column(like.dtype, offsets=xp.zeros(n + 1, dtype=xp.int64), chars=xp.zeros(0, dtype=xp.uint8),
                      validity=valid)
    if like.dictionary is not None and len(like.dictionary) == 0:
        return full_column(backend, None, like.dtype, n)
    return Column(like.dtype, data=xp.zeros(n, dtype=like.dtype.numpy_dtype), validity=valid,
                  dictionary=like.dictionary)


def slice_column(backend, col: Column, start: int, stop: int) -> Column:
    """Rows [start, stop) of ``col``, bounds clamped like a Python slice (an OFFSET past the end is empty)."""
    n = len(col)
    start = max(0, min(start, n))
    stop = max(start, min(stop, n))
    if start == 0 and stop == n:
        return col  # (every row: a plain string's bounds would cost two device->host reads)
    validity = None if col.validity is None else col.validity[start:stop]
    if col.is_plain_string:
        lo = host_scalar(backend, col.offsets[start])
        hi = host_scalar(backend, col.offsets[stop])
        return Column(col.dtype, offsets=col.offsets[start:stop + 1] - lo, chars=col.chars[lo:hi],
                      validity=validity)
    return Column(col.dtype, data=col.data[start:stop], validity=validity, dictionary=col.dictionary)


def concat_columns(backend, cols: list[Column]) -> Column:
    xp = backend.xp
    if len(cols) == 1:
        return cols[0]
    if xp is np:
        from hetdb.backend.cpu.concat import concatenate as cat  # large copies on every kernel thread
    else:
        cat = xp.concatenate
    first = cols[0]
    validity = None
    if any(c.validity is not None for c in cols):
        validity = cat([c.validity if c.validity is not None else xp.ones(len(c), dtype=bool) for c in cols])
    if first.dtype.kind == "string":
        dicts = {id(c.dictionary) for c in cols}
        if first.dictionary is not None and len(dicts) == 1:
            return Column(first.dtype, data=cat([c.data for c in cols]), validity=validity,
                          dictionary=first.dictionary)
        plain = [to_plain(backend, c) for c in cols]
        sizes = [int(c.chars.shape[0]) for c in plain]
        parts = [plain[0].offsets]
        base = sizes[0]
        for c, s in zip(plain[1:], sizes[1:]):
            parts.append(c.offsets[1:] + base)
            base += s
        return Column(first.dtype, offsets=cat(parts), chars=cat([c.chars for c in plain]), validity=validity)
    return Column(first.dtype, data=cat([c.data for c in cols]), validity=validity)


def concat_batches(backend, batches: list[Batch], names: list[str] | None = None) -> Batch:
    """One batch holding every row of ``batches`` (which all have the columns ``names``)."""
    batches = [b for b in batches if b.num_rows > 0] or batches[:1]
    if len(batches) == 1:
        return batches[0]
    names = names if names is not None else batches[0].names
    cols = {n: concat_columns(backend, [b.columns[n] for b in batches]) for n in names}
    return Batch(cols, sum(b.num_rows for b in batches))


def coalesce_batches(backend, batches: list[Batch], least: int, map_all: Any = None) -> list[Batch]:
    """``batches`` in order, runs of consecutive ones under ``least`` rows concatenated into batches
    of about ``least`` rows (one of ``least`` or more stays as it is, uncopied): a result read by the
    next pipeline is a morsel per batch at least, and a morsel's fixed costs want rows behind it.
    ``map_all(fn, items)``: how the concatenations run (default one after another)."""
    groups: list[list[Batch]] = []
    run: list[Batch] = []
    rows = 0

    def close() -> None:
        nonlocal run, rows
        if run:
            groups.append(run)
            run, rows = [], 0

    for b in batches:
        if b.num_rows >= least:
            close()
            groups.append([b])
            continue
        run.append(b)
        rows += b.num_rows
        if rows >= least:
            close()
    close()
    if len(groups) == len(batches):
        return list(batches)
    concat = lambda g: concat_batches(backend, g) if len(g) > 1 else g[0]  # noqa: E731
    return list(map_all(concat, groups)) if map_all is not None else [concat(g) for g in groups]


def take_batch(backend, batch: Batch, idx: Any, missing: bool = False) -> Batch:
    return Batch({k: take(backend, c, idx, missing) for k, c in batch.columns.items()}, int(idx.shape[0]))


def slice_batch(backend, batch: Batch, start: int, stop: int) -> Batch:
    stop = min(stop, batch.num_rows)
    return Batch({k: slice_column(backend, c, start, stop) for k, c in batch.columns.items()},
                 max(0, stop - start))


def filter_batch(backend, batch: Batch, mask: Any) -> Batch:
    """Rows where ``mask`` is True (the batch itself when every row passes)."""
    idx = backend.nonzero(mask)
    if int(idx.shape[0]) == batch.num_rows:
        return batch
    return take_batch(backend, batch, idx)


def empty_batch(backend, fields) -> Batch:
    """Zero rows with the columns of ``fields`` (Field objects)."""
    return Batch({f.cid: full_column(backend, None, f.dtype, 0) for f in fields}, 0)
