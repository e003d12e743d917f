"""Expression evaluator over Batches: SQL three-valued logic, NULL propagation, DuckDB's numeric
semantics on physical representations (decimals as scaled int64, dates as int32 days).

``ExprEvaluator(backend).evaluate(expr, batch) -> Column``; ``predicate(expr, batch) -> bool mask``
(True where the expression is TRUE; NULL counts as not true). Elementwise work uses ``backend.xp``;
string work uses backend string kernels. Predicates on dictionary strings run once per dictionary
(cached per dictionary object) and are gathered by codes. Functions on strings and dates live in
``expr_functions``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError, OutOfMemoryError, OutOfRangeError, UnsupportedError
from hetdb.exec import wide as W
from hetdb.exec.columns import and_valid, concat_columns, full_column, take, take_batch, to_plain
from hetdb.plan.expr import Call, Case, Cast, ColumnRef, Expr, Literal
from hetdb.types import DataType

_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_SQL_OP = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def quiet(xp):
    """Silence floating-point warnings (x/0 is inf/NaN as in DuckDB) where the array module can."""
    errstate = getattr(xp, "errstate", None)
    return errstate(all="ignore") if errstate is not None else contextlib.nullcontext()


class ExprEvaluator:
    """Evaluates expression IR over batches on one backend; safe to share between worker threads."""

    def __init__(self, backend):
        self.backend = backend
        self.xp = backend.xp
        self._dict_cache: dict[tuple, tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._rows = threading.local()  # per thread: the rows a CASE/COALESCE branch is used for

    @property
    def active_rows(self) -> Any:
        """Bool mask of the rows whose values are used (None: all): errors that depend on a row's
        values (division by zero) are raised only for these, as DuckDB does not evaluate a
        CASE/COALESCE branch for rows that do not take it (``CASE WHEN k <> 0 THEN x // k END``)."""
        return getattr(self._rows, "mask", None)

    @contextlib.contextmanager
    def only_rows(self, mask: Any):
        outer = self.active_rows
        self._rows.mask = mask if outer is None else self.xp.logical_and(outer, mask)
        try:
            yield
        finally:
            self._rows.mask = outer

    # ---- entry points ---------------------------------------------------------------------------
    def evaluate(self, expr: Expr, batch: Batch) -> Column:
        if isinstance(expr, ColumnRef):
            return batch.columns[expr.cid]
        if isinstance(expr, Literal):
            return full_column(self.backend, expr.value, expr.dtype, batch.num_rows)
        if isinstance(expr, Cast):
            return self.cast(self.evaluate(expr.arg, batch), expr.dtype)
        if isinstance(expr, Case):
            return self._case(expr, batch)
        if isinstance(expr, Call):
            from hetdb.exec import expr_functions as F

            fn = _CALLS.get(expr.op) or F.FUNCTIONS.get(expr.op) or _more_functions().get(expr.op)
            if fn is None:
                raise UnsupportedError(f"the executor does not implement the function {expr.op!r}")
            return fn(self, expr, batch)
        raise UnsupportedError(f"the executor cannot evaluate {type(expr).__name__} expressions here")

    def predicate(self, expr: Expr, batch: Batch) -> Any:
        """Bool mask: rows where ``expr`` is TRUE."""
        col = self.evaluate(expr, batch)
        data = col.data
        if data.dtype != bool:
            data = data != 0
        return data if col.validity is None else self.xp.logical_and(data, col.validity)

    # ---- helpers shared with expr_functions ----------------------------------------------------
    def dict_cached(self, dictionary: Column, key: tuple, compute) -> Any:
        """Result of ``compute()`` over ``dictionary`` cached per dictionary object and ``key``."""
        k = (id(dictionary),) + key
        hit = self._dict_cache.get(k)
        if hit is not None and hit[0] is dictionary:
            return hit[1]
        value = compute()
        with self._lock:
            if len(self._dict_cache) > 256:
                self._dict_cache.clear()
            self._dict_cache[k] = (dictionary, value)  # holding the dictionary keeps id() unique
        return value

    def string_mask(self, col: Column, key: tuple, fn) -> Column:
        """Bool column from ``fn(offsets, chars)`` evaluated on the dictionary (once) or the strings."""
        if col.dictionary is not None:
            d = col.dictionary
            per_value = self.dict_cached(d, key, lambda: fn(d.offsets, d.chars))
            data = (self.backend.gather(per_value, col.data.astype(self.xp.int64)) if len(d)
                    else self.xp.zeros(len(col), dtype=bool))
        else:
            data = fn(col.offsets, col.chars)
        return Column(T.BOOL, data=data, validity=col.validity)

    def numeric(self, col: Column, dtype: DataType) -> Any:
        """Physical data of ``col`` converted to ``dtype``'s representation (validity unchanged)."""
        return _convert(self.xp, col.data, col.dtype, dtype, col.validity)

    def select(self, mask: Any, a: Column, b: Column, dtype: DataType) -> Column:
        """Row-wise ``mask ? a : b`` for columns of one type (strings included)."""
        xp = self.xp
        va = a.validity if a.validity is not None else None
        vb = b.validity if b.validity is not None else None
        if va is None and vb is None:
            validity = None
        else:
            va = va if va is not None else xp.ones(mask.shape[0], dtype=bool)
            vb = vb if vb is not None else xp.ones(mask.shape[0], dtype=bool)
            validity = xp.where(mask, va, vb)
        if dtype.kind == "string":
            if a.dictionary is not None and a.dictionary is b.dictionary:
                return Column(dtype, data=xp.where(mask, a.data, b.data), validity=validity,
                              dictionary=a.dictionary)
            n = mask.shape[0]
            both = concat_columns(self.backend, [to_plain(self.backend, a), to_plain(self.backend, b)])
            idx = xp.where(mask, xp.arange(n, dtype=xp.int64), xp.arange(n, dtype=xp.int64) + n)
            out = take(self.backend, both, idx)
            out.validity = validity
            return out
        return Column(dtype, data=xp.where(mask, self.numeric(a, dtype), self.numeric(b, dtype)),
                      validity=validity)

    # ---- casts ----------------------------------------------------------------------------------
    def cast(self, col: Column, dtype: DataType) -> Column:
        if col.dtype == dtype:
            return col
        if dtype.kind == "string" or col.dtype.kind == "string":
            from hetdb.exec.expr_functions import arrow_cast

            return arrow_cast(self, col, dtype)
        return Column(dtype, data=self.numeric(col, dtype), validity=col.validity)

    # ---- CASE -----------------------------------------------------------------------------------
    def _case(self, expr: Case, batch: Batch) -> Column:
        try:
            return self._case_eager(expr, batch)
        except OutOfMemoryError:
            raise
        except HetdbError:
            # a branch raised: evaluate each branch only on the rows that take it (as DuckDB does),
            # so an error in a branch no row takes is never seen
            return self._case_lazy(expr, batch)

    def _case_lazy(self, expr: Case, batch: Batch) -> Column:
        xp, be = self.xp, self.backend
        n = batch.num_rows
        todo = xp.ones(n, dtype=bool)
        parts, rows = [], []
        branches = list(expr.whens) + [(None, expr.otherwise)]
        for cond, value in branches:
            if cond is None:
                take_rows = todo
            else:
                idx = be.nonzero(todo)
                hit = xp.zeros(n, dtype=bool)
                hit[idx] = self.predicate(cond, take_batch(be, batch, idx))
                take_rows = hit
            idx = be.nonzero(take_rows)
            todo = xp.logical_and(todo, xp.logical_not(take_rows))
            sub = take_batch(be, batch, idx)
            col = (self.evaluate(value, sub) if value is not None
                   else full_column(be, None, expr.dtype, int(idx.shape[0])))
            parts.append(self.cast(col, expr.dtype))
            rows.append(idx)
        order = xp.concatenate(rows)
        inverse = xp.empty(n, dtype=xp.int64)
        inverse[order] = xp.arange(n, dtype=xp.int64)
        return take(be, concat_columns(be, parts), inverse)

    def _case_eager(self, expr: Case, batch: Batch) -> Column:
        xp = self.xp
        n = batch.num_rows
        undecided = xp.ones(n, dtype=bool)  # rows no earlier WHEN took
        branches = []
        for cond, value in expr.whens:
            with self.only_rows(undecided):
                mask = xp.logical_and(self.predicate(cond, batch), undecided)
            with self.only_rows(mask):
                branches.append((mask, self.cast(self.evaluate(value, batch), expr.dtype)))
            undecided = xp.logical_and(undecided, xp.logical_not(mask))
        with self.only_rows(undecided):
            result = (self.evaluate(expr.otherwise, batch) if expr.otherwise is not None
                      else full_column(self.backend, None, expr.dtype, n))
        result = self.cast(result, expr.dtype)
        for mask, value in branches:  # the masks are disjoint
            result = self.select(mask, value, result, expr.dtype)
        return result


# ---- numeric conversion --------------------------------------------------------------------------
def _pow10(k: int) -> int:
    return 10 ** k


def _round_div(xp, x: Any, d: int) -> Any:
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


def _convert(xp, data: Any, src: DataType, dst: DataType, valid: Any = None) -> Any:
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
        x = _round_div(xp, x, _pow10(src_scale - dst_scale))
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


# ---- calls -----------------------------------------------------------------------------------------
def _compare(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    op = expr.op
    left, right = expr.args
    xp = ev.xp
    if left.dtype.kind == "string" or right.dtype.kind == "string":
        if isinstance(left, Literal) and not isinstance(right, Literal):
            left, right, op = right, left, _FLIP[op]
        if isinstance(right, Literal):
            col = ev.evaluate(left, batch)
            if right.value is None:
                return full_column(ev.backend, None, T.BOOL, batch.num_rows)
            lit, sop = str(right.value), _SQL_OP[op]
            return ev.string_mask(col, ("cmp", sop, lit),
                                  lambda o, c: ev.backend.compare_string_scalar(o, c, lit, sop))
        a, b = ev.evaluate(left, batch), ev.evaluate(right, batch)
        validity = and_valid(xp, a.validity, b.validity)
        if a.dictionary is not None and a.dictionary is b.dictionary and op in ("eq", "ne"):
            x, y = a.data, b.data
        else:
            # factorized codes order like the strings, so every comparison works on codes
            both = concat_columns(ev.backend, [to_plain(ev.backend, a), to_plain(ev.backend, b)])
            codes, _, _ = ev.backend.factorize_strings(both.offsets, both.chars)
            n = batch.num_rows
            x, y = codes[:n], codes[n:]
        return Column(T.BOOL, data=_CMP[op](x, y), validity=validity)
    t = common_type(left.dtype, right.dtype)
    x, y = _literal_row(ev, left, t), _literal_row(ev, right, t)
    if (x is None) != (y is None):
        # the literal side is one row that broadcasts: no column of copies per batch
        col = ev.evaluate(right if x is not None else left, batch)
        data = ev.numeric(col, t)
        x, y = (x, data) if x is not None else (data, y)
        return Column(T.BOOL, data=_FLOAT_CMP[op](xp, x, y) if t.kind == "float64" else _CMP[op](x, y),
                      validity=col.validity)
    a, b = ev.evaluate(left, batch), ev.evaluate(right, batch)
    t = common_type(a.dtype, b.dtype)
    x, y = ev.numeric(a, t), ev.numeric(b, t)
    cmp = _FLOAT_CMP[op] if t.kind == "float64" else _CMP[op]
    return Column(T.BOOL, data=cmp(xp, x, y) if t.kind == "float64" else cmp(x, y),
                  validity=and_valid(xp, a.validity, b.validity))


def _literal_row(ev: ExprEvaluator, expr: Expr, t: DataType) -> Any:
    """A non-NULL numeric literal as one row of ``t``'s representation (None: not such a literal)."""
    if not isinstance(expr, Literal) or expr.value is None or t.is_wide or t.kind in ("string", "bool") \
            or expr.dtype.is_wide or expr.dtype.kind in ("string", "bool"):
        return None
    data = ev.numeric(full_column(ev.backend, expr.value, expr.dtype, 1), t)
    return None if data.dtype == object else data


# DuckDB compares doubles in a total order: NaN equals NaN and is above every number (+inf
# included); -0.0 equals 0.0 (IEEE already has that).
_FLOAT_CMP = {
    "eq": lambda xp, x, y: (x == y) | (xp.isnan(x) & xp.isnan(y)),
    "ne": lambda xp, x, y: (x != y) & ~(xp.isnan(x) & xp.isnan(y)),
    "lt": lambda xp, x, y: (x < y) | (~xp.isnan(x) & xp.isnan(y)),
    "le": lambda xp, x, y: (x <= y) | xp.isnan(y),
    "gt": lambda xp, x, y: (x > y) | (xp.isnan(x) & ~xp.isnan(y)),
    "ge": lambda xp, x, y: (x >= y) | xp.isnan(x),
}

_CMP = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
        "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def _bool_parts(ev: ExprEvaluator, col: Column) -> tuple[Any, Any]:
    data = col.data if col.data.dtype == bool else col.data != 0
    valid = col.validity if col.validity is not None else ev.xp.ones(data.shape[0], dtype=bool)
    return data, valid


def _lazy_logic(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    """AND / OR evaluating each argument only on the rows the earlier ones left undecided (an
    argument that raises on rows already decided is never evaluated there, as in DuckDB)."""
    xp, be = ev.xp, ev.backend
    n = batch.num_rows
    stop_on = expr.op == "or"  # OR is decided by a TRUE, AND by a FALSE
    decided = xp.zeros(n, dtype=bool)
    unknown = xp.zeros(n, dtype=bool)
    for a in expr.args:
        idx = be.nonzero(xp.logical_not(decided))
        if int(idx.shape[0]) == 0:
            break
        value, valid = _bool_parts(ev, ev.evaluate(a, take_batch(be, batch, idx)))
        decided[idx] = xp.logical_and(valid, value == stop_on)
        unknown[idx] = xp.logical_or(unknown[idx], xp.logical_not(valid))
    data = decided if stop_on else xp.logical_not(xp.logical_or(decided, unknown))
    return Column(T.BOOL, data=data, validity=xp.logical_or(decided, xp.logical_not(unknown)))


def _guarded(fn):
    def run(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
        try:
            return fn(ev, expr, batch)
        except OutOfMemoryError:
            raise
        except HetdbError:
            return _lazy_logic(ev, expr, batch)
    return run


def _and(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    cols = [ev.evaluate(a, batch) for a in expr.args]
    if all(c.validity is None for c in cols):
        data = cols[0].data
        for c in cols[1:]:
            data = xp.logical_and(data, c.data)
        return Column(T.BOOL, data=data)
    value, valid = _bool_parts(ev, cols[0])
    for c in cols[1:]:
        v2, ok2 = _bool_parts(ev, c)
        false1 = xp.logical_and(valid, xp.logical_not(value))
        false2 = xp.logical_and(ok2, xp.logical_not(v2))
        valid = xp.logical_or(xp.logical_and(valid, ok2), xp.logical_or(false1, false2))
        value = xp.logical_and(value, v2)
    return Column(T.BOOL, data=value, validity=valid)


def _or(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    cols = [ev.evaluate(a, batch) for a in expr.args]
    if all(c.validity is None for c in cols):
        data = cols[0].data
        for c in cols[1:]:
            data = xp.logical_or(data, c.data)
        return Column(T.BOOL, data=data)
    value, valid = _bool_parts(ev, cols[0])
    value = xp.logical_and(value, valid)
    for c in cols[1:]:
        v2, ok2 = _bool_parts(ev, c)
        true2 = xp.logical_and(v2, ok2)
        valid = xp.logical_or(xp.logical_and(valid, ok2), xp.logical_or(value, true2))
        value = xp.logical_or(value, true2)
    return Column(T.BOOL, data=value, validity=valid)


def _not(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    c = ev.evaluate(expr.args[0], batch)
    data = c.data if c.data.dtype == bool else c.data != 0
    return Column(T.BOOL, data=ev.xp.logical_not(data), validity=c.validity)


def _is_null(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    c = ev.evaluate(expr.args[0], batch)
    valid = c.validity if c.validity is not None else ev.xp.ones(batch.num_rows, dtype=bool)
    return Column(T.BOOL, data=ev.xp.logical_not(valid) if expr.op == "is_null" else valid.copy())


def _arith(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    op, rt = expr.op, expr.dtype
    a, b = (ev.evaluate(x, batch) for x in expr.args)
    validity = and_valid(xp, a.validity, b.validity)
    if rt.kind == "decimal" and op == "mul":
        sa = a.dtype.scale if a.dtype.kind == "decimal" else 0
        sb = b.dtype.scale if b.dtype.kind == "decimal" else 0
        x = ev.numeric(a, _exact_operand(a.dtype, sa))
        y = ev.numeric(b, _exact_operand(b.dtype, sb))
        raw_t = T.wide_decimal(T.MAX_WIDE_PRECISION, sa + sb) if rt.is_wide else DataType("decimal", 18, sa + sb)
        raw = W.checked(xp, "mul", x, y, raw_t, validity, lambda p, q: f"{p} * {q}")
        return Column(rt, data=_convert(xp, raw, raw_t, rt, validity), validity=validity)
    if op == "div" and rt.kind != "float64" and rt.is_numeric:
        op = "intdiv"
    if op == "div" or rt.kind == "float64":
        x, y = ev.numeric(a, T.FLOAT64), ev.numeric(b, T.FLOAT64)
        with quiet(xp):
            # DuckDB on doubles: x / 0 is +-inf, x % 0 is NaN, x // 0 raises; // does not floor
            if op == "intdiv":
                _check_zero(ev, y, validity, expr)
            if op in ("div", "intdiv"):
                data = x / y
            elif op == "mod":
                data = xp.fmod(x, y)
            else:
                data = _BASIC[op](x, y)
        return Column(T.FLOAT64, data=data, validity=validity) if rt.kind == "float64" else \
            Column(rt, data=_convert(xp, data, T.FLOAT64, rt, validity), validity=validity)
    if rt.kind in ("date", "timestamp"):
        # date +/- integer days (the binder lowers intervals to date_add_* where it can)
        x = ev.numeric(a, rt) if a.dtype.kind in ("date", "timestamp") else a.data
        y = ev.numeric(b, rt) if b.dtype.kind in ("date", "timestamp") else b.data
        return Column(rt, data=_BASIC[op](x.astype(xp.int64), y.astype(xp.int64)).astype(rt.numpy_dtype),
                      validity=validity)
    x, y = ev.numeric(a, rt), ev.numeric(b, rt)
    if op in ("intdiv", "mod"):
        _check_zero(ev, y, validity, expr)
        if W.is_object(x) or W.is_object(y):
            x, y = W.as_object(xp, x), W.as_object(xp, y)
            safe = np.where(y == 0, 1, y)
            q = np.array([_trunc_div(p, d) for p, d in zip(x.tolist(), safe.tolist())], dtype=object)
            data = q if op == "intdiv" else x - q * safe
            return Column(rt, data=W.check_range(xp, data, rt, validity, W.cast_message(rt, rt)),
                          validity=validity)
        safe = xp.where(y == 0, 1, y)
        with quiet(xp):
            rem = xp.fmod(x, safe)
        if op == "mod":
            data = rem
        else:
            # DuckDB's // on integers truncates toward zero; MIN // -1 overflows
            lo, _ = W.bounds(rt)
            bad = (x == lo) & (y == -1)
            if validity is not None:
                bad = bad & validity
            if bool(bad.any()):
                raise OutOfRangeError(f"Out of Range Error: Overflow in division of {lo} / -1")
            data = (x - rem) // safe
        return Column(rt, data=data.astype(rt.numpy_dtype), validity=validity)
    if op == "power":
        return Column(rt, data=_BASIC[op](x, y).astype(rt.numpy_dtype, copy=False), validity=validity)
    sym = {"add": "+", "sub": "-", "mul": "*"}[op]
    data = W.checked(xp, op, x, y, rt, validity, lambda p, q: f"{p} {sym} {q}")
    return Column(rt, data=data, validity=validity)


def _exact_operand(t: DataType, scale: int) -> DataType:
    """The decimal type an operand of a decimal product is read in (its own digits, its scale)."""
    if t.kind == "decimal":
        return t
    return {"int32": DataType("decimal", 10, 0), "int64": T.wide_decimal(19, 0)}.get(t.kind, T.wide_decimal(38, 0))


def _trunc_div(p: int, d: int) -> int:
    q = abs(p) // abs(d)
    return q if (p >= 0) == (d > 0) else -q


def _check_zero(ev: ExprEvaluator, y: Any, validity: Any, expr: Call) -> None:
    zero = y == 0
    if validity is not None:
        zero = ev.xp.logical_and(zero, validity)
    active = ev.active_rows
    if active is not None and active.shape == zero.shape:
        zero = ev.xp.logical_and(zero, active)
    if bool(zero.any()):
        raise HetdbError(f"Invalid Input Error: Division by zero in expression {user_text(expr)} (DuckDB "
                         "raises this error too)")


_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "intdiv": "//"}


def user_text(e: Expr) -> str:
    """An expression as the user wrote it, near enough for a message: operators infix, columns by
    name, decimals with their scale, implicit casts left out."""
    from decimal import Decimal

    if isinstance(e, ColumnRef):
        return e.cid.split("#")[0]
    if isinstance(e, Literal):
        if e.value is None:
            return "NULL"
        if e.dtype.kind == "decimal" and isinstance(e.value, int):
            return str(Decimal(e.value).scaleb(-e.dtype.scale))
        return repr(e.value) if isinstance(e.value, str) else str(e.value)
    if isinstance(e, Cast) and e.arg is not None:
        return user_text(e.arg)
    if isinstance(e, Call) and e.op in _INFIX and len(e.args) == 2:
        return f"({user_text(e.args[0])} {_INFIX[e.op]} {user_text(e.args[1])})"
    if isinstance(e, Call):
        return f"{e.op}({', '.join(user_text(a) for a in e.args)})"
    return str(e)


_BASIC = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
          "power": lambda x, y: x ** y}


def _neg_abs(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    c = ev.evaluate(expr.args[0], batch)
    x = ev.numeric(c, expr.dtype)
    if expr.dtype.kind == "float64":
        data = -x if expr.op == "neg" else ev.xp.abs(x)
    else:
        data = W.negate(ev.xp, x, expr.dtype, c.validity, expr.op)
    return Column(expr.dtype, data=data, validity=c.validity)


def _in_list(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    probe = expr.args[0]
    lits = [a for a in expr.args[1:]]
    if not all(isinstance(x, Literal) for x in lits):
        # general form: OR of equalities keeps the three-valued semantics
        eqs = tuple(Call(T.BOOL, "eq", (probe, x)) for x in lits)
        return _or(ev, Call(T.BOOL, "or", eqs), batch) if len(eqs) > 1 else _compare(ev, eqs[0], batch)
    values = [x.value for x in lits if x.value is not None]
    has_null = len(values) < len(lits)
    one_pass = getattr(ev.backend, "string_in", None)
    prefix = _prefix_chars(probe) if one_pass is not None else None
    # SUBSTRING(s, 1, k) IN (...): s's first k code points are compared, no substrings made
    col = ev.evaluate(probe if prefix is None else probe.args[0], batch)
    if probe.dtype.kind == "string":
        strs = tuple(sorted({str(v) for v in values}))

        def member(o, c):
            if one_pass is not None:
                return one_pass(o, c, strs, prefix)
            m = xp.zeros(int(o.shape[0]) - 1, dtype=bool)
            for s in strs:
                m = xp.logical_or(m, ev.backend.compare_string_scalar(o, c, s, "="))
            return m

        res = ev.string_mask(col, ("in", strs, prefix), member)
        match = res.data
    else:
        match = xp.zeros(batch.num_rows, dtype=bool)
        for lit in lits:
            if lit.value is None:
                continue
            t = common_type(col.dtype, lit.dtype)
            x = ev.numeric(col, t)
            y = _convert(xp, _literal_array(xp, lit), lit.dtype, t)
            eq = _FLOAT_CMP["eq"](xp, x, y[0]) if t.kind == "float64" else x == y[0]
            match = xp.logical_or(match, eq)
    validity = col.validity
    if has_null:
        validity = and_valid(xp, validity, match)
    return Column(T.BOOL, data=match, validity=validity)


def _prefix_chars(e: Expr) -> int | None:
    """k when ``e`` is ``SUBSTRING(string, 1, k)`` with a constant k >= 0 (its first k code points)."""
    if not (isinstance(e, Call) and e.op == "substring" and len(e.args) == 3
            and e.args[0].dtype.kind == "string"):
        return None
    start, length = e.args[1], e.args[2]
    if not (isinstance(start, Literal) and isinstance(length, Literal)) or start.value != 1 \
            or length.value is None or isinstance(length.value, bool) or not isinstance(length.value, int):
        return None
    return length.value if length.value >= 0 else None


def _literal_array(xp, lit: Literal) -> Any:
    if lit.dtype.is_wide and not W.I64_MIN <= lit.value <= W.I64_MAX:
        return W.object_full(xp, lit.value, 1)
    return xp.asarray([lit.value], dtype=lit.dtype.numpy_dtype)


def _coalesce(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    try:
        return _coalesce_eager(ev, expr, batch)
    except OutOfMemoryError:
        raise
    except HetdbError:
        # an argument raised (``COALESCE(big, big * 3)`` overflows where big is not NULL): DuckDB
        # evaluates each argument only for the rows still NULL, so do it row-subset by row-subset
        whens = tuple((Call(T.BOOL, "is_not_null", (a,)), a) for a in expr.args[:-1])
        return ev._case_lazy(Case(expr.dtype, whens, expr.args[-1]), batch)


def _coalesce_eager(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    result = ev.cast(ev.evaluate(expr.args[0], batch), expr.dtype)
    for arg in expr.args[1:]:
        if result.validity is None:
            break
        with ev.only_rows(ev.xp.logical_not(result.validity)):
            nxt = ev.cast(ev.evaluate(arg, batch), expr.dtype)
        result = ev.select(result.validity, result, nxt, expr.dtype)
    return result


def _nullif(ev: ExprEvaluator, expr: Call, batch: Batch) -> Column:
    a = ev.cast(ev.evaluate(expr.args[0], batch), expr.dtype)
    same = ev.predicate(Call(T.BOOL, "eq", expr.args), batch)
    validity = and_valid(ev.xp, a.validity, ev.xp.logical_not(same))
    return Column(a.dtype, data=a.data, validity=validity, dictionary=a.dictionary, offsets=a.offsets,
                  chars=a.chars)


_CALLS = {
    **{op: _compare for op in _CMP},
    "and": _guarded(_and), "or": _guarded(_or), "not": _not, "is_null": _is_null, "is_not_null": _is_null,
    **{op: _arith for op in ("add", "sub", "mul", "div", "intdiv", "mod", "power")},
    "neg": _neg_abs, "abs": _neg_abs, "in_list": _in_list, "coalesce": _coalesce, "nullif": _nullif,
}


@functools.cache
def _more_functions() -> dict:
    """The string/regex/date functions of exec/functions_text.py, functions_datetime.py and
    functions_more.py."""
    from hetdb.exec.functions_datetime import FUNCTIONS as DATETIME
    from hetdb.exec.functions_more import FUNCTIONS as MORE
    from hetdb.exec.functions_strings import FUNCTIONS as STRINGS
    from hetdb.exec.functions_text import FUNCTIONS as TEXT
    from hetdb.exec.functions_time import FUNCTIONS as TIMES
    from hetdb.exec.lists import FUNCTIONS as LISTS

    return {**TEXT, **DATETIME, **MORE, **STRINGS, **LISTS, **TIMES}
