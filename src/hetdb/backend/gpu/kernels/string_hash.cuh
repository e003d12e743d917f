// The hash and equality of strings as string key ids use them (backend/gpu/string_keys.py): shared by
// string_keys.cu (which builds the table of a join build's strings) and pipeline.cuh (whose kernels
// look plain-string probe keys up in it). Compiles under NVRTC and nvcc.
#pragma once
#include "common.cuh"

// Bytes of a string folded 8 at a time (little endian, the tail zero padded) through splitmix64, with
// the length mixed in so "a" and "a\0" differ.
__device__ __forceinline__ u64 string_hash(const unsigned char* p, i64 len) {
  u64 h = HETDB_HASH_SEED ^ (u64)len;
  i64 i = 0;
  for (; i + 8 <= len; i += 8) {
    u64 w = 0;
    for (int k = 7; k >= 0; --k) w = (w << 8) | (u64)p[i + k];
    h = splitmix64(h ^ w);
  }
  if (i < len) {
    u64 w = 0;
    for (i64 k = len - 1; k >= i; --k) w = (w << 8) | (u64)p[k];
    h = splitmix64(h ^ w ^ 0xFFULL);
  }
  return splitmix64(h);
}

__device__ __forceinline__ bool same_bytes(const unsigned char* a, const unsigned char* b, i64 len) {
  for (i64 i = 0; i < len; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// The id of string (s, len) in a string key table (store offsets/bytes/hashes, slots of ids, -1
// empty; at most half full), or -1 when the table does not hold it.
__device__ __forceinline__ i64 string_key_id(const unsigned char* s, i64 len, const i64* __restrict__ st_off,
                                             const unsigned char* __restrict__ st_chr,
                                             const u64* __restrict__ st_hash, const i64* __restrict__ slots,
                                             i64 mask) {
  const u64 h = string_hash(s, len);
  for (i64 slot = (i64)(h & (u64)mask);; slot = (slot + 1) & mask) {
    const i64 id = slots[slot];
    if (id < 0) return -1;
    if (st_hash[id] == h && st_off[id + 1] - st_off[id] == len && same_bytes(st_chr + st_off[id], s, len))
      return id;
  }
}
