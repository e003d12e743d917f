"""Zone maps (per-page min/max/null/NaN counts) computed at write time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb.column import Column
from hetdb.storage.format import MAX_ZONE_STRING_BYTES


def compute_zone(col: Column, strings: pa.Array | None = None) -> dict:
    """{"min", "max", "nulls", "nans"} of a page; ``strings`` is the page's values as an Arrow
    string array (string columns only)."""
    nulls = col.null_count()
    if col.dtype.kind == "string":
        lo = hi = None
        if strings is not None and len(strings) > nulls:
            mm = pc.min_max(strings)
            lo, hi = _short(mm["min"].as_py()), _short(mm["max"].as_py())
        return {"min": lo, "max": hi, "nulls": nulls, "nans": 0}
    if col.dtype.kind == "interval":  # 16-byte containers have no order of their own: no bounds
        return {"min": None, "max": None, "nulls": nulls, "nans": 0}
    values = np.asarray(col.data)
    if col.validity is not None:
        values = values[np.asarray(col.validity, dtype=bool)]
    nans = 0
    if values.dtype.kind == "f":
        isnan = np.isnan(values)
        nans = int(isnan.sum())
        if nans:
            values = values[~isnan]
    if values.shape[0] == 0:
        return {"min": None, "max": None, "nulls": nulls, "nans": nans}
    return {"min": values.min().item(), "max": values.max().item(), "nulls": nulls, "nans": nans}


def _short(s: str | None) -> str | None:
    if s is None or len(s.encode("utf-8")) > MAX_ZONE_STRING_BYTES:
        return None
    return s

