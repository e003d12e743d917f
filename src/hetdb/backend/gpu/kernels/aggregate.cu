// Grouped aggregation: tile-based kernels (BlockLoad of group ids, values and validity with selection
// flags) that pre-aggregate into shared memory when the groups fit, then combine into global memory
// with one atomic per touched group and block; with many groups they update global memory directly.
//
// Accumulators: sum of integers -> int64 (two's-complement wrap, like NumPy), sum of doubles -> double,
// count -> int64, min/max -> order_bits image (int64, so one atomicMin/atomicMax serves every type and
// NaN is greater than every number), any -> smallest valid row index (the value is gathered afterwards).
#include "common.cuh"
#include "tile.cuh"

#define AGG_BLOCK 256
#define AGG_ITEMS 4

struct OpSum {
  template <typename T> __device__ static i64 lift(T v, i64) { return (i64)v; }
  __device__ static i64 identity() { return 0; }
  __device__ static void combine(i64* a, i64 v) { atomicAdd((u64*)a, (u64)v); }
};
struct OpSumF {
  __device__ static double lift(double v, i64) { return v; }
  __device__ static double identity() { return 0.0; }
  __device__ static void combine(double* a, double v) { atomicAdd(a, v); }
};
struct OpCount {
  template <typename T> __device__ static i64 lift(T, i64) { return 1; }
  __device__ static i64 identity() { return 0; }
  __device__ static void combine(i64* a, i64 v) { atomicAdd((u64*)a, (u64)v); }
};
struct OpMin {
  template <typename T> __device__ static i64 lift(T v, i64) { return order_bits(v); }
  __device__ static i64 identity() { return HETDB_I64_MAX; }
  __device__ static void combine(i64* a, i64 v) { atomicMin(a, v); }
};
struct OpMax {
  template <typename T> __device__ static i64 lift(T v, i64) { return order_bits(v); }
  __device__ static i64 identity() { return HETDB_I64_MIN; }
  __device__ static void combine(i64* a, i64 v) { atomicMax(a, v); }
};
struct OpFirstRow {
  template <typename T> __device__ static i64 lift(T, i64 row) { return row; }
  __device__ static i64 identity() { return HETDB_I64_MAX; }
  __device__ static void combine(i64* a, i64 v) { atomicMin(a, v); }
};

template <typename Op> struct AccOf { typedef i64 type; };
template <> struct AccOf<OpSumF> { typedef double type; };

// values may be null for ops that ignore them (count); valid may be null (every row valid).
// out must hold num_groups accumulators initialised to Op::identity().
// shared_groups > 0: pre-aggregate in dynamic shared memory of shared_groups accumulators.
template <typename Op, typename T>
__global__ void __launch_bounds__(AGG_BLOCK) agg_tile(const T* __restrict__ values,
                                                      const i64* __restrict__ gids,
                                                      const bool* __restrict__ valid, i64 n,
                                                      typename AccOf<Op>::type* out, i64 num_groups,
                                                      int shared_groups) {
  typedef typename AccOf<Op>::type Acc;
  extern __shared__ unsigned char smem_raw[];
  Acc* smem = reinterpret_cast<Acc*>(smem_raw);
  const bool use_shared = shared_groups > 0;
  if (use_shared) {
    for (int g = threadIdx.x; g < shared_groups; g += blockDim.x) smem[g] = Op::identity();
    __syncthreads();
  }
  Acc* target = use_shared ? smem : out;
  const int tile_items = AGG_BLOCK * AGG_ITEMS;
  for (i64 off = (i64)blockIdx.x * tile_items; off < n; off += (i64)gridDim.x * tile_items) {
    const int num = tile::tile_size(n, off, tile_items);
    i64 g[AGG_ITEMS];
    int flags[AGG_ITEMS];
    tile::BlockLoad<AGG_BLOCK, AGG_ITEMS>(gids + off, g, num);
    tile::BlockInitFlags<AGG_BLOCK, AGG_ITEMS>(valid == nullptr ? nullptr : valid + off, flags, num);
    if (values != nullptr) {
      T v[AGG_ITEMS];
      tile::BlockLoad<AGG_BLOCK, AGG_ITEMS>(values + off, v, num);
#pragma unroll
      for (int i = 0; i < AGG_ITEMS; ++i)
        if (flags[i]) Op::combine(&target[g[i]], Op::lift(v[i], off + threadIdx.x + i * AGG_BLOCK));
    } else {
#pragma unroll
      for (int i = 0; i < AGG_ITEMS; ++i)
        if (flags[i]) Op::combine(&target[g[i]], Op::lift(0, off + threadIdx.x + i * AGG_BLOCK));
    }
  }
  if (use_shared) {
    __syncthreads();
    for (int gi = threadIdx.x; gi < shared_groups; gi += blockDim.x) {
      const Acc a = smem[gi];
      if (a != Op::identity()) Op::combine(&out[gi], a);
    }
  }
}

#ifndef __CUDACC_RTC__
template __global__ void agg_tile<OpSum, int>(const int*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpSum, i64>(const i64*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpSum, bool>(const bool*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpSumF, double>(const double*, const i64*, const bool*, i64, double*, i64, int);
template __global__ void agg_tile<OpCount, bool>(const bool*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMin, int>(const int*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMin, i64>(const i64*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMin, double>(const double*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMin, bool>(const bool*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMax, int>(const int*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMax, i64>(const i64*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMax, double>(const double*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpMax, bool>(const bool*, const i64*, const bool*, i64, i64*, i64, int);
template __global__ void agg_tile<OpFirstRow, bool>(const bool*, const i64*, const bool*, i64, i64*, i64, int);
#endif
