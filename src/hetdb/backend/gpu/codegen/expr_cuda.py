"""Expression IR (hetdb.plan.expr) -> a CUDA C++ expression over per-item register values.

The fused path sees no NULLs (it runs only on NULL-free batches), so SQL's three-valued logic reduces
to C++ booleans and IS NULL is a constant. Values use their physical representation (hetdb.types):
decimals are scaled int64, dates int32 days, dictionary strings int32 codes. Anything whose result
could differ from the operator-at-a-time kernels (a division that may hit zero, a decimal rescale that
would round, a string compared by value) raises ExprError, and the pipeline is not fused.

HUGEINT and DECIMAL(19..38) values are held in 64 bits, as everywhere on the GPU (exec/wide.py): their
arithmetic and up-scaling casts are checked against the int64 range, and a value that leaves it is
recorded as a *wide* overflow, which the host turns into ``GpuWideValueError`` (the engine then runs
the query on the CPU, exactly as when an operator-at-a-time GPU kernel meets such a value). ``x % y``
is C's truncating remainder (DuckDB's; a double ``%`` is ``fmod``); a divisor that is not a literal is
checked for zero where the row reaches the expression (common.cuh ``checked_mod``: DuckDB's division
by zero error). A CASE branch's arithmetic counts its errors only on the rows that take the branch.

Literal values are kernel *parameters* while a generator collects them (``literal_params``): the
source then names ``lit_<i>`` where the value was, the kernel declares one parameter per literal
occurrence and every launch passes the values, so queries that differ only in literal values
generate the same text and share one compiled kernel. What decides the code's shape stays in the
text: types (a decimal's scale, int32 against int64), NULL (validity "false"), booleans, the number
of IN-list items, and the value checks that refuse to compile (a zero or NULL divisor, a literal
that does not fit its type) — a spec refused for one value and compiled for another has different
source only in the second case, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import struct
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from hetdb import types as T
from hetdb.backend.gpu.codegen.checked import checked_text, is_checked
from hetdb.plan.expr import Call, Case, Cast, ColumnRef, Expr, Literal
from hetdb.plan.exprutil import transform
from hetdb.types import DataType

CTYPES = {"int32": "int", "date": "int", "string": "int", "bool": "bool", "int64": "long long",
          "decimal": "long long", "timestamp": "long long", "float64": "double", "int128": "long long"}
INTEGER_LIKE = ("int32", "int64", "date", "string", "bool")
_ARITH = {"add": "+", "sub": "-", "mul": "*"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


class ExprError(ValueError):
    """An expression the fused kernel generator does not translate (the message says which part)."""


@dataclass(frozen=True)
class Code:
    """A C++ expression and the SQL type of its value."""

    text: str
    dtype: DataType

    @property
    def is_integer_like(self) -> bool:
        return self.dtype.kind in INTEGER_LIKE


@dataclass(frozen=True)
class LiteralParam:
    """A literal passed to a generated kernel as its parameter ``name`` of C++ type ``ctype``:
    ``value`` an int or float (a LIKE pattern: its UTF-8 bytes, passed as a device array), ``text``
    the same value as a C++ expression (for host-compiled test harnesses)."""

    name: str
    ctype: str
    value: object
    text: str

    def declaration(self) -> str:
        return f"const {self.ctype} {self.name}"


_COLLECTED: ContextVar[list[LiteralParam] | None] = ContextVar("hetdb_literal_params", default=None)


@contextlib.contextmanager
def literal_params() -> Iterator[list[LiteralParam]]:
    """While the block runs, ``literal`` (and ``pattern_param``) turn values into kernel parameters,
    appended to the yielded list in the order the source uses them (one per occurrence: which
    literals are equal is a value, not part of the kernel's shape)."""
    params: list[LiteralParam] = []
    token = _COLLECTED.set(params)
    try:
        yield params
    finally:
        _COLLECTED.reset(token)


# literal parameters of one kernel at most (8 bytes each: with the other parameters under the 4 KiB
# that every CUDA version passes to a kernel); the literals past them stay in the source (a long IN
# list's tail)
MAX_LITERAL_PARAMS = 256


def _param(c: str, value: object, text: str) -> str:
    params = _COLLECTED.get()
    if params is None or len(params) >= MAX_LITERAL_PARAMS:
        return text
    name = f"lit_{len(params)}"
    params.append(LiteralParam(name, c, value, text))
    return name


def pattern_param(data: bytes) -> tuple[str, str] | None:
    """(pointer, length) parameter names of a LIKE pattern's bytes, or None when no generator
    collects literals (the caller then puts the bytes in the source)."""
    if _COLLECTED.get() is None:
        return None
    text = '(const unsigned char*)"' + "".join(f"\\{b:03o}" for b in data) + '"'
    ptr = _param("unsigned char* __restrict__", data, text)
    return ptr, _param("int", len(data), f"({len(data)})")


def masked(obj: Any) -> Any:
    """``obj`` (an expression, or a spec: dataclasses and tuples of them) with every literal that
    becomes a kernel parameter shown as ``?``: the generated source's comments describe the
    pipeline without its literal values, so they do not make two kernels' texts differ."""
    if isinstance(obj, Expr):
        return transform(obj, lambda e: ColumnRef(e.dtype, "?", False) if isinstance(e, Literal)
                         and e.value is not None and e.dtype.kind != "bool" else None)
    if isinstance(obj, tuple):
        return tuple(masked(o) for o in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and not isinstance(obj, DataType):
        return dataclasses.replace(obj, **{f.name: masked(getattr(obj, f.name))
                                           for f in dataclasses.fields(obj) if f.init})
    return obj


def ctype(dtype: DataType) -> str:
    if dtype == T.UBIGINT:
        raise ExprError("UBIGINT (hash values) has no fused representation")
    try:
        return CTYPES[dtype.kind]
    except KeyError:
        raise ExprError(f"type {dtype} has no fused representation") from None


def check_expr(expr: Expr, available: dict[str, DataType]) -> Code:
    """Translate with placeholder operands, only to find out whether (and as what type) it translates."""
    return translate(expr, {cid: Code(f"c_{i}", t) for i, (cid, t) in enumerate(available.items())})


def translate(expr: Expr, env: dict[str, Code], ok: str = "true") -> Code:
    """The C++ expression computing ``expr``; ``env`` maps each column id to its operand code.
    Integer ``+ - *``, ``-x`` and ``abs`` are overflow-checked (codegen/checked.py: the kernel has an ``arith_err``
    parameter); ``ok`` is the C++ condition under which an overflow counts (operands not NULL)."""
    if isinstance(expr, ColumnRef):
        code = env.get(expr.cid)
        if code is None:
            raise ExprError(f"column {expr.cid} is not available at this point of the pipeline")
        return code
    if isinstance(expr, Literal):
        return Code(literal(expr.value, expr.dtype), expr.dtype)
    if isinstance(expr, Cast):
        arg = translate(expr.arg, env, ok)
        return Code(convert(arg, expr.dtype, ok), expr.dtype)
    if isinstance(expr, Case):
        return _case(expr, env, ok)
    if isinstance(expr, Call):
        return _call(expr, env, ok)
    raise ExprError(f"expression {expr} ({type(expr).__name__}) is not fused")


def literal(value: object, dtype: DataType) -> str:
    if value is None:
        raise ExprError("NULL literal is not fused")
    kind = dtype.kind
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float64":
        v = float(value)
        if math.isfinite(v):
            return _param("double", v, f"({v!r})")
        bits = struct.unpack("<q", struct.pack("<d", v))[0]
        return _param("double", v, f"__longlong_as_double({_int_literal(bits, 'long long')})")
    if kind == "string" and not isinstance(value, int):
        raise ExprError(f"string literal {value!r} is not fused (compare dictionary codes instead)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ExprError(f"literal {value!r} of type {dtype} is not fused")
    c = ctype(dtype)
    return _param(c, value, _int_literal(value, c))


def _int_literal(v: int, c: str) -> str:
    if c == "int":
        if not -(1 << 31) <= v < (1 << 31):
            raise ExprError(f"literal {v} does not fit its int32 type")
        return f"({v})" if v != -(1 << 31) else "(-2147483647 - 1)"
    if not -(1 << 63) <= v < (1 << 63):
        raise ExprError(f"literal {v} does not fit in 64 bits")
    return f"({v}LL)" if v != -(1 << 63) else "(-9223372036854775807LL - 1LL)"


def _scale(dtype: DataType) -> int:
    return dtype.scale if dtype.kind == "decimal" else 0


def convert(code: Code, dst: DataType, ok: str = "true") -> str:
    """``code`` as a value of ``dst`` (exact conversions only; ``ok``: the C++ condition under which a
    value leaving the 64 bits of a wide ``dst`` counts, see the module doc)."""
    src = code.dtype
    if src == dst:
        return code.text
    if T.UBIGINT in (src, dst):
        raise ExprError(f"cast {src} -> {dst}: UBIGINT (hash values) is not fused")
    sk, dk = src.kind, dst.kind
    if dk == "float64":
        if sk == "decimal":
            return f"((double)({code.text}) / {float(10 ** src.scale)!r})"
        if sk in ("int32", "int64", "bool", "float64", "int128"):
            return f"((double)({code.text}))"
    if dk in ("decimal", "int128") and sk in ("int32", "int64", "bool", "decimal", "int128"):
        if src.is_wide and not dst.is_wide:
            raise ExprError(f"cast {src} -> {dst} narrows a HUGEINT / DECIMAL(>18) value: range-checked "
                            "operator at a time, not fused")
        up = _scale(dst) - _scale(src)
        if up < 0:
            raise ExprError(f"cast {src} -> {dst} rounds, which the fused path does not do")
        base = f"((long long)({code.text}))"
        if up == 0:
            return base
        if up > 18:
            raise ExprError(f"cast {src} -> {dst} scales by 10^{up}: not fused")
        if dst.is_wide:  # past 64 bits: the query runs on the CPU (GpuWideValueError)
            return f"((long long){checked_text('mul', dst, base, f'{10 ** up}LL', ok)})"
        return f"({base} * {10 ** up}LL)"
    if dk in ("int64", "int32") and sk in ("int32", "int64", "bool"):
        return f"(({ctype(dst)})({code.text}))"
    if dk == "bool" and sk in ("int32", "int64"):
        return f"(({code.text}) != 0)"
    if sk == "string" and dk == "int32":
        return code.text  # dictionary codes, compared for equality only
    if sk == "date" and dk == "int32":
        return code.text
    raise ExprError(f"cast {src} -> {dst} is not fused")


def _common(a: Code, b: Code) -> DataType:
    """The type both operands of a comparison are converted to."""
    kinds = {a.dtype.kind, b.dtype.kind}
    if "string" in kinds:
        if kinds != {"string"} and not kinds <= {"string", "int32"}:
            raise ExprError("a string is compared with a non-string")
        return T.INT32
    if "float64" in kinds:
        return T.FLOAT64
    if "decimal" in kinds:
        s = max(_scale(a.dtype), _scale(b.dtype))
        if a.dtype.is_wide or b.dtype.is_wide or kinds & {"int64", "int128"}:
            # (as the evaluator's common_type: a BIGINT scaled up may need more than 18 digits)
            return T.wide_decimal(T.MAX_WIDE_PRECISION, s)
        return T.decimal(18, s)
    if "int128" in kinds and kinds <= {"int32", "int64", "bool", "int128"}:
        return T.INT128
    if kinds <= {"date"}:
        return T.DATE
    if kinds <= {"timestamp"}:
        return T.TIMESTAMP
    if kinds <= {"int32", "int64", "bool"}:
        return T.INT64
    raise ExprError(f"cannot compare {a.dtype} with {b.dtype}")


def _call(expr: Call, env: dict[str, Code], ok: str) -> Code:
    op = expr.op
    args = [translate(a, env, ok) for a in expr.args]
    r = expr.dtype
    if op in ("and", "or"):
        joiner = " && " if op == "and" else " || "
        return Code("(" + joiner.join(f"({a.text})" for a in args) + ")", T.BOOL)
    if op == "not":
        return Code(f"(!({args[0].text}))", T.BOOL)
    if op == "is_null":
        return Code("false", T.BOOL)
    if op == "is_not_null":
        return Code("true", T.BOOL)
    if op in _CMP:
        a, b = args
        if "string" in (a.dtype.kind, b.dtype.kind) and op not in ("eq", "ne"):
            raise ExprError("ordering of dictionary codes is not string order: not fused")
        t = _common(a, b)
        return Code(f"({_compared(a, t, ok)} {_CMP[op]} {_compared(b, t, ok)})", T.BOOL)
    if op == "in_list":
        probe, items = args[0], args[1:]
        if not items:
            return Code("false", T.BOOL)
        terms = []
        for item in items:
            t = _common(probe, item)
            terms.append(f"({_compared(probe, t, ok)} == {_compared(item, t, ok)})")
        return Code("(" + " || ".join(terms) + ")", T.BOOL)
    if op in _ARITH:
        a, b = args
        if r.kind == "decimal" and op == "mul":
            if _scale(a.dtype) + _scale(b.dtype) != r.scale:
                raise ExprError(f"decimal product {expr} changes scale: not fused")
            return Code(f"(({ctype(r)}){checked_text(op, r, a.text, b.text, ok)})", r)
        if is_checked(op, r):
            return Code(f"(({ctype(r)}){checked_text(op, r, _operand(a, r, ok), _operand(b, r, ok), ok)})", r)
        return Code(f"({_operand(a, r, ok)} {_ARITH[op]} {_operand(b, r, ok)})", r)
    if op == "div":
        a, b = args
        divisor = expr.args[1]
        if r.kind != "float64" or not isinstance(divisor, Literal) or not divisor.value:
            raise ExprError("division is fused only as float division by a non-zero literal")
        return Code(f"({convert(a, T.FLOAT64)} / {convert(b, T.FLOAT64)})", r)
    if op == "mod":
        return _mod(expr, args[0], args[1], ok)
    if op in ("neg", "abs") and is_checked(op, r):
        return Code(f"(({ctype(r)}){checked_text(op, r, _operand(args[0], r, ok), '0', ok)})", r)
    if op == "neg":
        return Code(f"(-{_operand(args[0], r, ok)})", r)
    if op == "abs":
        x = _operand(args[0], r, ok)
        return Code(f"({x} < 0 ? -{x} : {x})", r)
    raise ExprError(f"function {op} is not fused")


def _mod(expr: Call, a: Code, b: Code, ok: str) -> Code:
    """``a % b``. Integers and decimals take C's remainder, which truncates toward zero like DuckDB's
    ``%`` (and numpy's fmod); a divisor of -1 always gives 0 (INT64_MIN % -1 is undefined in C), as on
    the CPU. A divisor that is not a literal goes through checked_mod, which records a zero divisor
    where ``ok`` (the CPU raises DuckDB's division by zero error for it). Doubles take fmod, as the
    operators do (x % 0.0 is NaN)."""
    r = expr.dtype
    divisor = expr.args[1]
    literal_divisor = isinstance(divisor, Literal)
    if literal_divisor and (divisor.value in (None, 0) or isinstance(divisor.value, bool)):
        raise ExprError("% by a NULL or zero literal is not compiled")
    if r.kind == "float64":
        return Code(f"fmod({convert(a, T.FLOAT64)}, {convert(b, T.FLOAT64)})", r)
    if r.kind not in ("int32", "int64", "decimal") or r.is_wide:
        raise ExprError(f"% of type {r} is not fused")
    x, y = _operand(a, r, ok), _operand(b, r, ok)
    if not literal_divisor:
        return Code(f"(({ctype(r)})checked_mod((long long){x}, (long long){y}, arith_err, {ok}))", r)
    return Code(f"(({y}) == ({ctype(r)})-1 ? ({ctype(r)})0 : ({x}) % ({y}))", r)


def _operand(code: Code, dtype: DataType, ok: str = "true") -> str:
    return f"({convert(code, dtype, ok)})"


def _compared(code: Code, dtype: DataType, ok: str = "true") -> str:
    """An operand of a comparison: doubles compare through compare_bits (NaN = NaN, NaN largest,
    -0.0 = 0.0, as DuckDB)."""
    return f"compare_bits({convert(code, dtype)})" if dtype.kind == "float64" else _operand(code, dtype, ok)


def _case(expr: Case, env: dict[str, Code], ok: str) -> Code:
    if expr.otherwise is None:
        raise ExprError("CASE without ELSE yields NULL: not fused")
    conds = [translate(cond, env, ok) for cond, _ in expr.whens]
    reach = ok  # the rows that get to the current WHEN: an error in a branch counts only there
    values = []
    for c, (_, value) in zip(conds, expr.whens):
        values.append(_operand(translate(value, env, _both(reach, c.text)), expr.dtype, ok))
        reach = _both(reach, f"!({c.text})")
    text = _operand(translate(expr.otherwise, env, reach), expr.dtype, ok)
    for c, v in zip(reversed(conds), reversed(values)):
        text = f"(({c.text}) ? {v} : {text})"
    return Code(text, expr.dtype)


def _both(a: str, b: str) -> str:
    if a == "true":
        return f"({b})"
    return f"({a} && ({b}))"
