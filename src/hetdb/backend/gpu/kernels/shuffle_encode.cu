// GPU encoders of exchange (shuffle) batches: every column buffer of every partition of a batch is one
// *segment*, and three launches encode all segments of a batch together (backend/gpu/shuffle_encode.py):
//
//   shuffle_block_params   one warp per block of 1024 values of any segment: frame-of-reference
//                          reference and bit width of the values and of their in-block deltas
//   shuffle_choose         one thread block per segment: the exact size of each candidate encoding
//                          (const, plain, for, delta), the smallest one (ties to the earlier, as
//                          hetdb.codec.encode), and each block's word offset in its bit-packed stream
//   shuffle_pack           one warp per block of any segment: header, directory, delta bases and
//                          the lane-interleaved packed words, written where the host placed the segment
//
// The bytes are hetdb's page encodings (docs/storage-format.md, hetdb/codec/encodings.py and
// bitpack.py): a section the GPU writes equals hetdb.codec.encode(values, ("const", "for", "delta"))
// byte for byte, so the CPU decoders and decode.cuh read it. Values are read through an optional row
// index (`perm`): a segment is a partition's rows gathered from the batch's column as it is encoded.
//
// Segment table: 8 int64 words per segment:
//   0 source address   1 row index address (0: none)   2 first row (into perm, or into the source)
//   3 value count n    4 value bytes (1, 4, 8)          5 mode: 0 unsigned, 1 signed,
//                                                         2 the sign word (v >> 63) of int64 values
//   6 global index of the segment's first block         7 codecs allowed: bit c for codec id c
// Also hash_partition_ids: the exchange's partition of each row of integer keys (dist/exchange.py's
// partition_ids: splitmix64's finaliser, keys combined by h * MIX + k, high 32 bits scaled).
#include "common.cuh"

#define SE_BLOCK 1024
#define SE_PLAIN 0
#define SE_CONST 1
#define SE_FOR 2
#define SE_DELTA 3
#define SE_CHOOSE_THREADS 256
#define SE_FULL 0xFFFFFFFFu

__device__ __forceinline__ int se_bits(u64 x) { return x ? 64 - __clzll((long long)x) : 0; }

__device__ __forceinline__ i64 se_load(const i64* seg, i64 j) {
  const unsigned char* src = (const unsigned char*)seg[0];
  const i64* perm = (const i64*)seg[1];
  i64 row = perm ? perm[seg[2] + j] : seg[2] + j;
  switch ((int)seg[4]) {
    case 1:
      return seg[5] ? (i64)((const signed char*)src)[row] : (i64)src[row];
    case 4:
      return (i64)((const int*)src)[row];
    default: {
      i64 v = ((const i64*)src)[row];
      return seg[5] == 2 ? (v >> 63) : v;
    }
  }
}

// The segment holding global block b: the last s with first_block(s) <= b.
__device__ __forceinline__ int se_segment(const i64* segs, int nseg, i64 b) {
  int lo = 0, hi = nseg - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (segs[8 * mid + 6] <= b) lo = mid; else hi = mid - 1;
  }
  return lo;
}

__device__ __forceinline__ i64 se_shfl_min(i64 v) {
  for (int o = 16; o; o >>= 1) {
    i64 u = __shfl_xor_sync(SE_FULL, v, o);
    v = u < v ? u : v;
  }
  return v;
}

__device__ __forceinline__ i64 se_shfl_max(i64 v) {
  for (int o = 16; o; o >>= 1) {
    i64 u = __shfl_xor_sync(SE_FULL, v, o);
    v = u > v ? u : v;
  }
  return v;
}

extern "C" __global__ void shuffle_block_params(const i64* segs, int nseg, i64 total_blocks,
                                                i64* for_ref, int* for_w, i64* d_ref, int* d_w,
                                                i64* base) {
  const int lane = threadIdx.x & 31;
  const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
  for (i64 b = (((i64)blockIdx.x * blockDim.x) + threadIdx.x) >> 5; b < total_blocks; b += nwarps) {
    const i64* seg = segs + 8 * se_segment(segs, nseg, b);
    const i64 start = (b - seg[6]) * SE_BLOCK;
    const i64 left = seg[3] - start;
    const int count = left < SE_BLOCK ? (int)left : SE_BLOCK;
    i64 vmin = HETDB_I64_MAX, vmax = HETDB_I64_MIN, dmin = HETDB_I64_MAX, dmax = HETDB_I64_MIN;
    i64 prev_last = 0, first = 0;
    for (int r = 0; r * 32 < count; ++r) {  // count is the same for the whole warp
      const int j = r * 32 + lane;
      const bool ok = j < count;
      const i64 v = ok ? se_load(seg, start + j) : 0;
      i64 up = __shfl_up_sync(SE_FULL, v, 1);
      if (lane == 0) up = prev_last;
      prev_last = __shfl_sync(SE_FULL, v, 31);
      if (r == 0) first = __shfl_sync(SE_FULL, v, 0);
      if (ok) {
        const i64 d = j == 0 ? 0 : (i64)((u64)v - (u64)up);
        vmin = v < vmin ? v : vmin;
        vmax = v > vmax ? v : vmax;
        dmin = d < dmin ? d : dmin;
        dmax = d > dmax ? d : dmax;
      }
    }
    vmin = se_shfl_min(vmin);
    vmax = se_shfl_max(vmax);
    dmin = se_shfl_min(dmin);
    dmax = se_shfl_max(dmax);
    if (lane == 0) {
      for_ref[b] = vmin;
      for_w[b] = se_bits((u64)vmax - (u64)vmin);
      d_ref[b] = dmin;
      d_w[b] = se_bits((u64)dmax - (u64)dmin);
      base[b] = first;
    }
  }
}

// seg_out[2s] = codec id, seg_out[2s + 1] = encoded bytes; word_off[b] = word offset of block b in
// its segment's bit-packed stream (for the chosen codec; unused for const and plain).
extern "C" __global__ void shuffle_choose(const i64* segs, int nseg, const i64* for_ref, const int* for_w,
                                          const int* d_w, i64* seg_out, i64* word_off) {
  __shared__ i64 s_sum_f[SE_CHOOSE_THREADS];
  __shared__ i64 s_sum_d[SE_CHOOSE_THREADS];
  __shared__ i64 s_min[SE_CHOOSE_THREADS];
  __shared__ i64 s_max[SE_CHOOSE_THREADS];
  __shared__ int s_wmax[SE_CHOOSE_THREADS];
  __shared__ int s_codec;
  const int t = threadIdx.x;
  for (int s = blockIdx.x; s < nseg; s += gridDim.x) {
    const i64* seg = segs + 8 * s;
    const i64 n = seg[3], b0 = seg[6];
    const i64 nb = (n + SE_BLOCK - 1) / SE_BLOCK;
    i64 sum_f = 0, sum_d = 0, rmin = HETDB_I64_MAX, rmax = HETDB_I64_MIN;
    int wmax = 0;
    for (i64 k = t; k < nb; k += SE_CHOOSE_THREADS) {
      const i64 r = for_ref[b0 + k];
      const int w = for_w[b0 + k];
      sum_f += w;
      sum_d += d_w[b0 + k];
      rmin = r < rmin ? r : rmin;
      rmax = r > rmax ? r : rmax;
      wmax = w > wmax ? w : wmax;
    }
    s_sum_f[t] = sum_f;
    s_sum_d[t] = sum_d;
    s_min[t] = rmin;
    s_max[t] = rmax;
    s_wmax[t] = wmax;
    __syncthreads();
    for (int half = SE_CHOOSE_THREADS / 2; half; half >>= 1) {
      if (t < half) {
        s_sum_f[t] += s_sum_f[t + half];
        s_sum_d[t] += s_sum_d[t + half];
        s_min[t] = s_min[t + half] < s_min[t] ? s_min[t + half] : s_min[t];
        s_max[t] = s_max[t + half] > s_max[t] ? s_max[t + half] : s_max[t];
        s_wmax[t] = s_wmax[t + half] > s_wmax[t] ? s_wmax[t + half] : s_wmax[t];
      }
      __syncthreads();
    }
    if (t == 0) {
      const i64 allowed = seg[7];
      int codec = SE_PLAIN;
      i64 best = n * seg[4];
      if (n > 0 && n < (1LL << 32)) {
        // candidates in hetdb.codec.CODECS order (const, plain, for, delta): a tie keeps the earlier
        // const precedes plain: it wins a tie, but not against a plain section under 16 bytes
        if ((allowed >> SE_CONST & 1) && s_min[0] == s_max[0] && s_wmax[0] == 0 && 16 <= best) {
          codec = SE_CONST;
          best = 16;
        }
        const i64 size_for = 16 + 16 * nb + 128 * s_sum_f[0];
        if ((allowed >> SE_FOR & 1) && size_for < best) {
          codec = SE_FOR;
          best = size_for;
        }
        const i64 size_delta = 16 + 24 * nb + 128 * s_sum_d[0];
        if ((allowed >> SE_DELTA & 1) && size_delta < best) {
          codec = SE_DELTA;
          best = size_delta;
        }
      }
      seg_out[2 * s] = codec;
      seg_out[2 * s + 1] = best;
      s_codec = codec;
    }
    __syncthreads();
    const int codec = s_codec;
    if (codec == SE_FOR || codec == SE_DELTA) {
      // exclusive scan of 32 * width over the segment's blocks, a chunk of 256 blocks at a time
      const int* widths = codec == SE_FOR ? for_w : d_w;
      i64 carry = 0;
      for (i64 c0 = 0; c0 < nb; c0 += SE_CHOOSE_THREADS) {
        const i64 w = c0 + t < nb ? 32 * (i64)widths[b0 + c0 + t] : 0;
        s_sum_f[t] = w;
        __syncthreads();
        for (int o = 1; o < SE_CHOOSE_THREADS; o <<= 1) {
          const i64 add = t >= o ? s_sum_f[t - o] : 0;
          __syncthreads();
          s_sum_f[t] += add;
          __syncthreads();
        }
        if (c0 + t < nb) word_off[b0 + c0 + t] = carry + s_sum_f[t] - w;
        carry += s_sum_f[SE_CHOOSE_THREADS - 1];
        __syncthreads();
      }
    }
    __syncthreads();
  }
}

extern "C" __global__ void shuffle_pack(const i64* segs, int nseg, i64 total_blocks, const i64* seg_out,
                                        const i64* seg_off, const i64* for_ref, const int* for_w,
                                        const i64* d_ref, const int* d_w, const i64* base,
                                        const i64* word_off, unsigned char* out) {
  const int lane = threadIdx.x & 31;
  const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
  for (i64 b = (((i64)blockIdx.x * blockDim.x) + threadIdx.x) >> 5; b < total_blocks; b += nwarps) {
    const int s = se_segment(segs, nseg, b);
    const i64* seg = segs + 8 * s;
    const int codec = (int)seg_out[2 * s];
    unsigned char* o = out + seg_off[s];
    const i64 lb = b - seg[6];
    const i64 start = lb * SE_BLOCK;
    const i64 n = seg[3];
    const i64 nb = (n + SE_BLOCK - 1) / SE_BLOCK;
    const i64 left = n - start;
    const int count = left < SE_BLOCK ? (int)left : SE_BLOCK;
    const int width = (int)seg[4];
    if (codec == SE_PLAIN) {
      for (int j = lane; j < count; j += 32) {
        const i64 v = se_load(seg, start + j);
        if (width == 1) o[start + j] = (unsigned char)v;
        else if (width == 4) ((int*)o)[start + j] = (int)v;
        else ((i64*)o)[start + j] = v;
      }
      continue;
    }
    if (lb == 0 && lane == 0) {
      o[0] = (unsigned char)codec;
      o[1] = (unsigned char)width;
      o[2] = 0;
      o[3] = 0;
      *(unsigned int*)(o + 4) = (unsigned int)n;
      *(i64*)(o + 8) = codec == SE_CONST ? base[b] : 0;
    }
    if (codec == SE_CONST) continue;
    const bool delta = codec == SE_DELTA;
    unsigned char* dir = o + (delta ? 16 + 8 * nb : 16);
    unsigned int* words = (unsigned int*)(dir + 16 * nb);
    const i64 ref = delta ? d_ref[b] : for_ref[b];
    const int w = delta ? d_w[b] : for_w[b];
    if (lane == 0) {
      if (delta) *(i64*)(o + 16 + 8 * lb) = base[b];
      *(i64*)(dir + 16 * lb) = ref;
      *(unsigned int*)(dir + 16 * lb + 8) = (unsigned int)word_off[b];
      *(unsigned int*)(dir + 16 * lb + 12) = (unsigned int)w;
    }
    if (w == 0) continue;
    // lane l packs rows 0..31 of lane l (value r * 32 + l): w bits each, into words[32 * k + l]
    unsigned int* lw = words + word_off[b] + lane;
    u64 lo = 0, hi = 0;
    int have = 0, k = 0;
    i64 prev_last = 0;
    for (int r = 0; r < 32; ++r) {
      const int j = r * 32 + lane;
      const bool ok = j < count;
      const i64 v = ok ? se_load(seg, start + j) : 0;
      u64 x;
      if (delta) {
        i64 up = __shfl_up_sync(SE_FULL, v, 1);
        if (lane == 0) up = prev_last;
        prev_last = __shfl_sync(SE_FULL, v, 31);
        const u64 d = j == 0 ? 0 : (u64)v - (u64)up;
        x = ok ? d - (u64)ref : 0;
      } else {
        x = ok ? (u64)v - (u64)ref : 0;
      }
      lo |= x << have;
      hi = have ? x >> (64 - have) : 0;
      have += w;
      while (have >= 32) {
        lw[32 * k] = (unsigned int)lo;
        ++k;
        lo = (lo >> 32) | (hi << 32);
        hi >>= 32;
        have -= 32;
      }
    }
  }
}

__device__ __forceinline__ u64 se_mix64(u64 x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// ids[i] = the partition of row i of `nkeys` int64 key columns (`keys`: column-major, n rows each;
// `valid`: column-major bytes, or null when no key has NULLs; a NULL key hashes to 0).
extern "C" __global__ void hash_partition_ids(const i64* keys, const unsigned char* valid, int nkeys, i64 n,
                                              u64 parts, int* ids) {
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    u64 h = 0;
    for (int c = 0; c < nkeys; ++c) {
      u64 k = (valid && !valid[(i64)c * n + i]) ? 0 : se_mix64((u64)keys[(i64)c * n + i]);
      h = c == 0 ? k : h * HETDB_HASH_SEED + k;
    }
    ids[i] = (int)(((h >> 32) * parts) >> 32);
  }
}
