"""Exact integer arithmetic on physical data: overflow checks and the 128-bit (HUGEINT / DECIMAL(38))
representation.

A HUGEINT or DECIMAL(19..38) column holds an int64 array while every value fits (the common case:
sums of realistic data), and an object array of Python ints once one does not. Every operation
here is exact: it either returns the right value in one of those two forms or raises
``OutOfRangeError`` worded like DuckDB's "Out of Range Error". Narrow types (INTEGER, BIGINT,
DECIMAL(p<=18)) never take the object form: a value past their range raises.

Object arrays exist only on the host; on the GPU a value that needs more than 64 bits raises
``GpuWideValueError``, and the engine runs that query on the CPU (see docs/query-engine.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.errors import GpuWideValueError, OutOfRangeError, UnsupportedError
from hetdb.types import DataType

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
_DUCK = {"int32": "INT32", "int64": "INT64", "int128": "INT128"}


def duck_name(t: DataType) -> str:
    """The type name DuckDB's overflow messages use."""
    if t.kind == "decimal":
        return f"DECIMAL({18 if t.precision <= T.MAX_DECIMAL_PRECISION else 38})"
    if t == T.UBIGINT:
        return "UINT64"
    return _DUCK.get(t.kind, t.sql_name())


def bounds(t: DataType) -> tuple[int, int]:
    """Smallest and largest physical value of an exact numeric type."""
    if t.kind in ("int32", "date"):
        return -(2**31), 2**31 - 1
    if t.kind in ("int64", "timestamp"):
        return I64_MIN, I64_MAX
    if t.kind == "bool":
        return 0, 1
    if t == T.UBIGINT:
        return 0, 2**64 - 1
    if t.kind == "int128":
        return T.INT128_MIN, T.INT128_MAX
    limit = 10 ** t.precision - 1
    return -limit, limit


def is_object(a: Any) -> bool:
    return getattr(a, "dtype", None) == np.dtype(object)


def on_host(xp) -> bool:
    return xp is np


def _require_host(xp) -> None:
    if not on_host(xp):
        raise GpuWideValueError("a HUGEINT / DECIMAL(38) value needs more than 64 bits, which the "
                                "GPU path does not hold")


def as_object(xp, a: Any) -> Any:
    _require_host(xp)
    return a if is_object(a) else np.asarray(a).astype(object)


def object_full(xp, value: int, n: int) -> Any:
    _require_host(xp)
    out = np.empty(n, dtype=object)
    out[:] = value
    return out


def narrow(a: Any) -> Any:
    """An object array back to int64 when every value fits."""
    if is_object(a) and (len(a) == 0 or (int(min(a)) >= I64_MIN and int(max(a)) <= I64_MAX)):
        return a.astype(np.int64)
    return a


def first_bad(a: Any, bad: Any) -> int:
    return int(np.flatnonzero(np.asarray(bad))[0]) if not hasattr(bad, "get") else int(bad.nonzero()[0][0])


def check_range(xp, data: Any, t: DataType, valid: Any, message) -> Any:
    """``data`` (int64 or object) checked to lie in ``t``'s range where ``valid`` (else raises
    ``OutOfRangeError(message(value))``); returned in ``t``'s physical form."""
    lo, hi = bounds(t)
    if is_object(data):
        bad = np.array([not (lo <= v <= hi) for v in data.tolist()], dtype=bool)
        if valid is not None:
            bad = bad & np.asarray(valid)
    elif lo <= I64_MIN and hi >= I64_MAX:
        return data.astype(t.numpy_dtype, copy=False)
    else:
        bad = (data < lo) | (data > hi)
        if valid is not None:
            bad = bad & valid
    if bool(bad.any()):
        raise OutOfRangeError(message(_py(data[first_bad(data, bad)])))
    if is_object(data):
        return narrow(_back(xp, data, valid)) if t.is_wide else _back(xp, data, valid).astype(t.numpy_dtype)
    return data.astype(t.numpy_dtype, copy=False)


def cast_message(src: DataType, dst: DataType):
    return lambda v: (f"Conversion Error: Type {duck_name(src)} with value {v} can't be cast because the "
                      f"value is out of range for the destination type {duck_name(dst)}")


def _py(v: Any) -> int:
    return int(v.item()) if hasattr(v, "item") else int(v)


def checked(xp, op: str, x: Any, y: Any, rt: DataType, valid: Any, describe) -> Any:
    """x op y (op: add, sub, mul) on exact physical values of result type ``rt``; ``describe(a, b)``
    renders the failing operands for the message.

    Fast path: the operands' min/max bound the result, and when the bound fits int64 and ``rt``
    (the usual case) the plain int64 result is returned after a few reductions. Otherwise the rows
    are checked one by one and the batch is redone exactly on Python ints (``_exact``): kept for a
    wide ``rt``, else raised as DuckDB's "Overflow in <op> of <type> (x <op> y)!"."""
    if is_object(x) or is_object(y):
        return _exact(xp, op, x, y, rt, valid, describe)
    if int(x.shape[0]) == 0:
        return _OPS[op](x, y).astype(rt.numpy_dtype, copy=False)
    ax = max(-int(x.min()), int(x.max()))  # NULL slots only make the bounds larger
    ay = max(-int(y.min()), int(y.max()))
    bound = ax * ay if op == "mul" else ax + ay
    lo, hi = bounds(rt)
    if bound <= min(-lo, hi, I64_MAX):
        # no row can leave the result type: compute in it directly
        nd = rt.numpy_dtype
        return _OPS[op](x.astype(nd, copy=False), y.astype(nd, copy=False))
    x64 = x.astype(xp.int64, copy=False)
    y64 = y.astype(xp.int64, copy=False)
    with np.errstate(over="ignore"):
        r = _OPS[op](x64, y64)
    if bound <= I64_MAX and int(r.min()) >= lo and int(r.max()) <= hi:
        return r.astype(rt.numpy_dtype, copy=False)
    return _exact(xp, op, x64, y64, rt, valid, describe)


def _exact(xp, op: str, x: Any, y: Any, rt: DataType, valid: Any, describe) -> Any:
    """The batch redone on Python ints (on the host): an error for a value past a narrow ``rt``,
    the exact values otherwise (back on the device when they fit 64 bits)."""
    hx, hy, hv = _host(x), _host(y), None if valid is None else _host(valid)
    res = _back(np, _OPS[op](hx.astype(object), hy.astype(object)), hv)
    lo, hi = bounds(rt)
    bad = np.array([not (lo <= v <= hi) for v in res.tolist()], dtype=bool)
    if bool(bad.any()):
        i = int(np.flatnonzero(bad)[0])
        tail = ". You might want to add an explicit cast to a bigger decimal." if rt.kind == "decimal" else "!"
        raise OutOfRangeError(f"Out of Range Error: Overflow in {_WORD[op]} of {duck_name(rt)} "
                              f"({describe(_py(hx[i]), _py(hy[i]))}){tail}")
    out = narrow(res) if rt.is_wide else res.astype(rt.numpy_dtype)
    return as_object(xp, out) if is_object(out) else xp.asarray(out)


def _host(a: Any) -> Any:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _back(xp, res: Any, valid: Any) -> Any:
    """NULL rows of an object result set to 0 (their inputs are arbitrary)."""
    if valid is not None:
        res = np.where(np.asarray(valid), res, 0).astype(object)
    return res


_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}
_WORD = {"add": "addition", "sub": "subtraction", "mul": "multiplication"}


def scale_up(xp, data: Any, k: int, rt: DataType, valid: Any) -> Any:
    """data * 10**k exactly (a rescale into ``rt``): object form when ``rt`` is wide and it must be."""
    if k <= 0:
        return data
    f = 10 ** k
    msg = cast_message(rt, rt)
    if is_object(data):
        return check_range(xp, data * f, rt, valid, msg)
    limit = I64_MAX // f
    big = (data > limit) | (data < -limit)  # not abs(): abs(INT64_MIN) wraps to a negative value
    if valid is not None:
        big = big & valid
    if not bool(big.any()):
        return data.astype(xp.int64) * f
    if not rt.is_wide:
        raise OutOfRangeError(msg(_py(data[first_bad(data, big)]) * f))
    return check_range(xp, _back(xp, as_object(xp, data) * f, valid), rt, valid, msg)


def negate(xp, data: Any, rt: DataType, valid: Any, op: str) -> Any:
    """-x or abs(x) with DuckDB's errors for the minimum of INTEGER / BIGINT (and for -x of a
    UBIGINT other than 0)."""
    if rt == T.UBIGINT:
        if op == "abs":
            return data
        nonzero = data != 0
        if valid is not None:
            nonzero = nonzero & valid
        if bool(nonzero.any()):
            raise OutOfRangeError("Out of Range Error: Overflow in negation of numeric value!")
        return data
    if is_object(data):
        res = -data if op == "neg" else np.abs(data)
        return check_range(xp, res, rt, valid, lambda v: f"Out of Range Error: Overflow in negation of {v}")
    lo, _ = bounds(rt)
    if rt.kind in ("int32", "int64"):
        bad = data == lo
        if valid is not None:
            bad = bad & valid
        if bool(bad.any()):
            if op == "abs":
                raise OutOfRangeError(f"Out of Range Error: Overflow on abs({lo})")
            raise OutOfRangeError("Out of Range Error: Overflow in negation of numeric value!")
    with np.errstate(over="ignore"):
        return -data if op == "neg" else xp.abs(data)


def to_float(xp, data: Any) -> Any:
    if is_object(data):
        return np.array([float(v) for v in data.tolist()], dtype=np.float64)
    return data.astype(xp.float64)


def float_to_int(xp, data: Any, rt: DataType, valid: Any) -> Any:
    """DOUBLE -> INTEGER/BIGINT/HUGEINT (rounding half to even like DuckDB), raising DuckDB's
    Conversion Error for NaN, infinities and values out of range."""
    r = xp.rint(data)
    lo, hi = bounds(rt)
    bad = ~xp.isfinite(r) | (r < float(lo)) | (r >= float(hi) + 1.0)
    if valid is not None:
        bad = bad & valid
    if bool(bad.any()):
        i = first_bad(data, bad)
        v = float(data[i])
        raise OutOfRangeError(f"Conversion Error: Type DOUBLE with value {gfmt(v)} can't be cast because "
                              f"the value is out of range for the destination type {duck_name(rt)}")
    if rt.kind == "int128" and bool((xp.abs(r) >= 9.2e18).any()):
        return narrow(np.array([int(v) for v in r.tolist()], dtype=object))
    return xp.where(xp.isfinite(r), r, 0).astype(rt.numpy_dtype)


def float_to_decimal(xp, data: Any, rt: DataType, valid: Any) -> Any:
    """DOUBLE -> DECIMAL(p, s), rounding half away from zero; out of range raises."""
    scaled = data * float(10 ** rt.scale)
    r = xp.sign(scaled) * xp.floor(xp.abs(scaled) + 0.5)
    limit = float(10 ** rt.precision)
    bad = ~xp.isfinite(r) | (xp.abs(r) >= limit)
    if valid is not None:
        bad = bad & valid
    if bool(bad.any()):
        v = float(data[first_bad(data, bad)])
        raise OutOfRangeError(f"Conversion Error: Could not cast value {gfmt(v)} to {rt.sql_name()}")
    r = xp.where(xp.isfinite(r), r, 0)
    if rt.is_wide and bool((xp.abs(r) >= 9.2e18).any()):
        return narrow(np.array([int(v) for v in r.tolist()], dtype=object))
    return r.astype(xp.int64)


def gfmt(v: float) -> str:
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"


def group_sum(be, data: Any, gid: Any, ng: int, valid: Any) -> tuple[Any, Any]:
    """Exact per-group SUM of exact values (int64, or Python ints): (sums, has a value).

    The common case is one int64 kernel pass: a sum cannot wrap when every |value| * rows < 2^63
    (always so for INTEGER inputs). Otherwise each value is split into its high and low 32 bits,
    both summed by the int64 kernel (neither can wrap below 2^31 rows) and recombined exactly as
    Python ints; the result goes back to int64 when it fits. Partial states already holding Python
    ints are added as Python ints."""
    xp = be.xp
    if is_object(data):
        vals = _back(xp, data, valid)
        out = np.zeros(ng, dtype=object)
        np.add.at(out, np.asarray(be.to_host(gid)), vals)
        cnt, _ = be.aggregate("count", None, gid, ng, valid)
        return narrow(out), cnt > 0
    res, has = be.aggregate("sum", data, gid, ng, valid)
    n = int(data.shape[0])
    if n == 0 or data.dtype.itemsize <= 4:
        return res, has
    x = data.astype(xp.int64, copy=False)
    bound = max(-int(x.min()), int(x.max()))  # NULL slots only make the bound larger
    if bound * n < 2**63:
        return res, has
    vals = x if valid is None else xp.where(valid, x, 0)
    hi, _ = be.aggregate("sum", vals >> 32, gid, ng, valid)
    lo, _ = be.aggregate("sum", vals & 0xFFFF_FFFF, gid, ng, valid)
    exact = np.array([h * 2**32 + q for h, q in zip(be.to_host(hi).tolist(), be.to_host(lo).tolist())],
                     dtype=object)
    out = narrow(exact)
    if is_object(out):
        return as_object(xp, out), has
    return be.asarray(out), has


def wide_sum(xp, wrapped: Any, approx: Any) -> Any:
    """Exact sums from int64 sums that may have wrapped (exact modulo 2^64) and DOUBLE sums of the
    same values: the true sum is wrapped + k * 2^64 with k = round((approx - wrapped) / 2^64), exact
    while the DOUBLE sum's rounding error stays below 2^63 (n * 2^-53 * sum|x| < 2^63: any realistic
    input). Where every |approx| < 2^62 nothing wrapped and ``wrapped`` is returned as it is."""
    if int(wrapped.shape[0]) == 0 or not bool((xp.abs(approx) >= 2.0**62).any()):
        return wrapped
    w = [int(v) for v in np.asarray(wrapped.get() if hasattr(wrapped, "get") else wrapped).tolist()]
    f = np.asarray(approx.get() if hasattr(approx, "get") else approx).tolist()
    exact = np.array([v + round((a - v) / 2.0**64) * 2**64 for v, a in zip(w, f)], dtype=object)
    out = narrow(exact)
    if is_object(out):
        return as_object(xp, out)
    return xp.asarray(out)


def sort_key(xp, data: Any) -> Any:
    """An int64 array ordering like ``data`` (object arrays become dense ranks of their values)."""
    if not is_object(data):
        return data
    return np.unique(data, return_inverse=True)[1].astype(np.int64).reshape(-1)


def key_value(xp, data: Any) -> Any:
    """Hash/group key data as int64: HUGEINT values past 64 bits cannot be keys (refused)."""
    if not is_object(data):
        return data
    out = narrow(data)
    if is_object(out):
        raise UnsupportedError("grouping, joining or DISTINCT on HUGEINT / DECIMAL(38) values that need more "
                               "than 64 bits is not supported; CAST them to DOUBLE or VARCHAR")
    return out
