// Batched page decoding for a delivery of several row groups (backend/gpu/batch.py, laid out by
// batch_plan.py): one launch of each kernel per delivery, over the pages of every column. `base` is
// the delivery's one device buffer; `desc` its int64 page descriptors (offsets are byte offsets in
// the buffer). Grid: x = blocks per page (grid-stride over the page), y = pages; a block works on one
// page, so the cooperative tile loaders of decode.cuh see one tile per block as they require.
#include "decode.cuh"

#define BATCH_DECODE_THREADS 256
#define BATCH_DECODE_ITEMS 4

// desc per page: staging offset of its encoded data section, output offset, rows, value size (1, 4
// or 8 bytes: BOOLEAN bytes, int32/DATE/dictionary codes, int64/DECIMAL/FLOAT64 bit patterns).
extern "C" __global__ void decode_pages(unsigned char* base, const i64* desc) {
  __shared__ i64 smem[HETDB_DECODE_SMEM_I64_TILE(BATCH_DECODE_THREADS * BATCH_DECODE_ITEMS)];
  const i64* d = desc + 4 * (i64)blockIdx.y;
  const unsigned char* data = base + d[0];
  unsigned char* out = base + d[1];
  const i64 n = d[2];
  const int size = (int)d[3];
  const i64 tile = BATCH_DECODE_THREADS * BATCH_DECODE_ITEMS;
  for (i64 start = (i64)blockIdx.x * tile; start < n; start += (i64)gridDim.x * tile) {
    i64 left = n - start;
    int count = left < tile ? (int)left : (int)tile;
    long long items[BATCH_DECODE_ITEMS];
    load_tile_encoded<BATCH_DECODE_THREADS, BATCH_DECODE_ITEMS>(data, start, items, count, smem);
#pragma unroll
    for (int k = 0; k < BATCH_DECODE_ITEMS; ++k) {
      int idx = k * BATCH_DECODE_THREADS + threadIdx.x;
      if (idx < count) {
        i64 row = start + idx;
        if (size == 8) {
          ((long long*)out)[row] = items[k];
        } else if (size == 4) {
          ((int*)out)[row] = (int)items[k];
        } else {
          out[row] = (unsigned char)items[k];
        }
      }
    }
  }
}

// desc per page: staging offset of its validity bitmap (LSB first, 1 = valid) or -1 (no NULLs),
// output offset (one byte per row, bool), rows.
extern "C" __global__ void unpack_validity(unsigned char* base, const i64* desc) {
  const i64* d = desc + 3 * (i64)blockIdx.y;
  const i64 off = d[0], n = d[2];
  unsigned char* out = base + d[1];
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    out[i] = off < 0 ? (unsigned char)1 : (unsigned char)((base[off + (i >> 3)] >> (i & 7)) & 1);
  }
}

// desc per page: staging offset of its int64 offsets (n + 1 entries), output offset, rows, where its
// chars start in the column's concatenated chars, whether it is the column's last page. Each page
// writes its first n offsets; the last page also writes the end offset (no entry is written twice).
extern "C" __global__ void rebase_offsets(unsigned char* base, const i64* desc) {
  const i64* d = desc + 5 * (i64)blockIdx.y;
  const i64* src = (const i64*)(base + d[0]);
  i64* out = (i64*)(base + d[1]);
  const i64 n = d[2], chars = d[3];
  const i64 last = d[4] ? n + 1 : n;
  const i64 first = src[0];
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < last; i += (i64)gridDim.x * blockDim.x) {
    out[i] = src[i] - first + chars;
  }
}
