"""Dictionary lookups of compiled GPU kernels evaluated on the host, for small dictionaries.

A compiled kernel reads a string predicate (``c_city = 'UNITED KI1'``, ``p_category = 'MFGR#12'``)
as a lookup table over the column's dictionary (exec/compiled_rows.dictionary_lookups). Evaluated on
the device, that is several string kernels, a cast, assignments and waits for a dictionary of a few
hundred strings: ~1 ms a lookup on the H100 (SSB SF 2 warm, q3.4's three dimension filters: 2.9 ms
of 13.7), paid on every fresh connection (the kept tables, exec/lookup_tables.py, are per
connection). A dictionary of at most HOST_LOOKUP_VALUES strings is copied to the host instead, the
expression evaluated there by the CPU backend (the same expression IR; both backends answer as
DuckDB does), and the table copied back in one copy. Anything the host evaluation refuses falls back
to the device. The host tables are kept with the table version's host dictionary (``_remembered``),
so a fresh connection (a warm query) does not evaluate them again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError

HOST_LOOKUP_VALUES = 1 << 16
# lookups kept per host dictionary at most (a table of up to 9 bytes a string each)
LOOKUP_MEMO_ENTRIES = 64

_evaluator: Any = None


def _host_evaluator() -> Any:
    global _evaluator
    if _evaluator is None:
        from hetdb.exec.engine import _tail_backend
        from hetdb.exec.expressions import ExprEvaluator

        _evaluator = ExprEvaluator(_tail_backend())
    return _evaluator


def _host(a: Any) -> Any:
    return None if a is None else (a.get() if hasattr(a, "get") else a)


def host_dictionary(d: Column) -> Column | None:
    """``d`` (a device dictionary: offsets + chars) as a host Column: the host strings a scan moved
    it from (``host_source``, set by the streamer), else copied back; None when it is not one."""
    if d.offsets is None or d.chars is None or d.dictionary is not None:
        return None
    source = getattr(d, "host_source", None)
    if source is not None and len(source) == len(d):
        return source
    return Column(d.dtype, offsets=_host(d.offsets), chars=_host(d.chars), validity=_host(d.validity))


def lookup_on_host(expr: Any, cid: str, dictionary: Column) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, valid) of ``expr`` over every string of the host ``dictionary`` (arrays of at least
    one element, as the kernel reads them), or None when the host cannot evaluate it."""
    n = len(dictionary)
    if expr.dtype.kind == "string" or not 0 < n <= HOST_LOOKUP_VALUES:
        return None
    ev = _host_evaluator()
    codes = Column(T.STRING, data=np.arange(n, dtype=np.int32), dictionary=dictionary)
    try:
        res = ev.cast(ev.evaluate(expr, Batch({cid: codes}, n)), expr.dtype)
    except (HetdbError, NotImplementedError, TypeError, ValueError):
        return None
    values = np.zeros(max(n, 1), dtype=expr.dtype.numpy_dtype)
    valid = np.zeros(max(n, 1), dtype=bool)
    values[:n] = res.data
    valid[:n] = True if res.validity is None else res.validity
    return values, valid


def device_lookup(expr: Any, cid: str, d: Column) -> tuple[Any, Any] | None:
    """``lookup_on_host`` for the device dictionary ``d``, the table copied to the device (one copy);
    None when the dictionary is too large or the host cannot evaluate the expression."""
    if not 0 < len(d) <= HOST_LOOKUP_VALUES:
        return None
    hd = host_dictionary(d)
    if hd is None:
        return None
    got = _remembered(expr, cid, hd) if hd is getattr(d, "host_source", None) else lookup_on_host(expr, cid, hd)
    if got is None:
        return None
    from hetdb.backend.gpu.codegen.runtime import arrays_to_device

    values, valid = arrays_to_device(list(got))
    return values, valid


def _remembered(expr: Any, cid: str, hd: Column) -> tuple[np.ndarray, np.ndarray] | None:
    """``lookup_on_host`` over a scan's host dictionary (``host_source``: the table version's own,
    which every connection's scans share), kept with it: a fresh connection's kernels look up the
    same string constants in the same dictionaries (a warm query's dimension filters) without
    evaluating them again. Host arrays only; each connection puts its own copy on the device."""
    memo = hd.__dict__.setdefault("_host_lookups", {})
    try:
        key = (expr, cid)
        if key in memo:
            return memo[key]
    except TypeError:  # (an expression holding an unhashable literal: not kept)
        return lookup_on_host(expr, cid, hd)
    got = lookup_on_host(expr, cid, hd)
    while len(memo) >= LOOKUP_MEMO_ENTRIES:  # (the oldest go: queries with ever new constants)
        memo.pop(next(iter(memo)), None)
    memo[key] = got
    return got
