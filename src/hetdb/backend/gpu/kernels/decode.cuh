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
//   load_tile_for / load_tile_dict / load_tile_delta / load_tile_rle   the same for a known codec (no switch)
// Tile loaders read a block's directory once per tile; delta and rle blocks are prefix-summed in
// parallel (warp shuffles per row of 32 values, one scan of the row totals).
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

// One block's directory entry: its reference, the word offset of its packed words and its bit width
// (two 8-byte loads: every part of a data section is 8-byte aligned).
struct BpBlock {
  u64 ref;
  unsigned int off;
  int w;
};

HETDB_DECODE_HD BpBlock bp_block(BpStream s, i64 b) {
  const u64* d = (const u64*)(s.dir + 4 * b);
  const u64 ow = d[1];  // word offset (low half), bit width (high half)
  BpBlock k;
  k.ref = d[0];
  k.off = (unsigned int)ow;
  k.w = (int)(ow >> 32);
  return k;
}

// Value j (0..1023) of block k: lane j % 32 holds it at bit (j / 32) * w of its interleaved words
// (so a warp reading 32 consecutive values reads 32 consecutive words), unpacked with shifts.
HETDB_DECODE_HD u64 bp_unpack(const unsigned int* words, const BpBlock& k, int j) {
  if (k.w == 0) return k.ref;
  const unsigned int* lane = words + k.off + (j & 31);
  const int pos = (j >> 5) * k.w;
  const int q = pos >> 5, sh = pos & 31;
  u64 x = lane[q * 32];
  if (sh + k.w > 32) x |= (u64)lane[(q + 1) * 32] << 32;
  x >>= sh;
  if (sh + k.w > 64) x |= (u64)lane[(q + 2) * 32] << (64 - sh);
  if (k.w < 64) x &= (1ULL << k.w) - 1ULL;
  return k.ref + x;
}

HETDB_DECODE_HD i64 bp_get(BpStream s, i64 i) {
  return (i64)bp_unpack(s.words, bp_block(s, i >> 10), (int)(i & (HETDB_BP_BLOCK - 1)));
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

// Cooperative prefix decode of the first `count` values of block b of a delta-coded stream into
// smem[0..count): smem[j] = base + deltas[b*1024] + ... + deltas[b*1024 + j] (delta pages: values;
// rle pages: run ends). The block is read as rows of 32 values: warp w unpacks rows w, w + W, ...
// (one coalesced word per lane) and scans each row across its lanes with shuffles; warp 0 then scans
// the row totals, and every value adds its row's prefix. Three barriers, no serial loop, no bank
// conflicts. BLOCK_THREADS must be a multiple of 32; every thread of the block calls it.
template <int BLOCK_THREADS>
__device__ __forceinline__ void prefix_block_to_shared(u64 base, BpStream deltas, i64 b, int count, i64* smem) {
  u64* v = (u64*)smem;
  u64* row_sum = (u64*)(smem + HETDB_BP_BLOCK);
  const BpBlock blk = bp_block(deltas, b);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rows = (count + 31) >> 5;
  for (int r = warp; r < rows; r += BLOCK_THREADS / 32) {  // (the same trip count for a whole warp)
    const int j = r * 32 + lane;
    u64 x = j < count ? bp_unpack(deltas.words, blk, j) : 0ULL;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const u64 y = __shfl_up_sync(0xFFFFFFFFu, x, d);
      if (lane >= d) x += y;
    }
    v[j] = x;
    if (lane == 31) row_sum[r] = x;
  }
  __syncthreads();
  if (warp == 0) {  // exclusive scan of the row totals, plus the base
    const u64 t = lane < rows ? row_sum[lane] : 0ULL;
    u64 x = t;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const u64 y = __shfl_up_sync(0xFFFFFFFFu, x, d);
      if (lane >= d) x += y;
    }
    row_sum[lane] = base + x - t;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < count; j += BLOCK_THREADS) v[j] += row_sum[j >> 5];
  __syncthreads();
}

// Tile loaders: one directory load per block the tile touches (a tile of a page lies in one or two
// blocks), then per value one or two coalesced word loads and shifts.
// FOR values (dict == nullptr) or dictionary codes (values dict[code]) of a tile.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_packed(BpStream s, const i64* dict, i64 tile_start, T (&items)[ITEMS_PER_THREAD],
                                                 int n) {
  i64 cur = -1;
  BpBlock blk = {0ULL, 0u, 0};
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    const int idx = k * BLOCK_THREADS + threadIdx.x;
    if (idx < n) {
      const i64 row = tile_start + idx;
      if ((row >> 10) != cur) {
        cur = row >> 10;
        blk = bp_block(s, cur);
      }
      const u64 x = bp_unpack(s.words, blk, (int)(row & (HETDB_BP_BLOCK - 1)));
      items[k] = decoded_as<T>(dict == nullptr ? (i64)x : dict[x]);
    }
  }
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_for(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n) {
  load_tile_packed<BLOCK_THREADS, ITEMS_PER_THREAD>(bp_stream(p.body, p.n), nullptr, tile_start, items, n);
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_dict(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n) {
  load_tile_packed<BLOCK_THREADS, ITEMS_PER_THREAD>(bp_stream(p.body + 8 * p.param, p.n), (const i64*)p.body, tile_start,
                                                    items, n);
}

// A tile of a const, for or dict page for the flagged items only (rows an earlier filter dropped
// are not read): what the dense fused kernels load (fused::BlockLoadSelPage).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_sel(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD],
                                              const int (&flags)[ITEMS_PER_THREAD]) {
  if (p.codec == HETDB_CODEC_CONST) {
    const T value = decoded_as<T>(p.param);
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      if (flags[k]) items[k] = value;
    }
    return;
  }
  const bool dict = p.codec == HETDB_CODEC_DICT;
  const BpStream s = bp_stream(dict ? p.body + 8 * p.param : p.body, p.n);
  const i64* values = (const i64*)p.body;
  i64 cur = -1;
  BpBlock blk = {0ULL, 0u, 0};
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    if (flags[k]) {
      const i64 row = tile_start + k * BLOCK_THREADS + threadIdx.x;
      if ((row >> 10) != cur) {
        cur = row >> 10;
        blk = bp_block(s, cur);
      }
      const u64 x = bp_unpack(s.words, blk, (int)(row & (HETDB_BP_BLOCK - 1)));
      items[k] = decoded_as<T>(dict ? values[x] : (i64)x);
    }
  }
}

// A delta page's tile: per block it touches, the values from the block's start to the tile's end
// (or the block's end) are prefix-summed in shared memory.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_delta(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                                i64* smem) {
  if (n <= 0) return;
  const i64* bases = (const i64*)p.body;
  const BpStream deltas = bp_stream(p.body + 8 * bp_blocks(p.n), p.n);
  const i64 tile_end = tile_start + n;
  const i64 first = tile_start >> 10, last = (tile_end - 1) >> 10;
  for (i64 b = first; b <= last; ++b) {
    const i64 block_start = b * HETDB_BP_BLOCK;
    const i64 block_end = block_start + HETDB_BP_BLOCK < tile_end ? block_start + HETDB_BP_BLOCK : tile_end;
    const int count = (int)(block_end - block_start);
    prefix_block_to_shared<BLOCK_THREADS>((u64)bases[b], deltas, b, count, smem);
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      const int idx = k * BLOCK_THREADS + threadIdx.x;
      const i64 row = tile_start + idx;
      if (idx < n && row >= block_start && row < block_end) items[k] = decoded_as<T>(smem[row - block_start]);
    }
    __syncthreads();
  }
}

// An rle page's tile: per block of 1024 runs that holds tile rows, the ends of the runs up to the
// one holding the tile's last row (at most tile_end - block's first row of them: every run has a
// row) are prefix-summed in shared memory; each row finds its run by binary search there.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_rle(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                              i64* smem) {
  if (n <= 0) return;
  const RlePage r = rle_page(p);
  const i64 blocks = bp_blocks(r.runs), tile_end = tile_start + n;
  for (i64 b = rle_block_of(r, tile_start); b < blocks; ++b) {
    const i64 lo_row = r.starts[b];
    if (lo_row >= tile_end) break;
    const i64 first = b * HETDB_BP_BLOCK;
    i64 count = r.runs - first < HETDB_BP_BLOCK ? r.runs - first : HETDB_BP_BLOCK;
    if (count > tile_end - lo_row) count = tile_end - lo_row;
    prefix_block_to_shared<BLOCK_THREADS>((u64)lo_row, r.lengths, b, (int)count, smem);  // smem[k]: end of run first+k
    const i64 hi_row = smem[count - 1];
    const BpBlock vblk = bp_block(r.values, b);
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      const int idx = k * BLOCK_THREADS + threadIdx.x;
      const i64 row = tile_start + idx;
      if (idx < n && row >= lo_row && row < hi_row) {
        int lo = 0, hi = (int)count - 1;
        while (lo < hi) {
          const int mid = (lo + hi) >> 1;
          if (smem[mid] > row) hi = mid; else lo = mid + 1;
        }
        items[k] = decoded_as<T>((i64)bp_unpack(r.values.words, vblk, lo));
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
  } else if (p.codec == HETDB_CODEC_DICT) {
    load_tile_dict<BLOCK_THREADS, ITEMS_PER_THREAD>(p, tile_start, items, n);
  } else {  // HETDB_CODEC_CONST
    const T value = decoded_as<T>(p.param);
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      if (k * BLOCK_THREADS + (int)threadIdx.x < n) items[k] = value;
    }
  }
}
