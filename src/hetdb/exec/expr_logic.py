"""Comparisons and SQL's three-valued logic over Batches: =, <>, <, <=, >, >= (strings by
dictionary or factorized codes, doubles in DuckDB's total order where NaN equals NaN and sorts above
every number), AND / OR / NOT, IS [NOT] NULL, IN lists, COALESCE and NULLIF. Each function takes
(evaluator, call, batch) and returns a Column (``CALLS``: op -> function)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError, OutOfMemoryError
from hetdb.exec import wide as W
from hetdb.exec.columns import and_valid, concat_columns, full_column, take_batch, to_plain
from hetdb.exec.conversions import common_type, convert
from hetdb.plan.expr import Call, Case, Expr, Literal
from hetdb.types import DataType

if TYPE_CHECKING:
    from hetdb.exec.expressions import ExprEvaluator

_FLIP = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
_SQL_OP = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


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
            y = convert(xp, _literal_array(xp, lit), lit.dtype, t)
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


CALLS = {
    **{op: _compare for op in _CMP},
    "and": _guarded(_and), "or": _guarded(_or), "not": _not, "is_null": _is_null, "is_not_null": _is_null,
    "in_list": _in_list, "coalesce": _coalesce, "nullif": _nullif,
}
