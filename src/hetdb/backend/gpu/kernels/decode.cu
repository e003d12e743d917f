// Whole-page decoding into a device array, for operator-at-a-time paths and decode-on-arrival into
// the device page cache (backend/gpu/decode.py): each thread block decodes tiles of 1024 values (one
// block of the encoding) with decode.cuh's tile loader, the same code fused kernels call.
// T is the stored physical type; FLOAT64 pages are decoded through their int64 bit patterns
// (long long), BOOLEAN through bytes (unsigned char).
#include "decode.cuh"

#define DECODE_THREADS 256
#define DECODE_ITEMS 4

template <typename T>
__global__ void decode_page(const unsigned char* data, T* out, i64 n) {
  __shared__ i64 smem[HETDB_DECODE_SMEM_I64_TILE(DECODE_THREADS * DECODE_ITEMS)];
  const i64 tile = DECODE_THREADS * DECODE_ITEMS;
  for (i64 start = (i64)blockIdx.x * tile; start < n; start += (i64)gridDim.x * tile) {
    i64 left = n - start;
    int count = left < tile ? (int)left : (int)tile;
    T items[DECODE_ITEMS];
    load_tile_encoded<DECODE_THREADS, DECODE_ITEMS>(data, start, items, count, smem);
#pragma unroll
    for (int k = 0; k < DECODE_ITEMS; ++k) {
      int idx = k * DECODE_THREADS + threadIdx.x;
      if (idx < count) out[start + idx] = items[k];
    }
  }
}

template __global__ void decode_page<int>(const unsigned char*, int*, i64);
template __global__ void decode_page<long long>(const unsigned char*, long long*, i64);
template __global__ void decode_page<unsigned char>(const unsigned char*, unsigned char*, i64);
