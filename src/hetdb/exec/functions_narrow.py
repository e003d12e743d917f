"""CAST / TRY_CAST to the types hetdb stores wider (TINYINT, SMALLINT, UTINYINT, USMALLINT, UINTEGER as
INTEGER/BIGINT; FLOAT as DOUBLE): ``narrow_check(x, lo, hi, src, dst, soft)`` keeps x's type and
values but, as DuckDB, a value outside the narrow type's range is a Conversion Error (CAST) or NULL
(TRY_CAST; ``soft``). A float target rounds to float32 precision (lo = hi = None)."""

from __future__ import annotations

import numpy as np

from hetdb.column import Batch, Column
from hetdb.errors import OutOfRangeError
from hetdb.exec.conversions import quiet
from hetdb.exec.hostutil import column_to_host
from hetdb.plan.expr import Call

FLOAT32_MAX = float(np.finfo(np.float32).max)


def _narrow_check(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    col = ev.evaluate(expr.args[0], batch)
    lo, hi, src, dst, soft = (a.value for a in expr.args[1:])
    x = col.data
    with quiet(xp):
        decimal = col.dtype.kind == "decimal"
        v = x.astype(xp.float64) / 10.0 ** col.dtype.scale if decimal else x
        if lo is None:  # FLOAT: finite values beyond float32's range fail; the rest round to float32
            v = v.astype(xp.float64)
            bad = xp.isfinite(v) & (xp.abs(v) > FLOAT32_MAX)
            data = v.astype(xp.float32).astype(xp.float64)
        else:
            # the value the integer cast rounds to: DECIMAL half away from zero, DOUBLE half to even
            if decimal:
                v = xp.where(v >= 0, xp.floor(v + 0.5), xp.ceil(v - 0.5))
            elif v.dtype.kind == "f":
                v = xp.rint(v)
            bad = (v < lo) | (v > hi)
            if v.dtype.kind == "f":
                bad = bad | ~xp.isfinite(v)
            data = x
    if col.validity is not None:
        bad = bad & col.validity
    if not bool(bad.any()):
        return Column(expr.dtype, data=data, validity=col.validity)
    if soft:
        valid = ~bad if col.validity is None else (col.validity & ~bad)
        return Column(expr.dtype, data=xp.where(bad, xp.zeros_like(data), data), validity=valid)
    first = int(xp.argmax(bad))
    value = column_to_host(ev.backend, col).to_arrow()[first].as_py()
    raise OutOfRangeError(f"Conversion Error: Type {src} with value {value} can't be cast because the value is "
                          f"out of range for the destination type {dst}")


FUNCTIONS = {"narrow_check": _narrow_check}

__all__ = ["FUNCTIONS"]
