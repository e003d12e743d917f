"""String, regular-expression, formatting and miscellaneous scalar functions with DuckDB's semantics.
They run on the host through pyarrow.compute or Python (regular expressions through Python's ``re``;
DuckDB uses RE2, so RE2-only syntax can differ), shown as a host step in EXPLAIN ANALYZE on the GPU. Ops (args positional, see sql/functions_ext.py):

  ltrim rtrim trim_chars(s, chars) ltrim_chars rtrim_chars replace split_part regexp_matches
  regexp_replace(s, p, r, global) regexp_extract(s, p, group) lpad rpad left right reverse repeat
  strpos md5 format printf concat_ws log(base, x) log10 log2 random try_cast
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError
from hetdb.exec.functions_host import arrow_args, from_arrow, python_function
from hetdb.exec.hostutil import column_to_device, column_to_host
from hetdb.plan.expr import Call


def _arrow(fn, what: str):
    def run(ev, expr: Call, batch: Batch) -> Column:
        return from_arrow(ev, fn(*arrow_args(ev, expr, batch, what), expr), expr)
    return run


def _trim(kind: str):
    f = {"both": pc.utf8_trim, "left": pc.utf8_ltrim, "right": pc.utf8_rtrim}[kind]

    def call(s, *rest):
        expr = rest[-1]
        chars = " " if len(rest) == 1 else expr.args[1].value
        if chars is None:
            return pa.nulls(len(s), pa.string())
        return f(s, characters=chars)
    return _arrow(call, f"{kind} trim")


def _split_part(s: str, sep: str, i: int) -> str:
    parts = s.split(sep) if sep else list(s)
    if i == 0:
        return ""
    k = i - 1 if i > 0 else len(parts) + i
    return parts[k] if 0 <= k < len(parts) else ""


def _regex(p: str) -> re.Pattern:
    try:
        return re.compile(p)
    except re.error as e:
        raise HetdbError(f"invalid regular expression {p!r}: {e}") from None


def _regexp_replace(s: str, p: str, r: str, every: bool) -> str:
    repl = re.sub(r"\\(\d)", r"\\g<\1>", r)
    pattern = _regex(p)
    try:
        return pattern.sub(repl, s, count=0 if every else 1)
    except re.error as e:  # e.g. \2 with fewer groups: DuckDB refuses the rewrite string too
        raise HetdbError(f"Invalid replacement string for regexp_replace: {r!r} with {p!r} "
                         f"({pattern.groups} parenthesized subexpressions): {e}") from None


def _regexp_extract(s: str, p: str, group: int) -> str:
    m = _regex(p).search(s)
    if m is None or group > (m.re.groups or 0):
        return ""  # (a group the pattern lacks extracts '' in DuckDB; the binder refuses one past 9)
    return m.group(group) or ""


def _pad(left: bool):
    def fn(s: str, n: int, fill: str) -> str:
        if n <= len(s):
            return s[:max(n, 0)]
        if not fill:
            return s
        need = n - len(s)
        pad = (fill * (need // len(fill) + 1))[:need]
        return pad + s if left else s + pad
    return fn


def _left(s: str, n: int) -> str:
    return s[:n] if n >= 0 else s[:max(len(s) + n, 0)]


def _right(s: str, n: int) -> str:
    if n >= 0:
        return s[len(s) - n:] if n < len(s) else s
    return s[min(-n, len(s)):]


def _format(fmt: str, *args) -> str:
    try:
        return fmt.format(*args)
    except (IndexError, ValueError, KeyError) as e:
        raise HetdbError(f"format({fmt!r}): {e}") from None


def _printf(fmt: str, *args) -> str:
    try:
        return fmt % tuple(args)
    except (TypeError, ValueError) as e:
        raise HetdbError(f"printf({fmt!r}): {e}") from None


def _concat_ws(ev, expr: Call, batch: Batch) -> Column:
    arrays = arrow_args(ev, expr, batch, "concat_ws")
    sep, parts = arrays[0], [a.cast(pa.string()) for a in arrays[1:]]
    # pyarrow 26 drops (not empties) a row whose parts are all NULL under "skip"; DuckDB gives '':
    # a leading '' on exactly those rows keeps them
    all_null = pc.is_null(parts[0])
    for a in parts[1:]:
        all_null = pc.and_(all_null, pc.is_null(a))
    empty = pc.if_else(all_null, pa.scalar("", pa.string()), pa.scalar(None, pa.string()))
    out = pc.binary_join_element_wise(empty, *parts, sep.cast(pa.string()), null_handling="skip")
    return from_arrow(ev, pc.if_else(pc.is_null(sep), pa.scalar(None, pa.string()), out), expr)


def _log(ev, expr: Call, batch: Batch) -> Column:
    xp = ev.xp
    cols = [ev.evaluate(a, batch) for a in expr.args]
    base, x = (cols[0], cols[1]) if len(cols) == 2 else (None, cols[0])
    xv = x.data.astype(xp.float64)
    validity = x.validity
    with np.errstate(divide="ignore", invalid="ignore"):  # log of 0 / negatives: -inf / NaN, as DuckDB
        if expr.op == "log2":
            data = xp.log2(xv)
        elif base is None:
            data = xp.log10(xv)
        else:
            data = xp.log(xv) / xp.log(base.data.astype(xp.float64))
            if base.validity is not None:
                validity = base.validity if validity is None else xp.logical_and(validity, base.validity)
    return Column(T.FLOAT64, data=data, validity=validity)


def _random(ev, expr: Call, batch: Batch) -> Column:
    data = np.random.default_rng().random(batch.num_rows)
    return Column(T.FLOAT64, data=ev.backend.asarray(data))


def _try_cast(ev, expr: Call, batch: Batch) -> Column:
    """CAST that yields NULL for the values it cannot convert (DuckDB's TRY_CAST): the whole column
    at once, else value by value over its distinct values."""
    col = ev.evaluate(expr.args[0], batch)
    try:
        return ev.cast(col, expr.dtype)
    except HetdbError:
        pass
    src = expr.args[0].dtype
    arr = column_to_host(ev.backend, col).to_arrow()
    enc = pc.dictionary_encode(arr)
    out = []
    for v in enc.dictionary.to_pylist():
        one = column_to_device(ev.backend, Column.from_arrow(pa.array([v], type=arr.type), src))
        try:
            out.append(column_to_host(ev.backend, ev.cast(one, expr.dtype)).to_arrow()[0].as_py())
        except HetdbError:
            out.append(None)
    return from_arrow(ev, pc.take(pa.array(out, type=expr.dtype.to_arrow()), enc.indices), expr)


def _string_slice(s: str, a: int, b: int) -> str:
    """DuckDB's s[a:b]: 1-based and inclusive, negative positions count from the end, 0 as 1 for a
    start and as an empty end."""
    n = len(s)
    a = n + a + 1 if a < 0 else a
    b = n + b + 1 if b < 0 else b
    a, b = max(a, 1), min(b, n)
    return s[a - 1:b] if b >= a else ""


def _string_index(s: str, i: int) -> str:
    """DuckDB's s[i]: the i-th character (negative from the end), '' outside the string or for 0."""
    k = i - 1 if i > 0 else len(s) + i if i < 0 else -1
    return s[k] if 0 <= k < len(s) else ""


FUNCTIONS = {
    "string_slice": python_function(_string_slice, pa.string()),
    "string_index": python_function(_string_index, pa.string()),
    "ltrim": _trim("left"), "rtrim": _trim("right"), "trim_chars": _trim("both"),
    "ltrim_chars": _trim("left"), "rtrim_chars": _trim("right"),
    "replace": python_function(lambda s, a, b: s.replace(a, b) if a else s, pa.string()),  # DuckDB: "" matches nothing
    "split_part": python_function(_split_part, pa.string()),
    "regexp_matches": python_function(lambda s, p: _regex(p).search(s) is not None, pa.bool_()),
    "regexp_replace": python_function(_regexp_replace, pa.string()),
    "regexp_extract": python_function(_regexp_extract, pa.string()),
    "lpad": python_function(_pad(True), pa.string()), "rpad": python_function(_pad(False), pa.string()),
    "left": python_function(_left, pa.string()), "right": python_function(_right, pa.string()),
    "reverse": _arrow(lambda s, expr: pc.utf8_reverse(s), "reverse"),
    "repeat": python_function(lambda s, n: s * max(n, 0), pa.string()),
    "strpos": python_function(lambda s, sub: s.find(sub) + 1, pa.int64()),
    "md5": python_function(lambda s: hashlib.md5(s.encode()).hexdigest(), pa.string()),
    "format": python_function(_format, pa.string()), "printf": python_function(_printf, pa.string()),
    "concat_ws": _concat_ws,
    "log": _log, "log10": _log, "log2": _log, "random": _random, "try_cast": _try_cast,
}

__all__ = ["FUNCTIONS"]
