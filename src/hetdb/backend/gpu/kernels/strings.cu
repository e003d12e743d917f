// String kernels over Arrow-style (offsets int64[n+1], chars uint8 UTF-8) columns.
#include "common.cuh"

typedef unsigned char u8;

__device__ __forceinline__ bool is_continuation(u8 b) { return (b & 0xC0) == 0x80; }

// Byte length of the UTF-8 code point starting with lead byte b (1 for stray continuation bytes, so
// malformed input still makes progress).
__device__ __forceinline__ int utf8_len(u8 b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

__device__ __forceinline__ u8 ascii_lower(u8 b) { return (b >= 'A' && b <= 'Z') ? (u8)(b + 32) : b; }

// SQL LIKE, one thread per string. '%' matches any sequence, '_' one code point. Greedy matching with
// backtracking to the last '%': linear in practice, and correct for this pattern language because the
// string position only ever advances by whole code points.
extern "C" __global__ void like_kernel(const i64* __restrict__ offsets, const u8* __restrict__ chars,
                                       i64 n, const u8* __restrict__ pat, int plen,
                                       int case_insensitive, bool* __restrict__ out) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    const u8* s = chars + offsets[r];
    const i64 slen = offsets[r + 1] - offsets[r];
    i64 si = 0;
    int pi = 0;
    int star_p = -1;
    i64 star_s = 0;
    bool ok = true;
    while (si < slen) {
      if (pi < plen && pat[pi] == '%') {
        star_p = pi++;
        star_s = si;
        continue;
      }
      if (pi < plen && pat[pi] == '_') {
        si += utf8_len(s[si]);
        ++pi;
        continue;
      }
      if (pi < plen) {
        u8 a = s[si], b = pat[pi];
        if (case_insensitive) { a = ascii_lower(a); b = ascii_lower(b); }
        if (a == b) { ++si; ++pi; continue; }
      }
      if (star_p < 0) { ok = false; break; }
      // Backtrack: let the last '%' swallow one more code point.
      pi = star_p + 1;
      star_s += utf8_len(s[star_s]);
      si = star_s;
    }
    if (ok) {
      while (pi < plen && pat[pi] == '%') ++pi;
      ok = pi == plen && si >= slen;
    }
    out[r] = ok;
  }
}

// Byte-wise comparison with a literal. op: 0 '=', 1 '<>', 2 '<', 3 '<=', 4 '>', 5 '>='.
extern "C" __global__ void compare_scalar_kernel(const i64* __restrict__ offsets,
                                                 const u8* __restrict__ chars, i64 n,
                                                 const u8* __restrict__ lit, i64 llen, int op,
                                                 bool* __restrict__ out) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    const u8* s = chars + offsets[r];
    const i64 slen = offsets[r + 1] - offsets[r];
    const i64 m = slen < llen ? slen : llen;
    int c = 0;
    for (i64 k = 0; k < m; ++k) {
      if (s[k] != lit[k]) { c = s[k] < lit[k] ? -1 : 1; break; }
    }
    if (c == 0) c = slen < llen ? -1 : (slen > llen ? 1 : 0);
    bool res;
    switch (op) {
      case 0: res = c == 0; break;
      case 1: res = c != 0; break;
      case 2: res = c < 0; break;
      case 3: res = c <= 0; break;
      case 4: res = c > 0; break;
      default: res = c >= 0; break;
    }
    out[r] = res;
  }
}

// SUBSTRING(s, start[, length]) with DuckDB's rules, counted in code points: start > 0 is 1-based,
// start < 0 counts from the end, start == 0 is the position before the first character; a negative
// length takes characters before the start; the range is clipped to the string. Writes byte bounds.
extern "C" __global__ void substring_bounds(const i64* __restrict__ offsets,
                                            const u8* __restrict__ chars, i64 n, i64 start,
                                            int has_length, i64 length, i64* __restrict__ out_begin,
                                            i64* __restrict__ out_end) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    const i64 b0 = offsets[r], b1 = offsets[r + 1];
    i64 nchars = 0;
    for (i64 k = b0; k < b1; ++k) nchars += is_continuation(chars[k]) ? 0 : 1;
    i64 cb = start > 0 ? start - 1 : (start < 0 ? nchars + start : -1);
    i64 ce;
    if (!has_length) {
      ce = nchars;
    } else if (length >= 0) {
      ce = cb + length;
    } else {
      ce = cb;
      cb = cb + length;
    }
    cb = cb < 0 ? 0 : (cb > nchars ? nchars : cb);
    ce = ce < cb ? cb : (ce > nchars ? nchars : ce);
    // Map code-point positions to byte positions.
    i64 cp = 0, bb = b1, be = b1;
    for (i64 k = b0; k < b1; ++k) {
      if (is_continuation(chars[k])) continue;
      if (cp == cb) bb = k;
      if (cp == ce) { be = k; break; }
      ++cp;
    }
    if (cb >= nchars) bb = b1;
    out_begin[r] = bb;
    out_end[r] = be;
  }
}

// Copy n byte ranges src[begin[r] .. begin[r] + len) to dst[out_offsets[r] ..), len = out_offsets[r+1]
// - out_offsets[r]. One warp per string so that the copies of long strings are coalesced.
extern "C" __global__ void copy_ranges(const u8* __restrict__ src, const i64* __restrict__ begin,
                                       const i64* __restrict__ out_offsets, i64 n,
                                       u8* __restrict__ dst) {
  const int lane = threadIdx.x & 31;
  const i64 warps = ((i64)gridDim.x * blockDim.x) >> 5;
  for (i64 r = (blockIdx.x * (i64)blockDim.x + threadIdx.x) >> 5; r < n; r += warps) {
    const i64 o = out_offsets[r];
    const i64 len = out_offsets[r + 1] - o;
    const u8* s = src + begin[r];
    for (i64 k = lane; k < len; k += 32) dst[o + k] = s[k];
  }
}

// The chunk-th 8 bytes of each string as a big-endian integer (zero padded), mapped to a signed value
// with the same order, so sorting chunks sorts strings byte-wise.
extern "C" __global__ void string_chunk(const i64* __restrict__ offsets, const u8* __restrict__ chars,
                                        i64 n, i64 chunk, i64* __restrict__ out) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    const i64 b0 = offsets[r] + chunk * 8, b1 = offsets[r + 1];
    u64 v = 0;
    for (int k = 0; k < 8; ++k) {
      const i64 p = b0 + k;
      v = (v << 8) | (u64)(p < b1 ? chars[p] : 0);
    }
    out[r] = (i64)(v ^ 0x8000000000000000ULL);
  }
}
