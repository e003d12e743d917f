"""Expression IR -> Python statements for a Numba pipeline function, with SQL three-valued logic.

Every subexpression becomes two locals: its value and whether it is valid (not NULL). Values are
computed even under NULL (no branch per operand); strict operators are NULL when an operand is,
AND/OR are Kleene, IS [NOT] NULL, COALESCE, CASE and IN with NULL items follow SQL. Physical values
as hetdb.types: decimals are scaled int64, dates int32 days, timestamps int64 microseconds,
dictionary strings int32 codes.

Exactness: arithmetic is checked like exec/wide.py (a value past its type sets the function's error
flag instead of wrapping; the executor then re-runs the pipeline operator at a time, which raises
the same OutOfRangeError the operators always raise). DECIMAL(19..38) values computed in the loop
(TPC-H q09's amount) are int64 with the overflow flag as their only bound: one past int64 sends the
pipeline to the operators, which hold it exactly; a loaded column of such a type (a previous
pipeline's SUM) may already be an object array and is not read (pipeline_py._load). Anything whose result could differ from the
operators (string order, wide types, a division that may hit zero, a rounding rule not copied
here) raises ExprError and the pipeline is not compiled.

A subexpression over one dictionary string column with a non-string result (LIKE, comparisons with
string literals, string functions) becomes a per-dictionary lookup table: the executor evaluates it
once per dictionary with the operator kernels and the loop reads ``lut[code]``.

Literals are parameters: each number, date, timestamp or decimal literal becomes an argument ``k<j>``
of the function (``Emitter.params`` holds the values to pass), so the source, and with it the
compiled function and its cache entry, depends on the query's shape and types, never on its
constants (queries that differ in constants only share one compiled loop). What shapes the code
stays in the source: NULL and boolean literals (they decide validity and branches), the number of
IN items, types (scales, bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hetdb import types as T
from hetdb.exec.conversions import common_type
from hetdb.exec.wide import bounds
from hetdb.plan.expr import Call, Case, Cast, ColumnRef, Expr, Literal
from hetdb.types import DataType

_EXACT = ("int32", "int64", "date", "timestamp", "decimal", "bool")
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLOAT_CMP = {"eq": "f_eq({x}, {y})", "ne": "not f_eq({x}, {y})", "lt": "f_lt({x}, {y})",
              "le": "f_le({x}, {y})", "gt": "f_lt({y}, {x})", "ge": "f_le({y}, {x})"}
_NON_STRICT = ("and", "or", "is_null", "is_not_null", "coalesce", "nullif")
_EXTRACT = {"extract_year": 0, "extract_month": 1, "extract_day": 2}


class ExprError(ValueError):
    """An expression the CPU pipeline compiler does not translate (the message says which part)."""


@dataclass(frozen=True)
class Val:
    value: str     # Python expression text (a local name or a constant)
    valid: str     # "True" when never NULL
    dtype: DataType


@dataclass(frozen=True)
class Lookup:
    """A per-dictionary table the executor fills: ``expr`` over the dictionary string column ``cid``."""

    index: int
    expr: Expr
    cid: str       # the column ``expr`` reads
    source: str    # the input column whose dictionary it is (``cid`` may be a projection of it)


def _scale(t: DataType) -> int:
    return t.scale if t.kind == "decimal" else 0


def _int_lit(v: int) -> np.int64:
    if not -(2**63) <= v < 2**63:
        raise ExprError(f"literal {v} does not fit in 64 bits")
    return np.int64(v)


class Emitter:
    """Emits the statements of one loop body. ``load(cid)`` emits the load of a column not in ``env``
    yet and returns its Val (None when unknown); ``dict_cids``: the dictionary-string columns."""

    def __init__(self, load: Callable[[str], Val | None], dict_cids: frozenset[str]) -> None:
        self.lines: list[str] = []
        self.indent = 2
        self.env: dict[str, Val] = {}
        self._load = load
        self.dict_cids = dict_cids
        self.dict_alias: dict[str, str] = {}  # projected cid -> dictionary input it renames
        self.pending: dict[str, Expr] = {}    # projected cid -> its expression, not computed yet
        # projected cid -> (its value, where its statements start in ``lines``, their indentation)
        self.made: dict[str, tuple[Val, int, int]] = {}
        self.lookups: list[Lookup] = []
        self.params: list[np.int64 | np.float64] = []  # the value of argument k<j>, per literal
        self._n = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def fresh(self) -> str:
        self._n += 1
        return f"t{self._n}"

    def error(self, cond: str) -> None:
        """Leave the function with the error flag when ``cond`` holds."""
        self.emit(f"if {cond}:")
        self.emit("    return ng, np.int64(1), i")

    def bind(self, value: str, valid: str, dtype: DataType) -> Val:
        v = self.fresh()
        self.emit(f"{v} = {value}")
        if valid in ("True", "False"):
            return Val(v, valid, dtype)
        self.emit(f"{v}_ok = {valid}")
        return Val(v, f"{v}_ok", dtype)

    def project(self, cid: str, expr: Expr) -> None:
        """Column ``cid`` := ``expr`` for the statements after this point."""
        if isinstance(expr, ColumnRef) and expr.cid == cid:
            return
        if isinstance(expr, ColumnRef) and expr.cid in self.dict_cids:
            self.dict_cids = self.dict_cids | {cid}
            self.dict_alias[cid] = self.dict_alias.get(expr.cid, expr.cid)
        # computed where it is first used (a projection only the gather after the loop reads, or
        # that a filter drops first, costs nothing); expressions are pure, so the value is the same
        self.pending[cid] = expr

    def column(self, cid: str) -> Val:
        hit = self.env.get(cid)
        if hit is None and cid in self.pending:
            made = self.made.get(cid)
            if made is not None and self._in_scope(made[1], made[2]):
                return made[0]  # a projected column read again (e.g. by two aggregates)
            start, indent = len(self.lines), self.indent
            hit = self.value(self.pending[cid])
            self.made[cid] = (hit, start, indent)
        elif hit is None:
            hit = self._load(cid)
            if hit is None:
                raise ExprError(f"column {cid} is not available at this point of the pipeline")
            self.env[cid] = hit
        return hit

    def _in_scope(self, start: int, indent: int) -> bool:
        """Whether variables assigned at ``indent`` from ``lines[start]`` on are still assigned here:
        no statement since then left their block (computed in a branch, a value is recomputed)."""
        if self.indent < indent or start > len(self.lines):
            return False
        return all(len(line) - len(line.lstrip(" ")) >= 4 * indent for line in self.lines[start:])

    # ---- translation --------------------------------------------------------------------------------
    def value(self, expr: Expr) -> Val:
        if expr.dtype.is_wide and expr.dtype.kind != "decimal":
            raise ExprError(f"{expr} is {expr.dtype}: HUGEINT is not compiled")
        lut = self._as_lookup(expr)
        if lut is not None:
            return lut
        if isinstance(expr, ColumnRef):
            return self.column(expr.cid)
        if isinstance(expr, Literal):
            return self.literal(expr)
        if isinstance(expr, Cast):
            return self.convert(self.value(expr.arg), expr.dtype)
        if isinstance(expr, Case):
            return self._case(expr)
        if isinstance(expr, Call):
            return self._call(expr)
        raise ExprError(f"expression {expr} ({type(expr).__name__}) is not compiled")

    def _as_lookup(self, expr: Expr) -> Val | None:
        if isinstance(expr, ColumnRef | Literal) or expr.dtype.kind == "string":
            return None
        cols = expr.columns()
        if len(cols) != 1 or not cols <= self.dict_cids:
            return None
        (cid,) = cols
        if not self._has_string_op(expr):
            return None
        code = self.column(cid)
        lk = Lookup(len(self.lookups), expr, cid, self.dict_alias.get(cid, cid))
        self.lookups.append(lk)
        v = self.fresh()
        if _strict_only(expr):
            self.emit(f"{v} = lut{lk.index}_v[{code.value}]")
            self.emit(f"{v}_ok = lut{lk.index}_ok[{code.value}] and ({code.valid})")
        else:
            # a non-strict expression (COALESCE, IS NULL) has a value for a NULL string too: the
            # table's last entry (index len(dictionary)) is for a NULL code
            idx = f"({code.value} if ({code.valid}) else lut{lk.index}_v.shape[0] - 1)"
            self.emit(f"{v} = lut{lk.index}_v[{idx}]")
            self.emit(f"{v}_ok = lut{lk.index}_ok[{idx}]")
        return Val(v, f"{v}_ok", expr.dtype)

    @staticmethod
    def _has_string_op(expr: Expr) -> bool:
        stack = [expr]
        while stack:
            e = stack.pop()
            if any(c.dtype.kind == "string" for c in e.children()):
                return True
            stack.extend(e.children())
        return False

    def literal(self, expr: Literal) -> Val:
        t, v = expr.dtype, expr.value
        if v is None:
            return Val(_zero(t), "False", t)
        if t.kind == "bool":
            return Val("True" if v else "False", "True", t)
        if t.kind == "float64":
            return Val(self.param(np.float64(v)), "True", t)
        if t.kind in _EXACT and isinstance(v, int):
            return Val(self.param(_int_lit(v)), "True", t)
        raise ExprError(f"literal {v!r} of type {t} is not compiled")

    def param(self, value: np.int64 | np.float64) -> str:
        """The argument that passes ``value`` to the function (one per literal: which literals are
        equal is a constant, not part of the query's shape)."""
        self.params.append(value)
        return f"k{len(self.params) - 1}"

    def convert(self, val: Val, dst: DataType) -> Val:
        """``val`` as ``dst``, exactly as exec/conversions.convert (range checks set the error flag)."""
        src = val.dtype
        if (dst.is_wide and dst.kind != "decimal") or (src.is_wide and src.kind != "decimal"):
            raise ExprError(f"{src} -> {dst}: HUGEINT is not compiled")
        sk, dk = src.kind, dst.kind
        if src == dst:
            return val
        if dk == "float64":
            if sk == "decimal":
                return self.bind(f"np.float64({val.value}) / {float(10 ** src.scale)!r}", val.valid, dst)
            if sk in ("int32", "int64", "bool", "date"):
                return self.bind(f"np.float64({val.value})", val.valid, dst)
            raise ExprError(f"cast {src} -> {dst} is not compiled")
        if dk == "bool" and sk in ("int32", "int64", "decimal"):
            return self.bind(f"{val.value} != 0", val.valid, dst)
        if sk == "date" and dk == "timestamp":
            return self.bind(f"np.int64({val.value}) * 86400000000", val.valid, dst)
        if sk == "timestamp" and dk == "date":
            return self.bind(f"np.int64({val.value}) // 86400000000", val.valid, dst)
        if sk in ("int32", "int64", "bool", "decimal") and dk in ("int32", "int64", "decimal"):
            up = _scale(dst) - _scale(src)
            x = f"np.int64({val.value})"
            lo, hi = _range(dst)
            slo, shi = _range(src)
            if up > 0:
                f = 10 ** up
                v = self.bind(x, val.valid, dst)
                r = self.fresh()
                self.emit(f"{r}, {r}_of = mul_ovf({v.value}, np.int64({f}))")
                if not (lo <= slo * f and shi * f <= hi):
                    self.error(f"{v.valid} and ({r}_of or {r} < {lo} or {r} > {hi})")
                else:
                    self.error(f"{v.valid} and {r}_of")
                return Val(r, v.valid, dst)
            v = self.bind(x if up == 0 else f"round_div({x}, np.int64({10 ** -up}))", val.valid, dst)
            within = lo <= slo // (10 ** -up if up < 0 else 1) and shi // (10 ** -up if up < 0 else 1) <= hi
            if not within:
                self.error(f"{v.valid} and ({v.value} < {lo} or {v.value} > {hi})")
            return v
        raise ExprError(f"cast {src} -> {dst} is not compiled")

    def _call(self, expr: Call) -> Val:
        op = expr.op
        if op in ("and", "or"):
            args = [self.value(a) for a in expr.args]
            acc = args[0]
            for b in args[1:]:
                acc = self._kleene(op, acc, b)
            return acc
        if op == "not":
            a = self.value(expr.args[0])
            return self.bind(f"not {a.value}", a.valid, T.BOOL)
        if op in ("is_null", "is_not_null"):
            a = self.value(expr.args[0])
            text = f"not ({a.valid})" if op == "is_null" else f"({a.valid})"
            return self.bind(text, "True", T.BOOL)
        if op == "coalesce":
            return self._coalesce(expr)
        if op in _CMP:
            return self._compare(op, *[self.value(a) for a in expr.args])
        if op == "in_list":
            return self._in_list(expr)
        if op in ("add", "sub", "mul", "div"):
            return self._arith(expr)
        if op in ("neg", "abs"):
            return self._neg_abs(expr)
        if op == "date_minus_date":  # DATE - DATE: days, as exec/functions_datetime
            a, b = self.value(expr.args[0]), self.value(expr.args[1])
            if a.dtype.kind != "date" or b.dtype.kind != "date":
                raise ExprError(f"{op} of {a.dtype} and {b.dtype} is not compiled")
            return self.bind(f"np.int64({a.value}) - np.int64({b.value})", _and_valid(a.valid, b.valid), expr.dtype)
        if op in _EXTRACT:
            a = self.value(expr.args[0])
            days = a.value if a.dtype.kind == "date" else f"(np.int64({a.value}) // 86400000000)"
            if a.dtype.kind not in ("date", "timestamp"):
                raise ExprError(f"{op} of {a.dtype} is not compiled")
            return self.bind(f"civil({days})[{_EXTRACT[op]}]", a.valid, expr.dtype)
        raise ExprError(f"function {op} is not compiled")

    def _kleene(self, op: str, a: Val, b: Val) -> Val:
        # both sides are computed already: bitwise & and | on the booleans, not short-circuit
        # and/or, whose branches mispredict on data-dependent filters (TPC-H q19's lineitem loop
        # took 7.7 ms per 1M rows with and/or, 6.1 with & and |)
        if op == "and":
            value = f"(({a.value}) & ({b.value}))"
            valid = (f"((({a.valid}) & ({b.valid})) | (({a.valid}) & (not {a.value})) "
                     f"| (({b.valid}) & (not {b.value})))")
        else:
            value = f"((({a.valid}) & ({a.value})) | (({b.valid}) & ({b.value})))"
            valid = (f"((({a.valid}) & ({b.valid})) | (({a.valid}) & ({a.value})) "
                     f"| (({b.valid}) & ({b.value})))")
        if a.valid == "True" and b.valid == "True":
            valid = "True"
        return self.bind(value, valid, T.BOOL)

    def _coalesce(self, expr: Call) -> Val:
        args = [self.convert(self.value(a), expr.dtype) for a in expr.args]
        v = self.fresh()
        self.emit(f"{v} = {_zero(expr.dtype)}")
        self.emit(f"{v}_ok = False")
        for a in args:
            self.emit(f"if not {v}_ok and ({a.valid}):")
            self.emit(f"    {v} = {a.value}")
            self.emit(f"    {v}_ok = True")
        return Val(v, f"{v}_ok", expr.dtype)

    def _compare(self, op: str, a: Val, b: Val) -> Val:
        if "string" in (a.dtype.kind, b.dtype.kind):
            raise ExprError("a string comparison that is not over one dictionary column is not compiled")
        t = common_type(a.dtype, b.dtype)
        if (t.is_wide and t.kind != "decimal") or t.kind not in _EXACT + ("float64",):
            raise ExprError(f"comparison of {a.dtype} with {b.dtype} is not compiled")
        x, y = self.convert(a, t), self.convert(b, t)
        text = (_FLOAT_CMP[op].format(x=x.value, y=y.value) if t.kind == "float64"
                else f"{x.value} {_CMP[op]} {y.value}")
        return self.bind(text, _and_valid(x.valid, y.valid), T.BOOL)

    def _in_list(self, expr: Call) -> Val:
        probe = self.value(expr.args[0])
        items = expr.args[1:]
        hits, null_item = [], False
        for item in items:
            if not isinstance(item, Literal):
                raise ExprError("IN with a non-literal item is not compiled")
            if item.value is None:
                null_item = True
                continue
            hits.append(self._compare("eq", probe, self.literal(item)).value)
        hit = self.bind("(" + (" or ".join(hits) if hits else "False") + ")", "True", T.BOOL)
        # TRUE on a match; otherwise NULL when the probe is NULL or an item is NULL, else FALSE
        valid = probe.valid if not null_item else f"({probe.valid}) and {hit.value}"
        return Val(hit.value, valid, T.BOOL) if valid == "True" else self.bind(hit.value, valid, T.BOOL)

    def _arith(self, expr: Call) -> Val:
        op, rt = expr.op, expr.dtype
        a, b = (self.value(x) for x in expr.args)
        valid = _and_valid(a.valid, b.valid)
        if op == "div" or rt.kind == "float64":
            if rt.kind != "float64":
                raise ExprError(f"integer division {expr} is not compiled")
            x, y = self.convert(a, T.FLOAT64), self.convert(b, T.FLOAT64)
            sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
            return self.bind(f"{x.value} {sym} {y.value}", valid, rt)
        if rt.kind not in ("int32", "int64", "decimal"):
            raise ExprError(f"{op} yielding {rt} is not compiled")
        if rt.kind == "decimal" and op == "mul":
            sa, sb = _scale(a.dtype), _scale(b.dtype)
            raw_t = T.DataType("decimal", 38 if rt.is_wide else 18, sa + sb)
            r = self._checked("mul", f"np.int64({a.value})", f"np.int64({b.value})", raw_t, valid)
            return self.convert(r, rt)
        x, y = self.convert(a, rt), self.convert(b, rt)
        return self._checked(op, f"np.int64({x.value})", f"np.int64({y.value})", rt, valid)

    def _checked(self, op: str, x: str, y: str, rt: DataType, valid: str) -> Val:
        r = self.fresh()
        self.emit(f"{r}, {r}_of = {op}_ovf({x}, {y})")
        lo, hi = _range(rt)
        out_of_range = "" if (lo, hi) == (-(2**63), 2**63 - 1) else f" or {r} < {lo} or {r} > {hi}"
        self.error(f"({valid}) and ({r}_of{out_of_range})")
        if valid in ("True", "False"):
            return Val(r, valid, rt)
        self.emit(f"{r}_ok = {valid}")
        return Val(r, f"{r}_ok", rt)

    def _neg_abs(self, expr: Call) -> Val:
        a = self.convert(self.value(expr.args[0]), expr.dtype)
        rt = expr.dtype
        if rt.kind == "float64":
            return self.bind(f"-{a.value}" if expr.op == "neg" else f"abs({a.value})", a.valid, rt)
        if rt.kind not in ("int32", "int64", "decimal"):
            raise ExprError(f"{expr.op} of {rt} is not compiled")
        lo, _ = _range(rt)
        if rt.kind == "decimal":
            lo = -(2**63)  # symmetric range: no decimal negation overflows
        self.error(f"({a.valid}) and np.int64({a.value}) == {lo}")
        text = f"-np.int64({a.value})" if expr.op == "neg" else f"abs(np.int64({a.value}))"
        return self.bind(text, a.valid, rt)

    def _case(self, expr: Case) -> Val:
        v = self.fresh()
        conds = [self.value(c) for c, _ in expr.whens]
        values = [self.convert(self.value(x), expr.dtype) for _, x in expr.whens]
        other = (self.convert(self.value(expr.otherwise), expr.dtype) if expr.otherwise is not None
                 else Val(_zero(expr.dtype), "False", expr.dtype))
        first = True
        for c, x in zip(conds, values):
            self.emit(f"{'if' if first else 'elif'} ({c.valid}) and {c.value}:")
            self.emit(f"    {v} = {x.value}")
            self.emit(f"    {v}_ok = {x.valid}")
            first = False
        self.emit("else:" if not first else "if True:")
        self.emit(f"    {v} = {other.value}")
        self.emit(f"    {v}_ok = {other.valid}")
        return Val(v, f"{v}_ok", expr.dtype)


def _range(t: DataType) -> tuple[int, int]:
    """The values of an exact type the loop holds: its bounds, within int64. A DECIMAL(19..38) is
    held while it fits in int64 (as the operators hold it until a value does not): past that the
    overflow flag sends the pipeline to the operators, which go on in exact 128-bit values."""
    lo, hi = bounds(t)
    return max(lo, -(2**63)), min(hi, 2**63 - 1)


def _and_valid(a: str, b: str) -> str:
    if a == "True":
        return b
    if b == "True":
        return a
    return f"({a}) and ({b})"


def _zero(t: DataType) -> str:
    if t.kind == "bool":
        return "False"
    if t.kind == "float64":
        return "np.float64(0.0)"
    return "np.int64(0)"


def _strict_only(expr: Expr) -> bool:
    if isinstance(expr, Case):
        return False
    if isinstance(expr, Call) and expr.op in _NON_STRICT + ("in_list",):
        return False
    if isinstance(expr, Literal) and expr.value is None:
        return False
    return all(_strict_only(c) for c in expr.children())
