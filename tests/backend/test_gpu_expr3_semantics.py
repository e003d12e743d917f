"""Three-valued logic of generated kernel code, checked without a GPU: the statements codegen/expr3.py
emits are plain C++, so they are compiled as a host program with g++ and run over every combination
of NULL and non-NULL operands; value and validity must equal hetdb's expression evaluator (CPU)."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import numpy as np
import pytest

from hetdb import types as T
from hetdb.backend.cpu import CpuBackend
from hetdb.backend.gpu.codegen.expr3 import Emitter, Val
from hetdb.column import Batch, Column
from hetdb.exec.expressions import ExprEvaluator
from hetdb.plan.expr import Call, Case, Cast, ColumnRef, Literal
from hetdb.types import DataType

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

A, B = ColumnRef(T.INT32, "a", True), ColumnRef(T.INT32, "b", True)
X, P = ColumnRef(T.FLOAT64, "x", True), ColumnRef(T.BOOL, "p", True)
D = ColumnRef(T.DATE, "d", True)


def c(op, t, *args):
    return Call(t, op, tuple(args))


def i(v):
    return Literal(T.INT32, v)


D2, D4 = DataType("decimal", 18, 2), DataType("decimal", 18, 4)
W19, W38 = T.wide_decimal(19, 4), T.wide_decimal(38, 3)


EXPRS = [
    c("and", T.BOOL, c("gt", T.BOOL, A, i(1)), P),
    c("or", T.BOOL, c("gt", T.BOOL, X, Literal(T.FLOAT64, 0.5)), P, c("eq", T.BOOL, A, B)),
    c("not", T.BOOL, c("or", T.BOOL, P, c("lt", T.BOOL, A, B))),
    c("is_null", T.BOOL, c("add", T.INT64, Cast(T.INT64, A), Cast(T.INT64, B))),
    c("coalesce", T.INT64, Cast(T.INT64, A), Cast(T.INT64, B), Literal(T.INT64, 7)),
    Case(T.INT64, ((c("gt", T.BOOL, A, B), Cast(T.INT64, A)), (c("is_null", T.BOOL, B), Literal(T.INT64, -1))), None),
    Case(T.FLOAT64, ((P, X),), Literal(T.FLOAT64, 2.5)),
    c("in_list", T.BOOL, A, i(1), i(5)),
    c("in_list", T.BOOL, A, i(1), Literal(T.INT32, None)),
    c("mul", T.INT64, c("sub", T.INT64, Cast(T.INT64, A), Literal(T.INT64, 3)), Cast(T.INT64, B)),
    c("eq", T.BOOL, A, Literal(T.INT32, None)),
    c("extract_year", T.INT64, D),
    c("extract_month", T.INT64, D),
    c("extract_day", T.INT64, D),
    # x % literal: C's truncating remainder (a divisor of -1 gives 0), doubles through fmod
    c("mod", T.INT32, A, i(3)),
    c("mod", T.INT64, c("sub", T.INT64, Cast(T.INT64, A), Literal(T.INT64, 3)), Literal(T.INT64, 2)),
    c("mod", T.INT32, A, i(-1)),
    c("mod", T.FLOAT64, X, Literal(T.FLOAT64, 0.75)),
    c("mod", D2, Cast(D2, A), Literal(D2, 150)),
    # x % y by a column (checked_mod): never zero here, or zero only on rows a CASE branch leaves out
    c("mod", T.INT64, Cast(T.INT64, A), c("add", T.INT64, Cast(T.INT64, B), Literal(T.INT64, 1))),
    c("mod", T.INT32, c("neg", T.INT32, A), c("add", T.INT32, B, i(-3))),
    Case(T.INT32, ((c("ne", T.BOOL, B, i(0)), c("mod", T.INT32, A, B)),), i(-9)),
    Case(T.INT32, ((c("eq", T.BOOL, B, i(0)), i(-9)),), c("mod", T.INT32, A, B)),
    # HUGEINT / DECIMAL(>18) in 64 bits: TPC-H q09's DECIMAL(19,4) difference of products, q20's
    # DECIMAL(38,3) comparison, a wide decimal as a double, HUGEINT addition
    c("sub", W19, Cast(W19, c("mul", D4, Cast(D2, A), Cast(D2, B))),
      Cast(W19, c("mul", D4, Cast(D2, B), Literal(D2, -150)))),
    c("gt", T.BOOL, Cast(W38, A), Literal(D2, 250)),
    Cast(T.FLOAT64, c("mul", W19, Cast(W19, A), Literal(T.wide_decimal(19, 0), 12345))),
    c("add", T.INT128, Cast(T.INT128, A), Cast(T.INT128, B)),
]

PIPE_STUBS = r"""
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
typedef long long i64;
// host twin of common.cuh's compare_bits: NaN = NaN and largest, -0.0 = 0.0
inline i64 compare_bits(double v) {
  i64 b;
  if (v != v) { b = 0x7ff8000000000000LL; } else { if (v == 0.0) v = 0.0; std::memcpy(&b, &v, 8); }
  return b >= 0 ? b : (b ^ 0x7fffffffffffffffLL);
}
// host twin of common.cuh's checked_arith (overflow recorded in arith_err, as the kernel does)
static unsigned long long arith_err[4];
inline i64 checked_arith(i64 a, i64 b, int op, i64 lo, i64 hi, int code, unsigned long long* err, bool ok) {
  __int128 r = op == 0 ? (__int128)a + b : op == 1 ? (__int128)a - b : op == 2 ? (__int128)a * b
             : op == 3 || a < 0 ? -(__int128)a : (__int128)a;
  if (ok && (r < lo || r > hi) && !err[0]) { err[0] = 1; err[1] = code; err[2] = a; err[3] = b; }
  return (i64)r;
}
// host twin of common.cuh's checked_mod (a zero divisor recorded as code 64, a divisor of -1 gives 0)
inline i64 checked_mod(i64 a, i64 b, unsigned long long* err, bool ok) {
  if (b == 0) {
    if (ok && !err[0]) { err[0] = 1; err[1] = 64; err[2] = a; err[3] = 0; }
    return 0;
  }
  return b == -1 ? 0 : a % b;
}
namespace pipe {
inline i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline i64 civil_part(i64 days, int part) {
  const i64 z = days + 719468;
  const i64 era = floor_div(z, 146097);
  const i64 doe = z - era * 146097;
  const i64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const i64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const i64 mp = (5 * doy + 2) / 153;
  const i64 d = doy - (153 * mp + 2) / 5 + 1;
  const i64 m = mp < 10 ? mp + 3 : mp - 9;
  if (part == 2) return d;
  if (part == 1) return m;
  return yoe + era * 400 + (m <= 2 ? 1 : 0);
}
}
"""


def _data():
    ints = [None, 0, 1, 2, 5]
    rows = list(itertools.product(ints, ints, [None, 0.0, 1.0], [None, False, True],
                                  [None, -719_529, 0, 10_956, 11_016, 2_932_896]))
    cols = {}
    for k, (name, t) in enumerate([("a", T.INT32), ("b", T.INT32), ("x", T.FLOAT64), ("p", T.BOOL), ("d", T.DATE)]):
        vals = [r[k] for r in rows]
        valid = np.array([v is not None for v in vals])
        data = np.array([0 if v is None else v for v in vals], dtype=t.numpy_dtype)
        cols[name] = Column(t, data=data, validity=valid)
    return cols, len(rows)


def _program(cols, n) -> str:
    lines = [PIPE_STUBS]
    for name, col in cols.items():
        ct = {"int32": "int", "float64": "double", "bool": "bool", "date": "int"}[col.dtype.kind]
        vals = ", ".join(repr(float(v)) if ct == "double" else str(int(v)) for v in col.data)
        lines.append(f"static const {ct} {name}_v[] = {{{vals}}};")
        lines.append(f"static const bool {name}_ok[] = {{{', '.join(str(int(v)) for v in col.validity)}}};")
    lines.append("int main() {")
    lines.append(f"  for (long long row = 0; row < {n}; ++row) {{")
    for k, e in enumerate(EXPRS):
        em = Emitter(lambda cid: None, frozenset())

        def load(cid, em=em):
            return em.temp(cols[cid].dtype, f"{cid}_v[row]", f"{cid}_ok[row]")

        em._load = load
        v: Val = em.value(e)
        lines.append("    {")
        lines += ["  " + line for line in em.lines]
        lines.append(f'      std::printf("%d %d %.17g\\n", {k}, (int)({v.valid}), ({v.valid}) ? (double)({v.value}) : 0.0);')
        lines.append("    }")
    lines += ["  }", '  std::printf("overflow %llu\\n", arith_err[0]);', "  return 0;", "}"]
    return "\n".join(lines)


def test_generated_three_valued_code_matches_the_evaluator(tmp_path):
    cols, n = _data()
    src = tmp_path / "expr3.cpp"
    src.write_text(_program(cols, n))
    exe = tmp_path / "expr3"
    build = subprocess.run(["g++", "-std=c++17", "-O0", "-o", str(exe), str(src)], capture_output=True, text=True,
                           timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split("\n")
    got: dict[int, list[tuple[bool, float]]] = {k: [] for k in range(len(EXPRS))}
    assert "overflow 0" in out  # these values overflow nothing: no row recorded one
    for line in out:
        if line and not line.startswith("overflow"):
            k, ok, v = line.split()
            got[int(k)].append((ok == "1", float(v)))
    ev = ExprEvaluator(CpuBackend())
    batch = Batch(cols, n)
    compared = 0
    for k, e in enumerate(EXPRS):
        ref = ev.evaluate(e, batch)
        valid = np.ones(n, bool) if ref.validity is None else np.asarray(ref.validity)
        data = np.asarray(ref.data, dtype=float)
        assert len(got[k]) == n
        for row, (ok, v) in enumerate(got[k]):
            assert ok == bool(valid[row]), (k, str(e), row, ok)
            if ok:
                assert v == data[row], (k, str(e), row, v, data[row])
            compared += 1
    assert compared == n * len(EXPRS)


def test_a_wide_value_past_64_bits_is_a_wide_overflow(tmp_path):
    """A DECIMAL(38) sum of two BIGINTs near 2^62 leaves the 64 bits the GPU holds it in: the code
    records a *wide* overflow (only for a row that counts), raised as GpuWideValueError, on which
    the engine runs the query on the CPU."""
    from hetdb.backend.gpu.codegen.checked import raise_if_overflowed
    from hetdb.errors import GpuWideValueError

    big = ColumnRef(T.INT64, "g", True)
    wide = T.wide_decimal(38, 0)
    em = Emitter(lambda cid: None, frozenset())
    em._load = lambda cid: em.temp(T.INT64, f"{cid}_v[row]", f"{cid}_ok[row]")
    v = em.value(c("add", wide, Cast(wide, big), Cast(wide, big)))
    lines = [PIPE_STUBS, "static const long long g_v[] = {3, 6000000000000000000LL, 5000000000000000000LL};",
             "static const bool g_ok[] = {1, 0, 1};", "int main() {", "  for (long long row = 0; row < 3; ++row) {",
             *em.lines, f'    std::printf("row %lld %lld\\n", row, (long long)({v.value}));', "  }",
             '  std::printf("err %llu %llu %llu %llu\\n", arith_err[0], arith_err[1], arith_err[2], arith_err[3]);',
             "  return 0;", "}"]
    src = tmp_path / "wide.cpp"
    src.write_text("\n".join(lines))
    exe = tmp_path / "wide"
    build = subprocess.run(["g++", "-std=c++17", "-O0", "-o", str(exe), str(src)], capture_output=True, text=True,
                           timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split("\n")
    assert "row 0 6" in out
    words = next(line for line in out if line.startswith("err")).split()[1:]
    assert int(words[0]) == 1 and int(words[2]) == 5000000000000000000  # row 2, not the NULL row 1
    with pytest.raises(GpuWideValueError, match="more than 64 bits"):
        raise_if_overflowed([int(w) for w in words])


def test_a_zero_column_divisor_is_the_division_by_zero_error(tmp_path):
    """x % y by a column: a zero divisor on a row that reaches the expression with both operands
    non-NULL is recorded (not on a NULL row), and raise_if_overflowed raises the CPU's error; the
    common.cuh checked_mod the kernels call is the one compiled here (not a twin)."""
    from hetdb.backend.gpu.codegen.checked import raise_if_overflowed
    from hetdb.backend.gpu.compile import load_source
    from hetdb.errors import HetdbError

    em = Emitter(lambda cid: None, frozenset())
    em._load = lambda cid: em.temp(T.INT64, f"{cid}_v[row]", f"{cid}_ok[row]")
    g, h = ColumnRef(T.INT64, "g", True), ColumnRef(T.INT64, "h", True)
    v = em.value(c("mod", T.INT64, g, h))
    common = load_source("common.cuh").replace("#pragma once", "")
    lines = ["#include <cstdio>", "#include <cstring>", "#define __device__", "#define __forceinline__ inline",
             "#define __restrict__", "inline long long __double_as_longlong(double v) { long long d; "
             "std::memcpy(&d, &v, 8); return d; }",
             "inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }",
             "inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }",
             "inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {"
             " unsigned long long o = *p; if (o == c) *p = v; return o; }",
             common, "static unsigned long long arith_err[4];",
             "static const long long g_v[] = {7, -7, 5, 9, -9223372036854775807LL - 1};",
             "static const long long h_v[] = {3, 3, 0, 0, -1};",
             "static const bool g_ok[] = {1, 1, 0, 1, 1};", "static const bool h_ok[] = {1, 1, 1, 1, 1};",
             "int main() {", "  for (long long row = 0; row < 5; ++row) {",
             *em.lines, f'    std::printf("row %lld %lld\\n", row, (long long)({v.value}));', "  }",
             '  std::printf("err %llu %llu %llu %llu\\n", arith_err[0], arith_err[1], arith_err[2], arith_err[3]);',
             "  return 0;", "}"]
    src = tmp_path / "mod.cpp"
    src.write_text("\n".join(lines))
    exe = tmp_path / "mod"
    build = subprocess.run(["g++", "-std=c++17", "-O0", "-w", "-o", str(exe), str(src)], capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout.split("\n")
    assert {"row 0 1", "row 1 -1", "row 4 0"} <= set(out), out  # truncating, as DuckDB; MIN % -1 is 0
    words = [int(w) for w in next(line for line in out if line.startswith("err")).split()[1:]]
    assert words == [1, 64, 9, 0]  # row 3 (row 2's dividend is NULL)
    with pytest.raises(HetdbError, match="Division by zero"):
        raise_if_overflowed(words)
