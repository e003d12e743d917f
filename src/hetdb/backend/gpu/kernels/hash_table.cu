// Open-addressing hash table over normalised composite keys, shared by hash joins and GROUP BY.
//
// slots[s] holds the index of one row whose key lives in slot s, or -1 when empty; -1 is a row-index
// sentinel, never a key value, so every key (including 0 and -1) is storable. Equality is always
// verified on the full composite key. Rows with equal keys share one slot (find-or-insert), which is
// how duplicates are supported: the join groups a slot's rows afterwards (CSR), GROUP BY numbers slots.
#include "common.cuh"
#include "tile.cuh"

#define HT_BLOCK 256
#define HT_ITEMS 4

// Find-or-insert every row: row_slot[i] = slot of row i's key. When slot_first is given, it receives the
// smallest row index per slot (first appearance, used to renumber groups like the CPU backend).
extern "C" __global__ void table_insert(const i64* __restrict__ keys, int num_keys, i64 n,
                                        const u64* __restrict__ hashes, i64* slots, u64 mask,
                                        i64* __restrict__ row_slot, i64* slot_first) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    const u64 h = hashes[i];
    u64 s = h & mask;
    while (true) {
      i64 cur = slots[s];
      if (cur < 0) {
        cur = (i64)atomicCAS((u64*)&slots[s], (u64)(-1LL), (u64)i);
        if (cur < 0) break;  // this row now represents the slot
      }
      if (hashes[cur] == h && keys_equal(keys, n, cur, keys, n, i, num_keys)) break;
      s = (s + 1) & mask;
    }
    row_slot[i] = (i64)s;
    if (slot_first != nullptr) atomicMin(&slot_first[s], i);
  }
}

// Probe: match_slot[j] = slot holding probe row j's key, or -1. Tile-based (load hashes, probe, store).
extern "C" __global__ void __launch_bounds__(HT_BLOCK) table_probe(
    const i64* __restrict__ probe_keys, i64 probe_n, const u64* __restrict__ probe_hashes,
    const i64* __restrict__ build_keys, i64 build_n, const u64* __restrict__ build_hashes,
    const i64* __restrict__ slots, u64 mask, int num_keys, i64* __restrict__ match_slot) {
  const int tile_items = HT_BLOCK * HT_ITEMS;
  for (i64 off = (i64)blockIdx.x * tile_items; off < probe_n; off += (i64)gridDim.x * tile_items) {
    const int num = tile::tile_size(probe_n, off, tile_items);
    u64 hashes[HT_ITEMS];
    int flags[HT_ITEMS];
    i64 result[HT_ITEMS];
    tile::BlockLoad<HT_BLOCK, HT_ITEMS>(probe_hashes + off, hashes, num);
    tile::BlockInitFlags<HT_BLOCK, HT_ITEMS>(nullptr, flags, num);
    tile::BlockProbe<HT_BLOCK, HT_ITEMS>(hashes, off, probe_keys, probe_n, build_keys, build_n,
                                         build_hashes, slots, mask, num_keys, flags, result);
    tile::BlockStore<HT_BLOCK, HT_ITEMS>(match_slot + off, result, num);
  }
}

// Fill pass of the join: probe row j writes its pairs at out_offsets[j] (exclusive scan of the counts).
// A slot's build rows are slot_rows[slot_start[s] .. + slot_count[s]) in ascending row order, so pairs
// come out grouped by probe row ascending and, within one, by build row ascending. With emit_unmatched
// (LEFT join) an unmatched probe row writes one pair with build index -1.
extern "C" __global__ void join_fill(const i64* __restrict__ match_slot, i64 probe_n,
                                     const i64* __restrict__ slot_start,
                                     const i64* __restrict__ slot_count,
                                     const i64* __restrict__ slot_rows,
                                     const i64* __restrict__ out_offsets, int emit_unmatched,
                                     i64* __restrict__ out_probe, i64* __restrict__ out_build) {
  for (i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x; j < probe_n;
       j += (i64)gridDim.x * blockDim.x) {
    const i64 s = match_slot[j];
    i64 o = out_offsets[j];
    if (s < 0) {
      if (emit_unmatched) {
        out_probe[o] = j;
        out_build[o] = -1;
      }
      continue;
    }
    const i64 start = slot_start[s];
    const i64 count = slot_count[s];
    for (i64 t = 0; t < count; ++t, ++o) {
      out_probe[o] = j;
      out_build[o] = slot_rows[start + t];
    }
  }
}
