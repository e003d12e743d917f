"""Expression evaluator over Batches: SQL three-valued logic, NULL propagation, DuckDB's numeric
semantics on physical representations (decimals as scaled int64, dates as int32 days).

``ExprEvaluator(backend).evaluate(expr, batch) -> Column``; ``predicate(expr, batch) -> bool mask``
(True where the expression is TRUE; NULL counts as not true). Elementwise work uses ``backend.xp``;
string work uses backend string kernels. Predicates on dictionary strings run once per dictionary
(cached per dictionary object) and are gathered by codes. Comparisons and logic live in
``expr_logic``, arithmetic in ``expr_arith``, numeric conversion in ``conversions``, functions on
strings and dates in ``expr_functions`` and the ``functions_*`` modules.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.errors import HetdbError, OutOfMemoryError, UnsupportedError
from hetdb.exec import expr_arith, expr_logic
from hetdb.exec.columns import concat_columns, full_column, take, take_batch, to_plain
from hetdb.exec.conversions import convert
from hetdb.plan.expr import Call, Case, Cast, ColumnRef, Expr, Literal
from hetdb.types import DataType


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
        return convert(self.xp, col.data, col.dtype, dtype, col.validity)

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


_CALLS = {**expr_logic.CALLS, **expr_arith.CALLS}


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
