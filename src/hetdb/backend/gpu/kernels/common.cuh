// Shared device helpers for hetdb kernels: integer types, the splitmix64 hash of base.py, key
// normalisation (SQL equality on 64-bit bit patterns) and order-preserving integer images of values.
// Compiles under NVRTC (no standard headers) and under nvcc.
#pragma once

typedef long long i64;
typedef unsigned long long u64;

#define HETDB_HASH_SEED 0x9E3779B97F4A7C15ULL
#define HETDB_CANONICAL_NAN 0x7FF8000000000000LL
#define HETDB_I64_MAX 0x7FFFFFFFFFFFFFFFLL
#define HETDB_I64_MIN (-HETDB_I64_MAX - 1LL)

__device__ __forceinline__ u64 splitmix64(u64 z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// bits(): the value widened to int64 such that equal SQL keys have equal bits (-0.0 == 0.0, NaN == NaN).
__device__ __forceinline__ i64 key_bits(int v) { return (i64)v; }
__device__ __forceinline__ i64 key_bits(i64 v) { return v; }
__device__ __forceinline__ i64 key_bits(bool v) { return v ? 1 : 0; }
__device__ __forceinline__ i64 key_bits(double v) {
  if (v != v) return HETDB_CANONICAL_NAN;
  if (v == 0.0) return 0;
  return __double_as_longlong(v);
}

// Order-preserving signed image: a < b  <=>  order_bits(a) < order_bits(b). For doubles every NaN is
// canonicalised first, so NaN sorts above +inf (DuckDB's ordering); -0.0 sorts just below 0.0.
__device__ __forceinline__ i64 order_bits(int v) { return (i64)v; }
__device__ __forceinline__ i64 order_bits(i64 v) { return v; }
__device__ __forceinline__ i64 order_bits(bool v) { return v ? 1 : 0; }
__device__ __forceinline__ i64 order_bits(double v) {
  i64 b = (v != v) ? HETDB_CANONICAL_NAN : __double_as_longlong(v);
  return b >= 0 ? b : (b ^ HETDB_I64_MAX);
}
// SQL comparison image of a double, as DuckDB compares: NaN equals NaN and is above +inf, -0.0 equals
// 0.0; a OP b  <=>  compare_bits(a) OP compare_bits(b) for every comparison operator.
__device__ __forceinline__ i64 compare_bits(double v) { return order_bits(v == 0.0 ? 0.0 : v); }
// Inverse of order_bits(double) (the mapping is an involution on its image).
__device__ __forceinline__ double order_bits_to_double(i64 b) {
  return __longlong_as_double(b >= 0 ? b : (b ^ HETDB_I64_MAX));
}

// Compare the normalised composite keys of row a (table a) and row b (table b); keys are column-major.
__device__ __forceinline__ bool keys_equal(const i64* __restrict__ keys_a, i64 n_a, i64 row_a,
                                           const i64* __restrict__ keys_b, i64 n_b, i64 row_b,
                                           int num_keys) {
  for (int c = 0; c < num_keys; ++c) {
    if (keys_a[(i64)c * n_a + row_a] != keys_b[(i64)c * n_b + row_b]) return false;
  }
  return true;
}

// Overflow-checked a OP b (op 0 add, 1 sub, 2 mul, 3 -a, 4 abs(a)) of exact integers (INTEGER, BIGINT, DECIMAL as
// scaled int64) whose result must lie in [lo, hi]: the wrapped result comes back, and where `ok`
// (the row is selected and its operands are not NULL) a result past 64 bits or the range is
// recorded in err[0..3] = (1, code, a, b) by the first thread that finds one, so the host raises
// the CPU's OutOfRangeError naming the operands (codegen/checked.py decodes `code`).
__device__ __forceinline__ i64 checked_arith(i64 a, i64 b, int op, i64 lo, i64 hi, int code,
                                             unsigned long long* __restrict__ err, bool ok) {
  i64 r;
  bool bad;
  if (op == 0) {
    r = (i64)((u64)a + (u64)b);
    bad = ((a ^ r) & (b ^ r)) < 0;
  } else if (op == 1) {
    r = (i64)((u64)a - (u64)b);
    bad = ((a ^ b) & (a ^ r)) < 0;
  } else if (op == 2) {
    r = (i64)((u64)a * (u64)b);
    bad = __mul64hi(a, b) != (r >> 63);
  } else {
    r = (op == 4 && a >= 0) ? a : (i64)(0ULL - (u64)a);
    bad = a == HETDB_I64_MIN;
  }
  if (ok && (bad || r < lo || r > hi)) {
    if (atomicCAS(err, 0ULL, 1ULL) == 0ULL) {
      err[1] = (unsigned long long)code;
      err[2] = (unsigned long long)a;
      err[3] = (unsigned long long)b;
    }
  }
  return r;
}

// a % b (C's remainder, truncating toward zero like DuckDB's %) of exact integers for a divisor that
// is not a literal: a zero divisor is DuckDB's "Division by zero" error, recorded where `ok` (the row
// reaches the expression, its operands are not NULL) in err[0..3] = (1, HETDB_ERR_DIV_ZERO, a, 0)
// (codegen/checked.py raises it); a divisor of -1 gives 0 (MIN % -1 is undefined in C), as the CPU.
#define HETDB_ERR_DIV_ZERO 64
__device__ __forceinline__ i64 checked_mod(i64 a, i64 b, unsigned long long* __restrict__ err, bool ok) {
  if (b == 0) {
    if (ok && atomicCAS(err, 0ULL, 1ULL) == 0ULL) {
      err[1] = (unsigned long long)HETDB_ERR_DIV_ZERO;
      err[2] = (unsigned long long)a;
      err[3] = 0ULL;
    }
    return 0;
  }
  return b == -1 ? 0 : a % b;
}
