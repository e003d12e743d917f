"""Overflow-checked integer arithmetic in generated kernels (issue 15): ``+ - *`` of INTEGER, BIGINT
and DECIMAL(p<=18), and ``-x`` / ``abs(x)`` of INTEGER and BIGINT, compile to common.cuh's
``checked_arith``, which records the first overflowing operands in the kernel's ``arith_err``
words; ``raise_if_overflowed`` turns them into the ``OutOfRangeError`` the CPU raises for the same
operands (exec/wide.py ``checked`` / ``negate``). HUGEINT and DECIMAL(19..38) results (and up-scaling
casts to them) are checked against the int64 range the GPU holds them in: leaving it is a *wide*
overflow, raised as ``GpuWideValueError``, on which the engine runs the query on the CPU (as for the
GPU's operator-at-a-time kernels, exec/wide.py). ``x % y`` by a column records a zero divisor the
same way (common.cuh ``checked_mod``), raised as the CPU's division-by-zero error."""

from __future__ import annotations

from typing import Any

from hetdb import types as T
from hetdb.errors import GpuWideValueError, HetdbError, OutOfRangeError
from hetdb.types import DataType

OPS = ("add", "sub", "mul", "neg", "abs")
_UNARY = ("neg", "abs")
_SYM = {"add": "+", "sub": "-", "mul": "*"}
_WORD = {"add": "addition", "sub": "subtraction", "mul": "multiplication"}
_KINDS = ("int32", "int64", "decimal", "wide")
_DUCK = {"int32": "INT32", "int64": "INT64", "decimal": "DECIMAL(18)"}
ERR_WORDS = 4  # arith_err: flag, code, operand a, operand b
DIV_ZERO = 64  # common.cuh HETDB_ERR_DIV_ZERO: x % y met y = 0 (checked_mod)


def is_checked(op: str, rt: DataType) -> bool:
    """Whether ``op`` with result type ``rt`` is overflow-checked in generated code (a decimal's
    negation cannot leave its range)."""
    if op in _UNARY:
        return rt.kind in ("int32", "int64")
    return op in OPS and (rt.kind in _KINDS or rt.is_wide) and rt != T.UBIGINT


def checked_text(op: str, rt: DataType, a: str, b: str, ok: str) -> str:
    """C++ text of ``a op b`` checked against ``rt``'s range (a product of decimals against 18
    digits, as the CPU's unscaled product; neg and abs take ``b`` "0"); ``ok``: C++ condition under
    which the row counts."""
    kind = "wide" if rt.is_wide else rt.kind
    if kind == "int32":
        lo, hi = -(2**31), 2**31 - 1
    elif kind in ("int64", "wide"):
        lo, hi = -(2**63), 2**63 - 1
    else:
        digits = 18 if op == "mul" else rt.precision
        lo, hi = -(10**digits - 1), 10**digits - 1
    code = OPS.index(op) + 8 * _KINDS.index(kind)
    lo_text = "(-9223372036854775807LL - 1LL)" if lo == -(2**63) else f"({lo}LL)"
    return (f"checked_arith((long long)({a}), (long long)({b}), {OPS.index(op)}, {lo_text}, ({hi}LL), {code}, "
            f"arith_err, {ok})")


def raise_if_overflowed(words: Any) -> None:
    """Raise DuckDB's "Out of Range Error" when a kernel recorded an overflow in ``words`` (the
    kernel's arith_err as host integers)."""
    flag, code, a, b = (int(w) for w in words[:ERR_WORDS])
    if not flag:
        return
    a, b = _signed(a), _signed(b)
    if code == DIV_ZERO:  # (the CPU's words, exec/expr_arith._check_zero)
        raise HetdbError("Invalid Input Error: Division by zero in a % expression (DuckDB raises this error too)")
    op, kind = OPS[code % 8], _KINDS[code // 8]
    if kind == "wide":
        raise GpuWideValueError("a HUGEINT / DECIMAL(38) value needs more than 64 bits, which the GPU "
                                f"path does not hold ({a} {_SYM.get(op, op)} {b})")
    if op == "neg":  # the CPU's words for these (exec/wide.py negate)
        raise OutOfRangeError("Out of Range Error: Overflow in negation of numeric value!")
    if op == "abs":
        raise OutOfRangeError(f"Out of Range Error: Overflow on abs({a})")
    tail = ". You might want to add an explicit cast to a bigger decimal." if kind == "decimal" else "!"
    raise OutOfRangeError(f"Out of Range Error: Overflow in {_WORD[op]} of {_DUCK[kind]} "
                          f"({a} {_SYM[op]} {b}){tail}")


def _signed(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v
