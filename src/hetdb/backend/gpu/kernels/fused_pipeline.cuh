// Building blocks of generated fused pipeline kernels (hetdb/backend/gpu/codegen): selective tile
// loads, block-level compaction positions and aggregate accumulators that pre-aggregate in shared
// memory. The generated kernel strings these together; everything with loops or shared memory lives
// here so generated code stays flat. Compiles under NVRTC and nvcc.
#pragma once
#include "common.cuh"
#include "decode.cuh"
#include "tile.cuh"

namespace fused {

// The page of tile t in a page table whose first num_pages + 1 entries are ascending tile starts
// (the last one the total): the last page starting at or before t, so pages without rows are skipped.
__device__ __forceinline__ long long FindPage(const long long* __restrict__ tile_start, long long num_pages,
                                              long long t) {
  long long lo = 0, hi = num_pages - 1;
  while (lo < hi) {
    const long long mid = (lo + hi + 1) >> 1;
    if (tile_start[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// FindPage for the next tile of a grid-stride loop: from the page `p` of the block's previous tile
// (-1 before the first) a few steps forward, since tiles only grow; a binary search when that is not
// enough (a grid of many blocks strides over several pages). One dependent load per tile instead of
// the binary search's chain of them before the tile's first column load.
__device__ __forceinline__ long long NextPage(const long long* __restrict__ tile_start, long long num_pages,
                                              long long t, long long p) {
  if (p >= 0) {
#pragma unroll 1
    for (int step = 0; step < 4; ++step) {
      if (p + 1 >= num_pages || tile_start[p + 1] > t) return p;
      ++p;
    }
  }
  return FindPage(tile_start, num_pages, t);
}

// A load with the streaming cache hint (ld.global.cs: evict first in L1 and L2) where the type has
// one, for columns read once: the dimension tables the probes look up then keep their cache lines.
template <typename T>
__device__ __forceinline__ T ld_stream(const T* p) { return *p; }
#ifdef __CUDA_ARCH__
__device__ __forceinline__ int ld_stream(const int* p) { return __ldcs(p); }
__device__ __forceinline__ unsigned int ld_stream(const unsigned int* p) { return __ldcs(p); }
__device__ __forceinline__ long long ld_stream(const long long* p) { return __ldcs(p); }
__device__ __forceinline__ double ld_stream(const double* p) { return __ldcs(p); }
__device__ __forceinline__ short ld_stream(const short* p) { return __ldcs(p); }
__device__ __forceinline__ signed char ld_stream(const signed char* p) { return __ldcs(p); }
#endif

// items[i] = in[row] only for flagged items: rows already filtered out are never read, so a column
// used after a selective predicate costs only the memory sectors that still hold selected rows.
// STREAM: through ld_stream (FusedPipelineSpec.stream_loads).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, bool STREAM = false, typename T>
__device__ __forceinline__ void BlockLoadSel(const T* __restrict__ in, T (&items)[ITEMS_PER_THREAD],
                                             const int (&flags)[ITEMS_PER_THREAD]) {
#pragma unroll
  for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
    if (flags[i]) items[i] = STREAM ? ld_stream(in + threadIdx.x + i * BLOCK_THREADS) : in[threadIdx.x + i * BLOCK_THREADS];
  }
}

// Membership of `k` (a key minus the table's lo) in a dense table's bitmap of `size` keys
// (DenseJoinTable.probe_arrays "bits": bit k % 32 of word k / 32), through the read-only path.
__device__ __forceinline__ bool BitsHas(const unsigned int* __restrict__ bits, long long k, long long size) {
  return k >= 0 && k < size && ((HETDB_LDG(bits + (k >> 5)) >> (unsigned)(k & 31)) & 1u);
}

// The code of `k` in a dense table's per-key codes ("code8" / "code16": the probe's payload, -1
// where no build row has the key); -1 outside the table.
template <typename C>
__device__ __forceinline__ int CodeOf(const C* __restrict__ codes, long long k, long long size) {
  return k >= 0 && k < size ? (int)HETDB_LDG(codes + k) : -1;
}

// BlockLoadSel over one page of a column that may be compressed: `encoded` 0 means `page` is the
// value array, else it is the codec id (HETDB_CODEC_*) of the page's encoded data section
// (decode.cuh) and items off + k of the tile decode in registers: const/for/dict by random access of
// the flagged items only (a thread with none reads nothing, not even the header: a page read in
// place from pinned host memory, option gpu_zero_copy, costs a trip over the link per touch),
// delta/rle a whole tile of `num` items cooperatively through `smem` (HETDB_DECODE_SMEM_I64 slots).
// `page` and `encoded` are the same for every thread of the block (one tile lies in one page), so
// the codec branch is uniform and the loaders' barriers are reached by every thread.
// CODECS: the encodings the column's pages may be in (codegen: FusedPipelineSpec.input_codecs):
// HETDB_PAGES_ANY, or HETDB_PAGES_RANDOM (value arrays and const/for/dict pages: the delta/rle tile
// loaders, which need ~90 registers, are left out of the kernel; `smem` may be null).
#define HETDB_PAGES_ANY 0
#define HETDB_PAGES_RANDOM 1
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, int CODECS = HETDB_PAGES_ANY, bool STREAM = false, typename T>
__device__ __forceinline__ void BlockLoadSelPage(const unsigned char* __restrict__ page, long long encoded,
                                                 long long off, T (&items)[ITEMS_PER_THREAD],
                                                 const int (&flags)[ITEMS_PER_THREAD], int num, i64* smem) {
  if (!encoded) {
    BlockLoadSel<BLOCK_THREADS, ITEMS_PER_THREAD, STREAM>((const T*)page + off, items, flags);
    return;
  }
  if (CODECS == HETDB_PAGES_RANDOM || (encoded != HETDB_CODEC_DELTA && encoded != HETDB_CODEC_RLE)) {
    bool any = false;
#pragma unroll
    for (int k = 0; k < ITEMS_PER_THREAD; ++k) any = any || flags[k];
    if (!any) return;
  }
  const EncodedPage p = encoded_page(page);
  if (CODECS == HETDB_PAGES_ANY && p.codec == HETDB_CODEC_DELTA) {
    load_tile_delta<BLOCK_THREADS, ITEMS_PER_THREAD>(p, off, items, num, smem);
  } else if (CODECS == HETDB_PAGES_ANY && p.codec == HETDB_CODEC_RLE) {
    load_tile_rle<BLOCK_THREADS, ITEMS_PER_THREAD>(p, off, items, num, smem);
  } else {
    load_tile_sel<BLOCK_THREADS, ITEMS_PER_THREAD>(p, off, items, flags);
  }
}

// Position of every flagged item among the block's flagged items (thread-major order) and the global
// offset of the block's run, taken with one atomicAdd per block and tile. Every thread must call it.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ long long BlockSelectPositions(const int (&flags)[ITEMS_PER_THREAD],
                                                          int (&pos)[ITEMS_PER_THREAD],
                                                          unsigned long long* counter) {
  static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS <= 1024, "block must be whole warps");
  __shared__ int warp_prefix[BLOCK_THREADS / 32];
  __shared__ long long block_base;
  int count = 0;
#pragma unroll
  for (int i = 0; i < ITEMS_PER_THREAD; ++i) count += flags[i] ? 1 : 0;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  int incl = count;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += v;
  }
  if (lane == 31) warp_prefix[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int w = lane < BLOCK_THREADS / 32 ? warp_prefix[lane] : 0;
    int wincl = w;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, wincl, d);
      if (lane >= d) wincl += v;
    }
    if (lane < BLOCK_THREADS / 32) warp_prefix[lane] = wincl - w;
    if (lane == BLOCK_THREADS / 32 - 1)
      block_base = (long long)atomicAdd(counter, (unsigned long long)wincl);
  }
  __syncthreads();
  int run = warp_prefix[warp] + incl - count;
#pragma unroll
  for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
    pos[i] = run;
    if (flags[i]) ++run;
  }
  const long long base = block_base;
  __syncthreads();  // the next tile reuses warp_prefix and block_base
  return base;
}

// Accumulators are 8-byte slots holding i64 (integer sums, counts, min/max of integers and the
// order_bits image of doubles) or a double (double sums, whose identity 0.0 is also all-zero bits).
struct AccSumI64 {
  __device__ static i64 identity() { return 0; }
  __device__ static void add(i64* slot, i64 v) { atomicAdd((u64*)slot, (u64)v); }
  __device__ static void merge(i64* slot, i64 v) { add(slot, v); }
  __device__ static i64 combine(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
  __device__ static void fold(i64& s, i64 v) { s = combine(s, v); }
};
struct AccSumF64 {
  __device__ static i64 identity() { return 0; }
  __device__ static void add(i64* slot, double v) { atomicAdd((double*)slot, v); }
  __device__ static void merge(i64* slot, i64 v) { atomicAdd((double*)slot, __longlong_as_double(v)); }
  __device__ static i64 combine(i64 a, i64 b) {
    return __double_as_longlong(__longlong_as_double(a) + __longlong_as_double(b));
  }
  __device__ static void fold(i64& s, double v) { s = __double_as_longlong(__longlong_as_double(s) + v); }
};
struct AccMinI64 {
  __device__ static i64 identity() { return HETDB_I64_MAX; }
  __device__ static void add(i64* slot, i64 v) { atomicMin(slot, v); }
  __device__ static void merge(i64* slot, i64 v) { add(slot, v); }
  __device__ static i64 combine(i64 a, i64 b) { return b < a ? b : a; }
  __device__ static void fold(i64& s, i64 v) { s = combine(s, v); }
};
struct AccMaxI64 {
  __device__ static i64 identity() { return HETDB_I64_MIN; }
  __device__ static void add(i64* slot, i64 v) { atomicMax(slot, v); }
  __device__ static void merge(i64* slot, i64 v) { add(slot, v); }
  __device__ static i64 combine(i64 a, i64 b) { return b > a ? b : a; }
  __device__ static void fold(i64& s, i64 v) { s = combine(s, v); }
};
struct AccMinF64 {
  __device__ static i64 identity() { return HETDB_I64_MAX; }
  __device__ static void add(i64* slot, double v) { atomicMin(slot, order_bits(v)); }
  __device__ static void merge(i64* slot, i64 v) { atomicMin(slot, v); }
  __device__ static i64 combine(i64 a, i64 b) { return b < a ? b : a; }
  __device__ static void fold(i64& s, double v) { s = combine(s, order_bits(v)); }
};
struct AccMaxF64 {
  __device__ static i64 identity() { return HETDB_I64_MIN; }
  __device__ static void add(i64* slot, double v) { atomicMax(slot, order_bits(v)); }
  __device__ static void merge(i64* slot, i64 v) { atomicMax(slot, v); }
  __device__ static i64 combine(i64 a, i64 b) { return b > a ? b : a; }
  __device__ static void fold(i64& s, double v) { s = combine(s, order_bits(v)); }
};

// Shared-memory pre-aggregation: a block's accumulators for every group live in shared memory, and
// each touched group costs one global atomic per block at the end instead of one per row.
template <typename Acc>
__device__ __forceinline__ void SharedInit(i64* smem, i64 num_groups) {
  for (i64 g = threadIdx.x; g < num_groups; g += blockDim.x) smem[g] = Acc::identity();
}

template <typename Acc>
__device__ __forceinline__ void SharedFlush(const i64* smem, i64* out, i64 num_groups) {
  for (i64 g = threadIdx.x; g < num_groups; g += blockDim.x) {
    const i64 v = smem[g];
    if (v != Acc::identity()) Acc::merge(&out[g], v);
  }
}

// Warp aggregation of an accumulator update: the lanes calling together whose rows fall into the
// same group slot (`peers`, from match_group) combine their states (Acc::fold images) with shuffles
// and the lowest of them updates the slot once: a few groups over many rows (TPC-H q01's 4, q07's 4,
// q13's 40) cost one atomic per group and warp instead of one per row (generated pipelines of
// pipeline_gen.py with a hash table's slots, dense fused kernels of generate.py with shared or
// global accumulators).
__device__ __forceinline__ unsigned match_group(i64 slot) {
  return __match_any_sync(__activemask(), (unsigned long long)slot);
}
template <typename Acc>
__device__ __forceinline__ void group_merge(unsigned peers, i64 state, i64* __restrict__ slot) {
  i64 total = Acc::identity();
  for (unsigned r = peers; r; r &= r - 1) total = Acc::combine(total, __shfl_sync(peers, state, __ffs(r) - 1));
  if ((peers & ((1u << (threadIdx.x & 31)) - 1u)) == 0) Acc::merge(slot, total);
}

}  // namespace fused
