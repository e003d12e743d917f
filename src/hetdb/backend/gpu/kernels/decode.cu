// Whole-page decoding into a device array, for operator-at-a-time paths and decode-on-arrival into
// the device page cache (backend/gpu/decode.py). Fused kernels call decode.cuh's tile loaders instead.
// T is the stored physical type; FLOAT64 pages are decoded through their int64 bit patterns
// (long long), BOOLEAN through bytes (unsigned char).
#include "decode.cuh"

#define DECODE_THREADS 256
#define DECODE_ITEMS 4

// const, for, dict and rle pages: every thread decodes its striped items of one tile.
template <typename T>
__global__ void decode_page_values(const unsigned char* data, T* out, i64 n) {
  EncodedPage p = encoded_page(data);
  const i64 tile = DECODE_THREADS * DECODE_ITEMS;
  for (i64 start = (i64)blockIdx.x * tile; start < n; start += (i64)gridDim.x * tile) {
    i64 left = n - start;
    int count = left < tile ? (int)left : (int)tile;
    T items[DECODE_ITEMS];
    if (p.codec == HETDB_CODEC_FOR) {
      load_tile_for<DECODE_THREADS, DECODE_ITEMS>(p, start, items, count);
    } else {
#pragma unroll
      for (int k = 0; k < DECODE_ITEMS; ++k) {
        int idx = k * DECODE_THREADS + threadIdx.x;
        if (idx < count) items[k] = (T)decode_value(p, start + idx);
      }
    }
#pragma unroll
    for (int k = 0; k < DECODE_ITEMS; ++k) {
      int idx = k * DECODE_THREADS + threadIdx.x;
      if (idx < count) out[start + idx] = items[k];
    }
  }
}

// delta pages: one thread block per 1024-value block at a time (cooperative scan in shared memory).
template <typename T>
__global__ void decode_page_delta(const unsigned char* data, T* out, i64 n) {
  __shared__ i64 smem[HETDB_DECODE_SMEM_I64];
  EncodedPage p = encoded_page(data);
  for (i64 b = blockIdx.x; b < bp_blocks(n); b += gridDim.x) {
    i64 start = b * HETDB_BP_BLOCK;
    i64 left = n - start;
    int count = left < HETDB_BP_BLOCK ? (int)left : HETDB_BP_BLOCK;
    delta_block_to_shared<DECODE_THREADS>(p, b, count, smem);
    for (int j = threadIdx.x; j < count; j += DECODE_THREADS) out[start + j] = (T)smem[j];
    __syncthreads();
  }
}

template __global__ void decode_page_values<int>(const unsigned char*, int*, i64);
template __global__ void decode_page_values<long long>(const unsigned char*, long long*, i64);
template __global__ void decode_page_values<unsigned char>(const unsigned char*, unsigned char*, i64);
template __global__ void decode_page_delta<int>(const unsigned char*, int*, i64);
template __global__ void decode_page_delta<long long>(const unsigned char*, long long*, i64);
template __global__ void decode_page_delta<unsigned char>(const unsigned char*, unsigned char*, i64);
