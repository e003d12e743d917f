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
//        tile (delta and rle pages decode cooperatively in `smem`: HETDB_DECODE_SMEM_I64_TILE(tile)
//        int64 slots, tile = BLOCK_THREADS * ITEMS_PER_THREAD <= 1024; HETDB_DECODE_SMEM_I64 is
//        enough for tiles of up to 512 values, those of the generated kernels).
//   load_tile_for / load_tile_dict / load_tile_delta / load_tile_rle   the same for a known codec (no switch;
//                                                       load_tile_rle is in rle_tile.cuh, included here)
// for/dict values unpack by random access: a block's directory entry is read once per tile, then a
// value is one or two coalesced word loads, a funnel shift, a mask and an add, in 32-bit arithmetic
// for types of up to 4 bytes. delta and rle tiles scan deltas / run lengths in parallel: each
// thread sums a chunk of consecutive values serially, one warp scan and one pass over the warp
// totals combine the chunks (delta: the deltas of the block before the tile only sum; rle: the run
// block is found by one warp ballot over 32 run starts, its run lengths up to the tile's reach are
// unpacked lane by lane with a bit buffer and scanned once, a barrier count locates the tile's first
// run). An rle tile then sets each run's first row in a bitmap of the tile's rows (one run per
// thread), and every row takes the value of the last run starting at or before it.
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
// Page bytes are read-only while a kernel runs: device code loads them through the read-only data
// path (ld.global.nc, as for const __restrict__ arrays) instead of generic loads.
#ifdef __CUDA_ARCH__
#define HETDB_LDG(p) __ldg(p)
#else
#define HETDB_LDG(p) (*(p))
#endif
// Shared memory (int64 slots) of the delta/rle tile loaders for tiles of `tile` values: the tile's
// decoded values, per-warp scan totals; rle: one run-start bit per row and a run block's run ends
// (RleTileSmem; the larger need).
#define HETDB_DECODE_SMEM_I64_TILE(tile) ((tile) + ((tile) + 63) / 64 + 536)
// Tiles of up to 512 values (the generated kernels'; codegen/runtime.py counts these 8448 bytes).
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
  const u64 ow = HETDB_LDG((const u64*)(p + 16 * (nb - 1)) + 1);  // the last block's word offset, width
  return 16 * nb + 4 * ((i64)(unsigned int)ow + 32 * (i64)(ow >> 32));
}

// One block's directory entry: its reference, the word offset of its packed words and its bit width
// (two 8-byte loads: every part of a data section is 8-byte aligned).
struct BpBlock {
  u64 ref;
  unsigned int off;
  int w;
  unsigned int mask;  // low w bits (w <= 32)
};

HETDB_DECODE_HD BpBlock bp_block(BpStream s, i64 b) {
  const u64* d = (const u64*)(s.dir + 4 * b);
  const u64 ow = HETDB_LDG(d + 1);  // word offset (low half), bit width (high half)
  BpBlock k;
  k.ref = HETDB_LDG(d);
  k.off = (unsigned int)ow;
  k.w = (int)(ow >> 32);
  k.mask = k.w >= 32 ? 0xFFFFFFFFu : (1u << k.w) - 1u;
  return k;
}

// Value j (0..1023) of block k: lane j % 32 holds it at bit (j / 32) * w of its interleaved words
// (so a warp reading 32 consecutive values reads 32 consecutive words). bp_packed32: the low 32 bits
// of its packed bits (all of them for w <= 32): the word of row q = pos / 32 of lane j % 32 is
// words[off + 32 q + j % 32] = words[off + ((pos & ~31) | (j & 31))], the next row's 32 words on; one
// load, a second only where the value crosses a word (both skipped for w = 0: such a block owns no
// words), a funnel shift and a mask, all in 32-bit arithmetic.
HETDB_DECODE_HD unsigned int bp_packed32(const unsigned int* words, const BpBlock& k, unsigned int j) {
  const unsigned int pos = (j >> 5) * (unsigned int)k.w;
  const unsigned int at = k.off + ((pos & ~31u) | (j & 31u));
  const unsigned int sh = pos & 31u;
  const unsigned int lo = k.w != 0 ? HETDB_LDG(words + at) : 0u;
  const unsigned int hi = sh + (unsigned int)k.w > 32u ? HETDB_LDG(words + at + 32) : 0u;
  return (unsigned int)((((u64)hi << 32) | lo) >> sh) & k.mask;
}

// The low 32 bits of value j's int64 image (reference + packed, wrapping): the whole value of a
// type of up to 4 bytes (INTEGER, DATE, string codes, BOOLEAN bytes), of any block width.
HETDB_DECODE_HD unsigned int bp_unpack32(const unsigned int* words, const BpBlock& k, unsigned int j) {
  return (unsigned int)k.ref + bp_packed32(words, k, j);
}

// Value j's int64 image: widths up to 32 (nearly every block) as bp_packed32 plus a 64-bit add;
// wider blocks (int64 values only) load up to three words (the branch on w is the same for a block).
HETDB_DECODE_HD u64 bp_unpack(const unsigned int* words, const BpBlock& k, int j) {
  if (k.w <= 32) return k.ref + (u64)bp_packed32(words, k, (unsigned int)j);
  const unsigned int* lane = words + k.off + (j & 31);
  const int pos = (j >> 5) * k.w;
  const int q = pos >> 5, sh = pos & 31;
  u64 x = HETDB_LDG(lane + q * 32);
  if (sh + k.w > 32) x |= (u64)HETDB_LDG(lane + (q + 1) * 32) << 32;
  x >>= sh;
  if (sh + k.w > 64) x |= (u64)HETDB_LDG(lane + (q + 2) * 32) << (64 - sh);
  if (k.w < 64) x &= (1ULL << k.w) - 1ULL;
  return k.ref + x;
}

HETDB_DECODE_HD i64 bp_get(BpStream s, i64 i) {
  return (i64)bp_unpack(s.words, bp_block(s, i >> 10), (int)(i & (HETDB_BP_BLOCK - 1)));
}

HETDB_DECODE_HD EncodedPage encoded_page(const unsigned char* data) {
  EncodedPage p;
  const u64 head = HETDB_LDG((const u64*)data);  // codec id (byte 0), n (bytes 4-7), little-endian
  p.codec = (int)(head & 0xFFu);
  p.n = (i64)(head >> 32);
  p.param = HETDB_LDG((const i64*)(data + 8));
  p.body = data + HETDB_CODEC_HEADER;
  return p;
}

// An rle page: run values, the first row of each block of 1024 runs, run lengths.
struct RlePage {
  BpStream values;
  const i64* starts;
  BpStream lengths;
  i64 runs;
  i64 rows;
};

HETDB_DECODE_HD RlePage rle_page(const EncodedPage& p) {
  RlePage r;
  r.runs = p.param;
  r.rows = p.n;
  r.values = bp_stream(p.body, p.param);
  const unsigned char* q = p.body + bp_stream_bytes(p.body, p.param);
  r.starts = (const i64*)q;
  r.lengths = bp_stream(q + 8 * bp_blocks(p.param), p.param);
  return r;
}

// Where row i of an rle page would lie if its run blocks covered equal rows (rle_block_of's start).
HETDB_DECODE_HD i64 rle_block_guess(const RlePage& r, i64 i) {
  const i64 nb = bp_blocks(r.runs);
  const i64 g = r.rows > 0 ? i * nb / r.rows : 0;
  return g < 0 ? 0 : (g >= nb ? nb - 1 : g);
}

// The block of runs holding row i: the last b with starts[b] <= i (starts[0] = 0). Runs of a page
// are usually of similar lengths, so the search starts where i would lie if run blocks covered equal
// rows and gallops from there (steps 1, 2, 4, ...) to a bracket, then halves it: about two
// dependent loads where a binary search over every block needs log2(blocks).
HETDB_DECODE_HD i64 rle_block_of(const RlePage& r, i64 i) {
  const i64 nb = bp_blocks(r.runs);
  const i64 g = rle_block_guess(r, i);
  i64 lo, hi;  // the block is in [lo, hi], starts[lo] <= i
  if (HETDB_LDG(r.starts + g) <= i) {
    lo = g;
    i64 step = 1;
    while (lo + step < nb && HETDB_LDG(r.starts + lo + step) <= i) {
      lo += step;
      step <<= 1;
    }
    hi = lo + step < nb ? lo + step - 1 : nb - 1;
  } else {
    hi = g - 1;
    i64 step = 1;
    while (true) {
      const i64 k = g - step > 0 ? g - step : 0;
      if (HETDB_LDG(r.starts + k) <= i) {
        lo = k;
        break;
      }
      hi = k - 1;
      step <<= 1;
    }
  }
  while (lo < hi) {
    i64 mid = (lo + hi + 1) >> 1;
    if (HETDB_LDG(r.starts + mid) <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Value at row i of an rle page by random access: O(runs in its block) (each run length one word
// load and shifts: the block's directory entries are read once); tile loaders decode a block's run
// ends once, cooperatively (load_tile_rle).
HETDB_DECODE_HD i64 rle_value(const RlePage& r, i64 i) {
  const i64 b = rle_block_of(r, i);
  const i64 left = r.runs - b * HETDB_BP_BLOCK;
  const int count = left < HETDB_BP_BLOCK ? (int)left : HETDB_BP_BLOCK;
  const BpBlock lengths = bp_block(r.lengths, b);
  i64 end = HETDB_LDG(r.starts + b);
  int k = 0;
  for (; k < count - 1; ++k) {
    end += bp_unpack32(r.lengths.words, lengths, (unsigned int)k);  // (a length fits in 32 bits)
    if (end > i) break;
  }
  return (i64)bp_unpack(r.values.words, bp_block(r.values, b), k);
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

// Value j of block k as T: types of up to 4 bytes from the value's low 32 bits (32-bit arithmetic;
// decoded_as of the int64 image keeps only those bits too), 8-byte types from the int64 image.
template <typename T>
__device__ __forceinline__ T bp_value(const unsigned int* words, const BpBlock& k, unsigned int j) {
  if (sizeof(T) <= 4) return decoded_as<T>((i64)(int)bp_unpack32(words, k, j));
  return decoded_as<T>((i64)bp_unpack(words, k, (int)j));
}

// Tile loaders: one directory load per block the tile touches (a tile of a page lies in one or two
// blocks), then per value one or two coalesced word loads and shifts.
// FOR values (dict == nullptr) or dictionary codes (values dict[code]) of a tile.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_packed(BpStream s, const i64* dict, i64 tile_start, T (&items)[ITEMS_PER_THREAD],
                                                 int n) {
  if (n <= 0) return;
  unsigned int first = (unsigned int)tile_start & ~(unsigned int)(HETDB_BP_BLOCK - 1);
  BpBlock blk = bp_block(s, tile_start >> 10);
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    const int idx = k * BLOCK_THREADS + threadIdx.x;
    if (idx < n) {
      const i64 row = tile_start + idx;
      unsigned int j = (unsigned int)row - first;
      if (j >= HETDB_BP_BLOCK) {  // a row of a later block (rows of a page fit in 32 bits)
        first = (unsigned int)row & ~(unsigned int)(HETDB_BP_BLOCK - 1);
        blk = bp_block(s, row >> 10);
        j = (unsigned int)row - first;
      }
      items[k] = dict == nullptr ? bp_value<T>(s.words, blk, j) : decoded_as<T>(HETDB_LDG(dict + bp_unpack32(s.words, blk, j)));
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

// The packed bits (w <= 32 / (BLOCK_THREADS / 32)) of a thread's striped items of a tile lying in
// block k (tile_start's place in the block + the tile <= 1024): item it is row q0 + S it of the
// thread's lane (S = BLOCK_THREADS / 32), so the thread walks its lane's bit stream with a bit buffer
// (a coalesced word load per 32 bits: a warp's lanes are at the same bit positions, so the refill
// branch is the same for the whole warp), shifting past the S - 1 rows of the other warps between
// two items: a shift, a mask and a refill test per item instead of a random access's address
// arithmetic and one or two loads (w = 0: no loads).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void bp_walk_tile(const unsigned int* words, const BpBlock& k, i64 tile_start,
                                             unsigned int (&x)[ITEMS_PER_THREAD]) {
  constexpr int S = BLOCK_THREADS / 32;
  const unsigned int j0 = ((unsigned int)tile_start & (HETDB_BP_BLOCK - 1)) + threadIdx.x;
  const unsigned int pos0 = (j0 >> 5) * (unsigned int)k.w;
  const unsigned int* lw = words + k.off + (j0 & 31) + (pos0 >> 5) * 32;
  u64 acc = k.w != 0 ? HETDB_LDG(lw) >> (pos0 & 31) : 0ULL;
  int bits = 32 - (int)(pos0 & 31);
  const int skip = (S - 1) * k.w;
#pragma unroll
  for (int it = 0; it < ITEMS_PER_THREAD; ++it) {
    if (bits < (it > 0 ? skip + k.w : k.w)) {  // (skip + w <= 32: one word is enough)
      lw += 32;
      acc |= (u64)HETDB_LDG(lw) << bits;
      bits += 32;
    }
    if (it > 0) {
      acc >>= skip;
      bits -= skip;
    }
    x[it] = (unsigned int)acc & k.mask;
    acc >>= k.w;
    bits -= k.w;
  }
}

// A tile of a const, for or dict page for the flagged items only (rows an earlier filter dropped
// are not read): what the dense fused kernels load (fused::BlockLoadSelPage). Types of up to 4
// bytes in a tile lying in one block of width w <= 32 / (BLOCK_THREADS / 32) (SSB's quantities,
// discounts, dictionary codes of dates at 128 threads) walk the thread's lane (bp_walk_tile) and
// look up the dictionary for the flagged items; the rest unpack each flagged item by random access.
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
  unsigned int first = 0xFFFFFFFFu;  // no block loaded yet: every j is >= 1024
  BpBlock blk = {0ULL, 0u, 0, 0u};
  const unsigned int in_block = (unsigned int)tile_start & (HETDB_BP_BLOCK - 1);
  if (in_block + BLOCK_THREADS * ITEMS_PER_THREAD <= HETDB_BP_BLOCK) {  // (the tile lies in one block)
    blk = bp_block(s, tile_start >> 10);
    if (sizeof(T) <= 4 && blk.w * (BLOCK_THREADS / 32) <= 32) {
      unsigned int x[ITEMS_PER_THREAD];
      bp_walk_tile<BLOCK_THREADS, ITEMS_PER_THREAD>(s.words, blk, tile_start, x);
#pragma unroll
      for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
        if (flags[k]) {
          const unsigned int v = (unsigned int)blk.ref + x[k];  // (a code, or the value's low 32 bits)
          items[k] = dict ? decoded_as<T>(HETDB_LDG(values + v)) : decoded_as<T>((i64)(int)v);
        }
      }
      return;
    }
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
      if (flags[k]) {
        const unsigned int j = in_block + k * BLOCK_THREADS + threadIdx.x;
        items[k] = dict ? decoded_as<T>(HETDB_LDG(values + bp_unpack32(s.words, blk, j))) : bp_value<T>(s.words, blk, j);
      }
    }
    return;
  }
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    if (flags[k]) {
      const i64 row = tile_start + k * BLOCK_THREADS + threadIdx.x;
      unsigned int j = (unsigned int)row - first;
      if (j >= HETDB_BP_BLOCK || first == 0xFFFFFFFFu) {
        first = (unsigned int)row & ~(unsigned int)(HETDB_BP_BLOCK - 1);
        blk = bp_block(s, row >> 10);
        j = (unsigned int)row - first;
      }
      items[k] = dict ? decoded_as<T>(HETDB_LDG(values + bp_unpack32(s.words, blk, j))) : bp_value<T>(s.words, blk, j);
    }
  }
}

// A delta page's tile: per block it touches, the deltas from the block's start to the tile's first
// row only sum (thread t adds values t*C .. t*C+C-1 of them, C = 1024 / BLOCK_THREADS), and the
// tile's own deltas scan in chunks of ITEMS_PER_THREAD consecutive values per thread; one warp scan
// of both (shuffles) and one pass over the warp totals (`tot`: two areas of 2 * warps slots, one
// per block) give every value base + its prefix, stored in shared memory; then every thread takes
// its striped items. Barriers: one per block, one before the items are read (the next call's writes
// follow its first barrier, so none at the end).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_delta(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                                i64* smem) {
  constexpr int TILE = BLOCK_THREADS * ITEMS_PER_THREAD, C = HETDB_BP_BLOCK / BLOCK_THREADS;
  constexpr int WARPS = BLOCK_THREADS / 32;
  static_assert(BLOCK_THREADS % 32 == 0 && HETDB_BP_BLOCK % BLOCK_THREADS == 0 && BLOCK_THREADS <= 512,
                "tile loaders: whole warps, at most 512 threads, dividing a block of 1024 values");
  static_assert(TILE <= HETDB_BP_BLOCK, "tiles of at most one block of values");
  if (n <= 0) return;
  u64* vals = (u64*)smem;
  u64* tot = (u64*)(smem + TILE + TILE / 4);
  const i64* bases = (const i64*)p.body;
  const BpStream deltas = bp_stream(p.body + 8 * bp_blocks(p.n), p.n);
  const i64 tile_end = tile_start + n;
  const i64 first = tile_start >> 10, last = (tile_end - 1) >> 10;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (i64 b = first; b <= last; ++b) {
    const i64 block_start = b * HETDB_BP_BLOCK;
    const int lo = (int)((tile_start > block_start ? tile_start : block_start) - block_start);
    const int hi = (int)((block_start + HETDB_BP_BLOCK < tile_end ? block_start + HETDB_BP_BLOCK : tile_end) - block_start);
    const BpBlock k = bp_block(deltas, b);
    u64 skip = 0;  // this thread's share of the deltas before the tile
    const int ja = threadIdx.x * C;
#pragma unroll
    for (int i = 0; i < C; ++i) {
      if (ja + i < lo) skip += bp_unpack(deltas.words, k, ja + i);
    }
    u64 v[ITEMS_PER_THREAD];
    u64 acc = 0;
    const int jb = lo + threadIdx.x * ITEMS_PER_THREAD;
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
      if (jb + i < hi) acc += bp_unpack(deltas.words, k, jb + i);
      v[i] = acc;
    }
    u64 skip_incl = skip, incl = acc;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const u64 y = __shfl_up_sync(0xFFFFFFFFu, skip_incl, d);
      const u64 z = __shfl_up_sync(0xFFFFFFFFu, incl, d);
      if (lane >= d) {
        skip_incl += y;
        incl += z;
      }
    }
    u64* area = tot + (int)(b - first) * 2 * WARPS;
    if (lane == 31) {
      area[2 * warp] = skip_incl;
      area[2 * warp + 1] = incl;
    }
    __syncthreads();
    u64 before = (u64)HETDB_LDG(bases + b) + (incl - acc);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      before += area[2 * w];
      if (w < warp) before += area[2 * w + 1];
    }
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
      if (jb + i < hi) vals[block_start + jb + i - tile_start] = before + v[i];
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    const int idx = k * BLOCK_THREADS + threadIdx.x;
    if (idx < n) items[k] = decoded_as<T>((i64)vals[idx]);
  }
}

#include "rle_tile.cuh"

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
