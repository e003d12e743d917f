// Device-side decoders of hetdb's compressed column pages. Byte layout: docs/storage-format.md
// ("Page encodings"); the CPU decoders are src/hetdb/codec/. Compiles under NVRTC and nvcc.
//
// Every function takes `data`, the start of a page's *encoded data section* (16-byte header, then
// the body), as it lies in device memory. Values come back as int64 images (int32 sign-extended,
// BOOLEAN bytes, FLOAT64 bit patterns); `decoded_as<T>` narrows/reinterprets to the physical type.
//
// API (stable; documented in docs/gpu.md):
//   EncodedPage encoded_page(data)                      header fields + body pointer
//   i64  bp_get(BpStream, i)                            value i of a bit-packed stream (random access)
//   i64  decode_value(page, i)                          value i of a const/for/dict/rle page (rle: O(its
//                                                       block of 1024 runs); tile loaders are O(1) per value)
//   load_tile_encoded<BLOCK_THREADS, ITEMS_PER_THREAD>(page, tile_start, items, n, smem)
//        Crystal-style striped tile load: items[k] = value tile_start + k*BLOCK_THREADS + threadIdx.x
//        for k*BLOCK_THREADS + threadIdx.x < n. Every thread of the block must call it with the same
//        tile (delta pages decode each 1024-value block, rle pages each block of 1024 run ends,
//        cooperatively in `smem`, HETDB_DECODE_SMEM_I64 int64 slots).
//   load_tile_for / load_tile_delta / load_tile_rle     the same for a known codec (no switch)
// A warp whose threads read consecutive values of a block reads 32 consecutive words of the packed
// stream (the lane-interleaved layout), so every load is one coalesced 128-byte transaction.
#pragma once
#include "common.cuh"

#define HETDB_BP_BLOCK 1024
#define HETDB_CODEC_HEADER 16
#define HETDB_CODEC_CONST 1
#define HETDB_CODEC_FOR 2
#define HETDB_CODEC_DELTA 3
#define HETDB_CODEC_RLE 4
#define HETDB_CODEC_DICT 5
// Random-access helpers are host+device so a host program can check them against the CPU encoder.
#define HETDB_DECODE_HD __host__ __device__ __forceinline__
// shared memory of load_tile_encoded / load_tile_delta: one block of values + 32 chunk prefixes
#define HETDB_DECODE_SMEM_I64 (HETDB_BP_BLOCK + 32)

struct BpStream {
  const unsigned int* dir;    // 4 words per block: reference lo, reference hi, word offset, width
  const unsigned int* words;  // packed words
};

struct EncodedPage {
  int codec;
  i64 n;
  i64 param;
  const unsigned char* body;
};

HETDB_DECODE_HD i64 bp_blocks(i64 n) { return (n + HETDB_BP_BLOCK - 1) / HETDB_BP_BLOCK; }

HETDB_DECODE_HD BpStream bp_stream(const unsigned char* p, i64 n) {
  BpStream s;
  s.dir = (const unsigned int*)p;
  s.words = (const unsigned int*)(p + 16 * bp_blocks(n));
  return s;
}

// Bytes of the bit-packed stream of n values at p (to find the stream that follows it).
HETDB_DECODE_HD i64 bp_stream_bytes(const unsigned char* p, i64 n) {
  i64 nb = bp_blocks(n);
  if (nb == 0) return 0;
  const unsigned int* last = (const unsigned int*)p + 4 * (nb - 1);
  return 16 * nb + 4 * ((i64)last[2] + 32 * (i64)last[3]);
}

HETDB_DECODE_HD i64 bp_get(BpStream s, i64 i) {
  const unsigned int* d = s.dir + 4 * (i >> 10);
  u64 ref = ((u64)d[1] << 32) | (u64)d[0];
  int w = (int)d[3];
  if (w == 0) return (i64)ref;
  int j = (int)(i & (HETDB_BP_BLOCK - 1));
  const unsigned int* lane = s.words + d[2] + (j & 31);
  int pos = (j >> 5) * w;
  int k = pos >> 5, sh = pos & 31;
  u64 x = lane[k * 32];
  if (sh + w > 32) x |= (u64)lane[(k + 1) * 32] << 32;
  x >>= sh;
  if (sh + w > 64) x |= (u64)lane[(k + 2) * 32] << (64 - sh);
  if (w < 64) x &= (1ULL << w) - 1ULL;
  return (i64)(ref + x);
}

HETDB_DECODE_HD EncodedPage encoded_page(const unsigned char* data) {
  EncodedPage p;
  p.codec = data[0];
  p.n = (i64)(*(const unsigned int*)(data + 4));
  p.param = *(const i64*)(data + 8);
  p.body = data + HETDB_CODEC_HEADER;
  return p;
}

// An rle page: run values, the first row of each block of 1024 runs, run lengths.
struct RlePage {
  BpStream values;
  const i64* starts;
  BpStream lengths;
  i64 runs;
};

HETDB_DECODE_HD RlePage rle_page(const EncodedPage& p) {
  RlePage r;
  r.runs = p.param;
  r.values = bp_stream(p.body, p.param);
  const unsigned char* q = p.body + bp_stream_bytes(p.body, p.param);
  r.starts = (const i64*)q;
  r.lengths = bp_stream(q + 8 * bp_blocks(p.param), p.param);
  return r;
}

// The block of runs holding row i: the last b with starts[b] <= i (binary search).
HETDB_DECODE_HD i64 rle_block_of(const RlePage& r, i64 i) {
  i64 lo = 0, hi = bp_blocks(r.runs) - 1;
  while (lo < hi) {
    i64 mid = (lo + hi + 1) >> 1;
    if (r.starts[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Value at row i of an rle page by random access: O(runs in its block); tile loaders decode a block's
// run ends once, cooperatively (load_tile_rle).
HETDB_DECODE_HD i64 rle_value(const RlePage& r, i64 i) {
  i64 b = rle_block_of(r, i);
  i64 first = b * HETDB_BP_BLOCK;
  i64 last = first + HETDB_BP_BLOCK < r.runs ? first + HETDB_BP_BLOCK : r.runs;
  u64 end = (u64)r.starts[b];
  for (i64 k = first; k < last; ++k) {
    end += (u64)bp_get(r.lengths, k);
    if ((i64)end > i) return bp_get(r.values, k);
  }
  return bp_get(r.values, last - 1);
}

// Value i of a const, for, dict or rle page (delta pages need their block: use a tile loader).
HETDB_DECODE_HD i64 decode_value(const EncodedPage& p, i64 i) {
  switch (p.codec) {
    case HETDB_CODEC_CONST:
      return p.param;
    case HETDB_CODEC_FOR:
      return bp_get(bp_stream(p.body, p.n), i);
    case HETDB_CODEC_DICT: {
      const i64* values = (const i64*)p.body;
      return values[bp_get(bp_stream(p.body + 8 * p.param, p.n), i)];
    }
    default:  // HETDB_CODEC_RLE
      return rle_value(rle_page(p), i);
  }
}

template <typename T> __device__ __forceinline__ T decoded_as(i64 v) { return (T)v; }
template <> __device__ __forceinline__ double decoded_as<double>(i64 v) { return __longlong_as_double(v); }
template <> __device__ __forceinline__ bool decoded_as<bool>(i64 v) { return v != 0; }

// Cooperative prefix decode of block b (count values) of a delta-coded stream into smem[0..count):
// smem[j] = bases[b] + deltas[b*1024 .. b*1024 + j] (delta pages: values; rle pages: run ends).
// Deltas are unpacked by all threads, 32 chunks of 32 values are summed by warp 0 (sequential sum
// per lane, shuffle scan across lanes), then every value adds its chunk's prefix and the base.
template <int BLOCK_THREADS>
__device__ __forceinline__ void prefix_block_to_shared(const i64* bases, BpStream deltas, i64 b, int count, i64* smem) {
  u64* v = (u64*)smem;
  u64* prefix = (u64*)(smem + HETDB_BP_BLOCK);
  for (int j = threadIdx.x; j < count; j += BLOCK_THREADS) v[j] = (u64)bp_get(deltas, b * HETDB_BP_BLOCK + j);
  __syncthreads();
  if (threadIdx.x < 32) {
    int c = threadIdx.x;
    u64 sum = 0;
    for (int j = c * 32; j < c * 32 + 32 && j < count; ++j) {
      sum += v[j];
      v[j] = sum;
    }
    u64 scan = sum;  // inclusive scan of the chunk sums across the warp
    for (int d = 1; d < 32; d <<= 1) {
      u64 other = __shfl_up_sync(0xFFFFFFFFu, scan, d);
      if (c >= d) scan += other;
    }
    prefix[c] = (u64)bases[b] + scan - sum;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < count; j += BLOCK_THREADS) v[j] += prefix[j >> 5];
  __syncthreads();
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_for(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n) {
  BpStream s = bp_stream(p.body, p.n);
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    int idx = k * BLOCK_THREADS + threadIdx.x;
    if (idx < n) items[k] = decoded_as<T>(bp_get(s, tile_start + idx));
  }
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_delta(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                                i64* smem) {
  if (n <= 0) return;
  i64 first = tile_start >> 10, last = (tile_start + n - 1) >> 10;
  for (i64 b = first; b <= last; ++b) {
    i64 block_start = b * HETDB_BP_BLOCK;
    i64 remaining = p.n - block_start;
    int count = remaining < HETDB_BP_BLOCK ? (int)remaining : HETDB_BP_BLOCK;
    prefix_block_to_shared<BLOCK_THREADS>((const i64*)p.body, bp_stream(p.body + 8 * bp_blocks(p.n), p.n), b, count,
                                          smem);
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      int idx = k * BLOCK_THREADS + threadIdx.x;
      i64 row = tile_start + idx;
      if (idx < n && row >= block_start && row < block_start + count) items[k] = decoded_as<T>(smem[row - block_start]);
    }
    __syncthreads();
  }
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_rle(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                              i64* smem) {
  if (n <= 0) return;
  RlePage r = rle_page(p);
  i64 blocks = bp_blocks(r.runs), tile_end = tile_start + n;
  for (i64 b = rle_block_of(r, tile_start); b < blocks && r.starts[b] < tile_end; ++b) {
    i64 first = b * HETDB_BP_BLOCK;
    int count = r.runs - first < HETDB_BP_BLOCK ? (int)(r.runs - first) : HETDB_BP_BLOCK;
    prefix_block_to_shared<BLOCK_THREADS>(r.starts, r.lengths, b, count, smem);  // smem[k]: end of run first+k
    i64 lo_row = r.starts[b], hi_row = smem[count - 1];
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      int idx = k * BLOCK_THREADS + threadIdx.x;
      i64 row = tile_start + idx;
      if (idx < n && row >= lo_row && row < hi_row) {
        int lo = 0, hi = count - 1;
        while (lo < hi) {
          int mid = (lo + hi) >> 1;
          if (smem[mid] > row) hi = mid; else lo = mid + 1;
        }
        items[k] = decoded_as<T>(bp_get(r.values, first + lo));
      }
    }
    __syncthreads();
  }
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_encoded(const unsigned char* data, i64 tile_start, T (&items)[ITEMS_PER_THREAD],
                                                  int n, i64* smem) {
  EncodedPage p = encoded_page(data);
  if (p.codec == HETDB_CODEC_DELTA) {
    load_tile_delta<BLOCK_THREADS, ITEMS_PER_THREAD>(p, tile_start, items, n, smem);
  } else if (p.codec == HETDB_CODEC_RLE) {
    load_tile_rle<BLOCK_THREADS, ITEMS_PER_THREAD>(p, tile_start, items, n, smem);
  } else if (p.codec == HETDB_CODEC_FOR) {
    load_tile_for<BLOCK_THREADS, ITEMS_PER_THREAD>(p, tile_start, items, n);
  } else {
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      int idx = k * BLOCK_THREADS + threadIdx.x;
      if (idx < n) items[k] = decoded_as<T>(decode_value(p, tile_start + idx));
    }
  }
}
