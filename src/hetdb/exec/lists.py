"""LIST values on the host: the functions of sql/list_funcs.py and the rows of ``unnest``.

A LIST column (hetdb.types) is an object array holding one Python list per row (the elements'
Python values as Arrow gives them: ``None`` for a NULL element) and a validity mask for NULL lists.
Elements go back to ordinary columns through Arrow (``elements_column``), so element casts and
results take the engine's own paths. Every function here runs row by row in Python on the host (a
GPU connection runs queries with LIST values on the CPU: exec/engine.py).
"""

from __future__ import annotations

import contextlib
import gc
import math
import re
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.exec.hostutil import column_to_host
from hetdb.exec.list_keys import list_sort_key
from hetdb.plan.expr import Call, Literal
from hetdb.types import DataType


# ---- conversions ------------------------------------------------------------------------------------
def rows_of(backend, col: Column) -> list:
    """Python value per row (None for NULL); a LIST column's rows are Python lists."""
    col = column_to_host(backend, col)
    if col.dtype.kind != "list":
        return col.to_arrow().to_pylist()
    values = col.data.tolist()
    if col.validity is None:
        return values
    return [v if ok else None for v, ok in zip(values, np.asarray(col.validity).tolist())]


def list_column(dtype: DataType, rows: list) -> Column:
    """A LIST column from one Python list (or None) per row."""
    data = np.empty(len(rows), dtype=object)
    for i, v in enumerate(rows):
        data[i] = v
    valid = np.fromiter((v is not None for v in rows), dtype=bool, count=len(rows))
    return Column(dtype, data=data, validity=None if valid.all() else valid)


def elements_column(dtype: DataType, values: list) -> Column:
    """A host column of ``dtype`` from Python values (None = NULL)."""
    if dtype.kind == "list":
        return list_column(dtype, values)
    return Column.from_arrow(pa.array(values, type=dtype.to_arrow()), dtype)


def _result(ev, dtype: DataType, values: list) -> Column:
    from hetdb.exec.hostutil import column_to_device

    col = elements_column(dtype, values)
    return col if dtype.kind == "list" else column_to_device(ev.backend, col)


def _args(ev, expr: Call, batch: Batch) -> list[list]:
    from hetdb.exec.hostutil import note_host_step

    note_host_step(ev.backend, f"{expr.op} (host)")
    return [rows_of(ev.backend, ev.evaluate(a, batch)) for a in expr.args]


# ---- element order ----------------------------------------------------------------------------------
def _sort_key(v: Any) -> Any:
    """DuckDB's order of element values: NaN above every other double; lists element by element."""
    if isinstance(v, float):
        return (1, 0.0) if math.isnan(v) else (0, v)
    if isinstance(v, list):
        return [(1,) if x is None else (0, _sort_key(x)) for x in v]
    return v


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


# ---- functions --------------------------------------------------------------------------------------
def _list_value(ev, expr: Call, batch: Batch) -> Column:
    cols = _args(ev, expr, batch)
    rows = [list(r) for r in zip(*cols)] if cols else [[] for _ in range(batch.num_rows)]
    return list_column(expr.dtype, rows)


def _quantile_list(ev, expr: Call, batch: Batch) -> Column:
    """list_value of the quantiles, NULL where the first is NULL (no value to take quantiles of)."""
    cols = _args(ev, expr, batch)
    rows = [None if r[0] is None else list(r) for r in zip(*cols)]
    return list_column(expr.dtype, rows)


def _split(s: str | None, sep: str | None) -> list | None:
    if s is None:
        return None
    if sep is None:
        return [s]
    return list(s) if sep == "" else s.split(sep)


def _string_split(ev, expr: Call, batch: Batch) -> Column:
    from hetdb.exec.hostutil import note_host_step

    text = ev.evaluate(expr.args[0], batch)
    if text.dictionary is not None and isinstance(expr.args[1], Literal):
        # once per dictionary value; rows share their value's list (no function changes a list in place)
        note_host_step(ev.backend, "string_split (host)")
        sep = expr.args[1].value
        per_value = [_split(s, sep) for s in rows_of(ev.backend, text.dictionary)]
        codes = np.asarray(ev.backend.to_host(text.data)).tolist()
        valid = None if text.validity is None else np.asarray(ev.backend.to_host(text.validity)).tolist()
        out = [per_value[c] for c in codes] if valid is None else \
            [per_value[c] if ok else None for c, ok in zip(codes, valid)]
        return list_column(expr.dtype, out)
    strings, seps = _args(ev, expr, batch)
    return list_column(expr.dtype, [_split(s, sep) for s, sep in zip(strings, seps)])


def _per_list(fn, ev, expr: Call, batch: Batch) -> Column:
    """``fn(list, *other args)`` per row; NULL where the list is NULL."""
    cols = _args(ev, expr, batch)
    out = [None if r[0] is None else fn(*r) for r in zip(*cols)]
    return _result(ev, expr.dtype, out)


def _extract(lst: list, i: int | None) -> Any:
    if i is None or i == 0 or abs(i) > len(lst):
        return None
    return lst[i - 1] if i > 0 else lst[i]


def _slice(lst: list, lo: int | None, hi: int | None) -> list | None:
    """DuckDB's 1-based inclusive slice: a negative bound counts from the end, bounds clamp."""
    if lo is None or hi is None:
        return None
    n = len(lst)
    lo = max(n + lo + 1 if lo < 0 else lo, 1)
    hi = min(n + hi + 1 if hi < 0 else hi, n)
    return lst[lo - 1:hi] if hi >= lo else []


def _contains(lst: list, x: Any) -> bool | None:
    if x is None:
        return None
    return any(v is not None and _same(v, x) for v in lst)


def _position(lst: list, x: Any) -> int | None:
    for i, v in enumerate(lst, 1):
        if (v is None and x is None) or (v is not None and x is not None and _same(v, x)):
            return i
    return None


def _sort(lst: list, desc: bool, nulls_first: bool) -> list:
    present = sorted((v for v in lst if v is not None), key=_sort_key, reverse=desc)
    nulls = [None] * (len(lst) - len(present))
    return nulls + present if nulls_first else present + nulls


def _distinct(lst: list) -> list:
    out: list = []
    for v in lst:
        if v is not None and not any(_same(v, o) for o in out):
            out.append(v)
    return out


def _sum(lst: list) -> Any:
    present = [v for v in lst if v is not None]
    if not present:
        return None
    if isinstance(present[0], float):
        return math.fsum(present) if all(math.isfinite(v) for v in present) else sum(present)
    return sum(present, Decimal(0) if isinstance(present[0], Decimal) else 0)


def _avg(lst: list) -> float | None:
    present = [float(v) for v in lst if v is not None]
    return math.fsum(present) / len(present) if present else None


def _extreme(pick):
    def run(lst: list) -> Any:
        present = [v for v in lst if v is not None]
        return pick(present, key=_sort_key) if present else None
    return run


def _as_text(ev, elem: DataType, lists: list) -> list:
    """Each list's elements as DuckDB's VARCHAR text (None for NULL elements), nested lists too."""
    flat = [v for lst in lists if lst is not None for v in lst]
    if elem.kind == "list":
        texts = [None if v is None else t for v, t in zip(flat, _list_texts(ev, elem, flat))]
    else:
        texts = rows_of(ev.backend, ev.cast(elements_column(elem, flat), T.STRING))
    out, k = [], 0
    for lst in lists:
        if lst is None:
            out.append(None)
            continue
        out.append(texts[k:k + len(lst)])
        k += len(lst)
    return out


_SPECIAL = frozenset(",'\"[]{}():=\\")


def _quoted(s: str) -> str:
    """A VARCHAR element as DuckDB writes it inside a list's text: quoted (``'`` and ``\\``
    escaped) when empty, padded with spaces, spelled NULL or holding a delimiter character."""
    if s and not s[0].isspace() and not s[-1].isspace() and s.upper() != "NULL" and not _SPECIAL & set(s):
        return s
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _list_texts(ev, dtype: DataType, lists: list) -> list:
    texts = _as_text(ev, dtype.elem, lists)
    if dtype.elem.kind == "string":
        texts = [None if t is None else [None if x is None else _quoted(x) for x in t] for t in texts]
    return [None if t is None else "[" + ", ".join("NULL" if x is None else x for x in t) + "]" for t in texts]


def _list_to_text(ev, expr: Call, batch: Batch) -> Column:
    (lists,) = _args(ev, expr, batch)
    return _result(ev, T.STRING, _list_texts(ev, expr.args[0].dtype, lists))


def _array_to_string(ev, expr: Call, batch: Batch) -> Column:
    lists, seps = _args(ev, expr, batch)
    texts = _as_text(ev, expr.args[0].dtype.elem, lists)
    # as DuckDB: a NULL separator joins with ','; only NULL elements give NULL, no elements ''
    out = [None if t is None or (t and all(x is None for x in t))
           else ("," if sep is None else sep).join(x for x in t if x is not None)
           for t, sep in zip(texts, seps)]
    return _result(ev, T.STRING, out)


def _list_cast(ev, expr: Call, batch: Batch) -> Column:
    """Each element cast to the target element type (nested lists level by level)."""
    (lists,) = _args(ev, expr, batch)
    return list_column(expr.dtype, _cast_lists(ev, expr.args[0].dtype.elem, expr.dtype.elem, lists))


def _cast_lists(ev, src: DataType, dst: DataType, lists: list) -> list:
    flat = [v for lst in lists if lst is not None for v in lst]
    if dst.kind == "list":
        cast = _cast_lists(ev, src.elem, dst.elem, flat)
    else:
        cast = rows_of(ev.backend, ev.cast(elements_column(src, flat), dst))
    out, k = [], 0
    for lst in lists:
        if lst is None:
            out.append(None)
            continue
        out.append(cast[k:k + len(lst)])
        k += len(lst)
    return out


def _lambda_values(ev, lists: list, lam, batch: Batch) -> list:
    """The lambda's body over every element of ``lists`` (one per row of ``batch``), in order: one
    evaluation over a batch of all elements, each next to its row's columns."""
    from hetdb.exec.columns import take_batch
    from hetdb.exec.hostutil import column_to_device

    counts = np.fromiter((0 if v is None else len(v) for v in lists), dtype=np.int64, count=len(lists))
    rows = np.repeat(np.arange(len(lists), dtype=np.int64), counts)
    outer = lam.body.columns()
    sub = Batch({c: col for c, col in batch.columns.items() if c in outer}, batch.num_rows)
    elems = take_batch(ev.backend, sub, ev.xp.asarray(rows))
    flat = [x for v in lists if v is not None for x in v]
    cols = dict(elems.columns)
    x = lam.params[0]
    col = elements_column(x.dtype, flat)
    cols[x.cid] = col if x.dtype.kind == "list" else column_to_device(ev.backend, col)
    if len(lam.params) > 1:
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        pos = np.arange(int(counts.sum()), dtype=np.int64) - starts + 1
        cols[lam.params[1].cid] = column_to_device(ev.backend, Column(T.INT64, data=pos))
    return rows_of(ev.backend, ev.evaluate(lam.body, Batch(cols, len(flat))))


def _regroup(lists: list, values: list) -> list:
    out, k = [], 0
    for v in lists:
        if v is None:
            out.append(None)
            continue
        out.append(values[k:k + len(v)])
        k += len(v)
    return out


def _transform(ev, expr: Call, batch: Batch) -> Column:
    lists = rows_of(ev.backend, ev.evaluate(expr.args[0], batch))
    return list_column(expr.dtype, _regroup(lists, _lambda_values(ev, lists, expr.args[1], batch)))


def _filter(ev, expr: Call, batch: Batch) -> Column:
    lists = rows_of(ev.backend, ev.evaluate(expr.args[0], batch))
    keep = _regroup(lists, _lambda_values(ev, lists, expr.args[1], batch))
    return list_column(expr.dtype, [None if v is None else [x for x, k in zip(v, ks) if k]
                                    for v, ks in zip(lists, keep)])


def _reduce(ev, expr: Call, batch: Batch) -> Column:
    """list_reduce: one evaluation of the lambda per element position, over the rows whose lists
    reach it, next to their rows' columns."""
    from hetdb.errors import InputError
    from hetdb.exec.columns import take_batch
    from hetdb.exec.hostutil import column_to_device

    lists = rows_of(ev.backend, ev.evaluate(expr.args[0], batch))
    lam = expr.args[1]
    if len(expr.args) > 2:
        acc = rows_of(ev.backend, ev.evaluate(expr.args[2], batch))
        first = 0
    else:
        if any(v is not None and not v for v in lists):
            raise InputError("Cannot perform list_reduce on an empty input list")
        acc = [None if v is None else v[0] for v in lists]
        first = 1
    outer = lam.body.columns()
    sub = Batch({c: col for c, col in batch.columns.items() if c in outer}, batch.num_rows)
    longest = max((len(v) for v in lists if v is not None), default=0)
    for k in range(first, longest):
        rows = [r for r, v in enumerate(lists) if v is not None and len(v) > k]
        cols = dict(take_batch(ev.backend, sub, ev.xp.asarray(np.asarray(rows, dtype=np.int64))).columns)
        values = ([acc[r] for r in rows], [lists[r][k] for r in rows], [k + 1] * len(rows))
        for p, vals in zip(lam.params, values):
            col = elements_column(p.dtype, vals)
            cols[p.cid] = col if p.dtype.kind == "list" else column_to_device(ev.backend, col)
        out = rows_of(ev.backend, ev.evaluate(lam.body, Batch(cols, len(rows))))
        for r, v in zip(rows, out):
            acc[r] = v
    return _result(ev, expr.dtype, [None if v is None else a for v, a in zip(lists, acc)])


def _concat(ev, expr: Call, batch: Batch) -> Column:
    cols = _args(ev, expr, batch)
    return list_column(expr.dtype, [[x for v in r if v is not None for x in v] for r in zip(*cols)])


def _flatten(ev, expr: Call, batch: Batch) -> Column:
    (lists,) = _args(ev, expr, batch)
    return list_column(expr.dtype, [None if v is None else [x for inner in v if inner is not None for x in inner]
                                    for v in lists])


def _range(lo: int, hi: int, step: int, exclusive: bool) -> list:
    if step == 0:
        return []
    end = hi if exclusive else hi + (1 if step > 0 else -1)
    return list(range(lo, end, step))


def _regexp_split(s: str, pattern: str | None) -> list:
    if pattern is None:
        return [s]
    return list(s) if pattern == "" and s else re.split(pattern, s)


def _extract_all(s: str, pattern: str | None, group: int) -> list | None:
    if pattern is None:
        return None
    return [m.group(group) or "" for m in re.finditer(pattern, s)]


def _has_any(a: list, b: list | None) -> bool | None:
    if b is None:
        return None
    return any(x is not None and _contains(a, x) for x in b)


def _has_all(a: list, b: list | None) -> bool | None:
    if b is None:
        return None
    return all(x is None or _contains(a, x) for x in b)


def _strict(fn):
    """``fn`` of the row's values; NULL where any argument is NULL."""
    def run(ev, expr: Call, batch: Batch) -> Column:
        cols = _args(ev, expr, batch)
        return _result(ev, expr.dtype, [None if any(v is None for v in r) else fn(*r) for r in zip(*cols)])
    return run


def _unary(fn):
    return lambda ev, expr, batch: _per_list(fn, ev, expr, batch)


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector paused: building millions of small lists otherwise runs it
    over every live object again and again (quadratic; 7 s of a 15 s unnest of 1M rows here)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _paused(fn):
    def run(ev, expr: Call, batch: Batch) -> Column:
        with _gc_paused():
            return fn(ev, expr, batch)
    return run


FUNCTIONS = {
    "list_value": _list_value, "quantile_list": _quantile_list,
    "string_split": _string_split,
    "list_len": _unary(len),
    "list_extract": _unary(_extract),
    "list_contains": _unary(_contains),
    "list_slice": _unary(_slice),
    "list_position": _unary(_position),
    "list_sort": _unary(_sort),
    "list_distinct": _unary(_distinct),
    "list_reverse": _unary(lambda lst: lst[::-1]),
    "list_sum": _unary(_sum),
    "list_avg": _unary(_avg),
    "list_min": _unary(_extreme(min)),
    "list_max": _unary(_extreme(max)),
    "list_count": _unary(lambda lst: sum(v is not None for v in lst)),
    "list_to_text": _list_to_text,
    "list_cast": _list_cast,
    "list_transform": _transform,
    "list_filter": _filter,
    "list_concat": _concat,
    "list_reduce": _reduce,
    "list_flatten": _flatten,
    "list_range": _strict(_range),
    "regexp_split": _unary(_regexp_split),
    "regexp_extract_all": _unary(_extract_all),
    "list_unique": _unary(lambda lst: len(_distinct(lst))),
    "list_has_any": _unary(_has_any),
    "list_has_all": _unary(_has_all),
    "array_to_string": _array_to_string,
}
FUNCTIONS["list_sort_key"] = list_sort_key
FUNCTIONS = {op: _paused(fn) for op, fn in FUNCTIONS.items()}


# ---- unnest -----------------------------------------------------------------------------------------
def unnest_batch(ev, batch: Batch, lists: list[tuple[Any, Any]]) -> Batch:
    """``batch``'s rows repeated once per element of the longest of the lists (no row where every
    list is NULL or empty), with each list's elements in new columns (NULL past a shorter list's
    end), as DuckDB's unnest in the select list. ``lists``: (Field, LIST expression)."""
    with _gc_paused():
        return _unnest(ev, batch, lists)


def _unnest(ev, batch: Batch, lists: list[tuple[Any, Any]]) -> Batch:
    from hetdb.exec.columns import take_batch
    from hetdb.exec.hostutil import column_to_device

    values = [rows_of(ev.backend, ev.evaluate(e, batch)) for _, e in lists]
    counts = np.zeros(batch.num_rows, dtype=np.int64)
    for vals in values:
        counts = np.maximum(counts, np.fromiter((0 if v is None else len(v) for v in vals), dtype=np.int64,
                                                count=batch.num_rows))
    src = np.repeat(np.arange(batch.num_rows, dtype=np.int64), counts)
    n = int(src.shape[0])
    out = take_batch(ev.backend, batch, ev.xp.asarray(src))
    cols = dict(out.columns)
    for (f, _), vals in zip(lists, values):
        flat: list = []
        for v, c in zip(vals, counts.tolist()):
            got = [] if v is None else v
            flat.extend(got)
            flat.extend([None] * (c - len(got)))
        col = elements_column(f.dtype, flat)
        cols[f.cid] = col if f.dtype.kind == "list" else column_to_device(ev.backend, col)
    return Batch(cols, n)
