// Tile-based block primitives in the style of Crystal (Shanbhag et al., SIGMOD 2020).
//
// A thread block processes one tile of BLOCK_THREADS * ITEMS_PER_THREAD consecutive rows at a time;
// each thread holds ITEMS_PER_THREAD items in registers in a striped arrangement (item i of thread t is
// row tile_offset + t + i * BLOCK_THREADS) so that every load is coalesced. Each primitive has a
// full-tile fast path without bounds checks and a guarded path for the last, partial tile. Selection
// flags travel with the items: a predicate or probe clears flags, later stages only look at flagged
// items, and the tail's out-of-range items start with their flag cleared.
#pragma once
#include "common.cuh"

namespace tile {

// Number of valid rows in the tile starting at tile_offset.
__device__ __forceinline__ int tile_size(i64 n, i64 tile_offset, int tile_items) {
  i64 left = n - tile_offset;
  return left >= tile_items ? tile_items : (int)left;
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void BlockLoad(const T* __restrict__ in, T (&items)[ITEMS_PER_THREAD],
                                          int num_items) {
  const int t = threadIdx.x;
  if (num_items == BLOCK_THREADS * ITEMS_PER_THREAD) {
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = in[t + i * BLOCK_THREADS];
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
      int idx = t + i * BLOCK_THREADS;
      if (idx < num_items) items[i] = in[idx];
    }
  }
}

// Flags: 1 for rows inside the tile (and valid, when a validity array is given), else 0.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockInitFlags(const bool* __restrict__ valid,
                                               int (&flags)[ITEMS_PER_THREAD], int num_items) {
  const int t = threadIdx.x;
  if (num_items == BLOCK_THREADS * ITEMS_PER_THREAD) {
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i)
      flags[i] = valid == nullptr ? 1 : (valid[t + i * BLOCK_THREADS] ? 1 : 0);
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
      int idx = t + i * BLOCK_THREADS;
      flags[i] = idx < num_items ? (valid == nullptr ? 1 : (valid[idx] ? 1 : 0)) : 0;
    }
  }
}

// flags[i] &= pred(items[i]): a selection carried through from earlier stages.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T, typename Pred>
__device__ __forceinline__ void BlockPredAnd(const T (&items)[ITEMS_PER_THREAD],
                                             int (&flags)[ITEMS_PER_THREAD], Pred pred) {
#pragma unroll
  for (int i = 0; i < ITEMS_PER_THREAD; ++i) flags[i] = flags[i] && pred(items[i]);
}

// Probe an open-addressing table (slots hold build row indices, -1 = empty) for every flagged item;
// result[i] = matching slot or -1, and the flag is cleared when there is no match. Keys are verified in
// full against the build row, never by a sentinel key value.
template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
__device__ __forceinline__ void BlockProbe(const u64 (&hashes)[ITEMS_PER_THREAD], i64 tile_offset,
                                           const i64* __restrict__ probe_keys, i64 probe_n,
                                           const i64* __restrict__ build_keys, i64 build_n,
                                           const u64* __restrict__ build_hashes,
                                           const i64* __restrict__ slots, u64 mask, int num_keys,
                                           int (&flags)[ITEMS_PER_THREAD],
                                           i64 (&result)[ITEMS_PER_THREAD]) {
#pragma unroll
  for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
    result[i] = -1;
    if (!flags[i]) continue;
    const i64 row = tile_offset + threadIdx.x + i * BLOCK_THREADS;
    u64 s = hashes[i] & mask;
    while (true) {
      const i64 cand = slots[s];
      if (cand < 0) break;
      if (build_hashes[cand] == hashes[i] &&
          keys_equal(build_keys, build_n, cand, probe_keys, probe_n, row, num_keys)) {
        result[i] = (i64)s;
        break;
      }
      s = (s + 1) & mask;
    }
    flags[i] = result[i] >= 0;
  }
}

template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void BlockStore(T* __restrict__ out, const T (&items)[ITEMS_PER_THREAD],
                                           int num_items) {
  const int t = threadIdx.x;
  if (num_items == BLOCK_THREADS * ITEMS_PER_THREAD) {
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) out[t + i * BLOCK_THREADS] = items[i];
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
      int idx = t + i * BLOCK_THREADS;
      if (idx < num_items) out[idx] = items[i];
    }
  }
}

}  // namespace tile
