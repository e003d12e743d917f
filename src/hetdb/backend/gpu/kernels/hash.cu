// Key normalisation and the cross-backend row hash of base.py (hash_keys), plus sort keys.
#include "common.cuh"

// out[i] = bits(in[i]) (see common.cuh): equal SQL keys get equal 64-bit patterns.
template <typename T>
__global__ void normalize_key(const T* __restrict__ in, i64* __restrict__ out, i64 n) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)
    out[i] = key_bits(in[i]);
}

// h = HASH_SEED; for each key column k: h = splitmix64(h ^ bits(k)). keys: column-major [num_keys][n].
extern "C" __global__ void hash_rows(const i64* __restrict__ keys, int num_keys, i64 n,
                                     u64* __restrict__ out) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    u64 h = HETDB_HASH_SEED;
    for (int c = 0; c < num_keys; ++c) h = splitmix64(h ^ (u64)keys[(i64)c * n + i]);
    out[i] = h;
  }
}

template <typename T> __device__ __forceinline__ T zero_as_positive(T v) { return v; }
template <> __device__ __forceinline__ double zero_as_positive(double v) { return v == 0.0 ? 0.0 : v; }

// Signed order-preserving sort key; descending flips it (~x reverses two's-complement order exactly).
// -0.0 and 0.0 tie (they are equal values), so the stable sort keeps their input order.
template <typename T>
__global__ void sort_key(const T* __restrict__ in, i64* __restrict__ out, i64 n, int descending) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    i64 k = order_bits(zero_as_positive(in[i]));
    out[i] = descending ? ~k : k;
  }
}

#ifndef __CUDACC_RTC__
// nvcc compile check instantiates what NVRTC instantiates through name expressions.
template __global__ void normalize_key<int>(const int*, i64*, i64);
template __global__ void normalize_key<i64>(const i64*, i64*, i64);
template __global__ void normalize_key<double>(const double*, i64*, i64);
template __global__ void normalize_key<bool>(const bool*, i64*, i64);
template __global__ void sort_key<int>(const int*, i64*, i64, int);
template __global__ void sort_key<i64>(const i64*, i64*, i64, int);
template __global__ void sort_key<double>(const double*, i64*, i64, int);
template __global__ void sort_key<bool>(const bool*, i64*, i64, int);
#endif
