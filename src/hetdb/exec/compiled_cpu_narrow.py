"""Narrow copies of the integer pages an aggregating compiled CPU loop reads.

A scan-bound loop on many cores waits for memory, not for its instructions: SSB q1.3 at SF 20 on 16
threads read its four INT32 columns at ~50 GB/s (1.8 GiB in 38 ms; the loop itself takes ~9 ms of
each core), its two filter columns (lo_quantity 1..50, lo_discount 0..10) in full. Where the zone
maps say a column's values fit a narrower integer type over the whole table, the loop reads a copy
of each cached page in that type (int8: a quarter of the bytes), made once per page and kept beside
it in the host page cache (``DecodedPageCache.narrow``; its bytes count there). The loop widens
every input to int64 as it loads it, so its answers do not depend on the width.

Only aggregating loops take them (a materializing loop gathers the morsel's columns into batches of
the column's own type), only for whole cached pages of stored tables (a page that is not cached, or
whose copy does not fit, is read as it is), and only from ``narrow_scan_rows`` table rows (tuning).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb.backend.cpu import tuning
from hetdb.column import Column

# narrowest first (unsigned ones too: the loop widens to int64 as it loads; SSB's lo_suppkey at SF 20
# spans 1..40,000)
_WIDTHS = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32))
_INTEGER_KINDS = ("int32", "int64", "date", "decimal")
# (table version path, column) -> the narrower dtype its values fit (None: none), kept across queries
# (committed versions are immutable)
_DTYPES: dict[tuple, Any] = {}
_MAX_DTYPES = 4096


def narrow_dtypes(ctx: Any, p: Any, src: Any) -> dict[int, np.dtype]:
    """Per position in ``p.base`` (the loop's scan columns): the narrower dtype the loop reads that
    column's pages in, for an aggregating loop over a stored table's cached pages."""
    from hetdb.exec.compiled_cpu_kernels import scan_key_range
    from hetdb.exec.operators.scan import TableScan

    if p.plan.materialize or p.marks is not None or p.resident is None or p.resident.cache is None:
        return {}
    if not isinstance(src, TableScan) or not ctx.options.zone_maps:
        return {}
    reader = ctx.db.table(src.scan.table)
    rows = getattr(reader, "num_rows", 0)
    if not isinstance(rows, int) or rows < tuning.get("narrow_scan_rows"):
        return {}
    path = getattr(reader, "path", None)
    if path is None:
        return {}
    types = {f.cid: f.dtype for f in src.scan.fields}
    out: dict[int, np.dtype] = {}
    for i, cid in enumerate(p.base):
        t = types.get(cid)
        if cid not in p.kernel_cols or cid == p.run_key or t is None or t.kind not in _INTEGER_KINDS or t.is_wide:
            continue
        name = p.names[cid]
        key = (path, name)
        if key not in _DTYPES:
            if len(_DTYPES) >= _MAX_DTYPES:
                _DTYPES.clear()
            got = scan_key_range(reader, name)
            width = np.dtype(t.numpy_dtype)
            _DTYPES[key] = next((d for d in _WIDTHS if d.itemsize < width.itemsize and got is not None
                                 and np.iinfo(d).min <= got[0] and got[1] <= np.iinfo(d).max), None)
        if _DTYPES[key] is not None:
            out[i] = _DTYPES[key]
    return out


def narrowed(p: Any, cols: dict[str, Column], keys: list[tuple] | None, rows: tuple | None) -> dict[str, Column]:
    """The morsel's columns with those of ``p.narrow`` read from their narrow copies where the host
    page cache has them (``keys``: the morsel's page keys in ``p.base`` order; ``rows``: the morsel's
    row range inside the page, None for the whole page)."""
    if keys is None:
        return cols
    cache = p.resident.cache
    out = cols
    for i, dtype in p.narrow.items():
        made = cache.narrow(keys[i], dtype)
        if made is None:
            continue
        cid = p.base[i]
        col = cols[cid]
        data = made if rows is None else made[rows[0]:rows[1]]
        if data.shape[0] != len(col):
            continue
        if out is cols:
            out = dict(cols)
        out[cid] = Column(col.dtype, data=data, validity=col.validity)
    return out
