// Batched page decoding for a delivery of several row groups (backend/gpu/batch.py, laid out by
// batch_plan.py): one launch per column decodes, unpacks or rebases every page of the delivery.
// All pointers are into the delivery's one device buffer: `base` is its start, `desc` its int64 page
// descriptors, `out` the column's output array (spanning every row group of the delivery).
// Grid: x = blocks per page (grid-stride over the page), y = pages; a block works on one page, so
// the cooperative tile loaders of decode.cuh see one tile per block as they require.
#include "decode.cuh"

#define BATCH_DECODE_THREADS 256
#define BATCH_DECODE_ITEMS 4

// desc per page: staging offset of its encoded data section, first output row, rows.
template <typename T>
__global__ void decode_pages(const unsigned char* base, const i64* desc, T* out) {
  __shared__ i64 smem[HETDB_DECODE_SMEM_I64];
  const i64* d = desc + 3 * (i64)blockIdx.y;
  const unsigned char* data = base + d[0];
  T* o = out + d[1];
  const i64 n = d[2];
  const i64 tile = BATCH_DECODE_THREADS * BATCH_DECODE_ITEMS;
  for (i64 start = (i64)blockIdx.x * tile; start < n; start += (i64)gridDim.x * tile) {
    i64 left = n - start;
    int count = left < tile ? (int)left : (int)tile;
    T items[BATCH_DECODE_ITEMS];
    load_tile_encoded<BATCH_DECODE_THREADS, BATCH_DECODE_ITEMS>(data, start, items, count, smem);
#pragma unroll
    for (int k = 0; k < BATCH_DECODE_ITEMS; ++k) {
      int idx = k * BATCH_DECODE_THREADS + threadIdx.x;
      if (idx < count) o[start + idx] = items[k];
    }
  }
}

// desc per page: staging offset of its validity bitmap (LSB first, 1 = valid) or -1 (no NULLs),
// first output row, rows. out: one byte per row (bool).
extern "C" __global__ void unpack_validity(const unsigned char* base, const i64* desc, unsigned char* out) {
  const i64* d = desc + 3 * (i64)blockIdx.y;
  const i64 off = d[0], row0 = d[1], n = d[2];
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    out[row0 + i] = off < 0 ? (unsigned char)1 : (unsigned char)((base[off + (i >> 3)] >> (i & 7)) & 1);
  }
}

// desc per page: staging offset of its int64 offsets (n + 1 entries), first output row, rows, where
// its chars start in the column's concatenated chars. Each page writes its first n offsets; the last
// page also writes the end offset (so no two pages write the same entry).
extern "C" __global__ void rebase_offsets(const unsigned char* base, const i64* desc, i64* out) {
  const i64* d = desc + 4 * (i64)blockIdx.y;
  const i64* src = (const i64*)(base + d[0]);
  const i64 row0 = d[1], n = d[2], chars = d[3];
  const i64 last = blockIdx.y + 1 == gridDim.y ? n + 1 : n;
  const i64 first = src[0];
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < last; i += (i64)gridDim.x * blockDim.x) {
    out[row0 + i] = src[i] - first + chars;
  }
}

template __global__ void decode_pages<int>(const unsigned char*, const i64*, int*);
template __global__ void decode_pages<long long>(const unsigned char*, const i64*, long long*);
template __global__ void decode_pages<unsigned char>(const unsigned char*, const i64*, unsigned char*);
