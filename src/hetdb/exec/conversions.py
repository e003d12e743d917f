"""Numeric conversion between physical representations (decimals as scaled int64 or Python ints,
dates as int32 days, timestamps as int64 microseconds), with DuckDB's range checks: a value that does
not fit its target raises OutOfRangeError, never wraps. ``common_type`` is the type a comparison
compares in."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.exec import wide as W
from hetdb.types import DataType


def quiet(xp):
    """Silence floating-point warnings (x/0 is inf/NaN as in DuckDB) where the array module can."""
    errstate = getattr(xp, "errstate", None)
    return errstate(all="ignore") if errstate is not None else contextlib.nullcontext()


def _pow10(k: int) -> int:
    return 10 ** k


def round_div(xp, x: Any, d: int) -> Any:
    """x / d rounded half away from zero (x int64 or Python ints, d > 0 int)."""
    near_limit = int(x.shape[0]) > 0 and not W.is_object(x) and bool(
        (x <= W.I64_MIN + d).any() or (x >= W.I64_MAX - d).any())
    if near_limit and W.on_host(xp):  # |x| + d // 2 would wrap in int64
        x = x.astype(object)
    if W.is_object(x):
        q = (np.abs(x) + d // 2) // d
        return np.where(x < 0, -q, q).astype(object)
    q = xp.floor_divide(xp.abs(x) + d // 2, d)
    return xp.where(x < 0, -q, q)


def _within(src: DataType, dst: DataType) -> bool:
    """Every value of exact type ``src`` fits ``dst`` (after rescaling)."""
    lo, hi = W.bounds(src)
    f = _pow10(max(0, (dst.scale if dst.kind == "decimal" else 0) - (src.scale if src.kind == "decimal" else 0)))
    dlo, dhi = W.bounds(dst)
    return dlo <= lo * f and hi * f <= dhi


def convert(xp, data: Any, src: DataType, dst: DataType, valid: Any = None) -> Any:
    """Physical data of type ``src`` as type ``dst``; exact numeric casts raise OutOfRangeError for a
    value that does not fit (never wrap)."""
    sk, dk = src.kind, dst.kind
    ndt = dst.numpy_dtype
    if sk == dk and src.scale == dst.scale and (not dst.is_numeric or dk == "float64" or _within(src, dst)):
        return data if data.dtype == ndt or W.is_object(data) else data.astype(ndt)
    if dk == "float64":
        out = W.to_float(xp, data)
        return out / float(_pow10(src.scale)) if sk == "decimal" else out
    if dk == "bool":
        return data != 0
    if sk == "float64":
        if dk == "decimal":
            return W.float_to_decimal(xp, data, dst, valid)
        return W.float_to_int(xp, data, dst, valid)
    if sk == "date" and dk == "timestamp":
        return data.astype(xp.int64) * 86_400_000_000
    if sk == "timestamp" and dk == "date":
        return xp.floor_divide(data, 86_400_000_000).astype(xp.int32)
    if sk == "bool":
        return data.astype(ndt)
    src_scale = src.scale if sk == "decimal" else 0
    dst_scale = dst.scale if dk == "decimal" else 0
    x = data if W.is_object(data) else data.astype(xp.int64, copy=False)
    if dst_scale > src_scale:
        x = W.scale_up(xp, x, dst_scale - src_scale, dst, valid)
    elif dst_scale < src_scale:
        x = round_div(xp, x, _pow10(src_scale - dst_scale))
    if _within(src, dst) and not W.is_object(x):
        return x.astype(ndt, copy=False)
    return W.check_range(xp, x, dst, valid, W.cast_message(src, dst))


def common_type(a: DataType, b: DataType) -> DataType:
    """The type both sides of a comparison are compared in (the binder usually made them equal)."""
    if a == b:
        return a
    if "float64" in (a.kind, b.kind):
        return T.FLOAT64
    if "timestamp" in (a.kind, b.kind):
        return T.TIMESTAMP
    if a.kind == "decimal" or b.kind == "decimal":
        s = max(a.scale if a.kind == "decimal" else 0, b.scale if b.kind == "decimal" else 0)
        if a.is_wide or b.is_wide or "int64" in (a.kind, b.kind):
            return T.wide_decimal(T.MAX_WIDE_PRECISION, s)
        return DataType("decimal", 18, s)
    if "int128" in (a.kind, b.kind):
        return T.INT128
    if "int64" in (a.kind, b.kind):
        return T.INT64
    return a
