// decode.cuh's rle tile loader (load_tile_rle) and its helpers. Included by decode.cuh after the
// random-access decoders it builds on: include decode.cuh, not this file.
#pragma once

// The run block holding row i, found by one warp without a barrier: lane k loads starts[g0 + k] of a
// window of 32 around the guess g and a ballot gives the last start at or before i (one round of
// loads; rle_block_of's gallop where the block lies outside the window). Every lane of the warp must
// call it (it returns the same block to all).
__device__ __forceinline__ i64 rle_block_of_warp(const RlePage& r, i64 i, i64 g) {
  const i64 nb = bp_blocks(r.runs);
  i64 g0 = g - 15;
  g0 = g0 > nb - 32 ? nb - 32 : g0;
  g0 = g0 < 0 ? 0 : g0;
  const i64 k = g0 + (threadIdx.x & 31);
  const unsigned int m = __ballot_sync(0xFFFFFFFFu, k < nb && HETDB_LDG(r.starts + k) <= i);
  // starts ascend from starts[0] = 0: the set lanes are a prefix of the window
  if ((m & 1u) != 0u && (m != 0xFFFFFFFFu || g0 + 32 >= nb)) return g0 + 31 - __clz((int)m);
  return rle_block_of(r, i);
}

// Shared memory of load_tile_rle (TILE values, in int64 slots): the tile's run values (the first half
// for types of up to 4 bytes, as 32-bit values; the whole area, TILE slots, as load_tile_delta's
// values, so that neither loader's first writes, before its first barrier, reach the other's values),
// one run-start bit per row, the run ends of a run block (1024 32-bit slots, one pad slot per 32 so
// that both the lane-ordered writes and each thread's RPT consecutive reads hit distinct banks:
// ends_slot), the warps' scan totals and row bases (at most 8 warps each).
template <int TILE>
struct RleTileSmem {
  static constexpr int VALS = TILE;
  static constexpr int WORDS = (TILE + 31) / 32;
  static constexpr int ENDS_AT = VALS + (WORDS + 1) / 2;
  static constexpr int TOT_AT = ENDS_AT + (HETDB_BP_BLOCK + HETDB_BP_BLOCK / 32) / 2;
};
__device__ __forceinline__ int ends_slot(int j) { return j + (j >> 5); }

// An rle page's tile. Per run block holding tile rows (one, or two where the tile straddles one's
// end): (1) the run lengths that can hold tile rows (at most tile_end - the block's first row: every
// run has a row) unpack lane by lane, each thread RPT = 1024 / BLOCK_THREADS consecutive rows of its
// lane's bit stream (a bit buffer, one coalesced word load per 32 bits: the warp's lanes are at the
// same bit positions) into a run-ordered array in shared memory; (2) thread t scans runs RPT t ..
// RPT t + RPT - 1 serially, one warp scan and the warp totals make them run ends (from the block's
// first row), written back in place; the barrier that publishes them counts the threads whose runs
// all end at or before the tile (__syncthreads_count), which locates the tile's first run; (3) the
// runs overlapping the tile, one per thread (consecutive runs: coalesced value loads), set the bit of
// their first row in a bitmap of the tile's rows and store their value there. Then every row takes
// the value at the last set bit at or before it: the bitmap word of 32 rows is the same for a whole
// warp (striped rows), so most rows need one shared load, a mask and a count of leading zeros. No
// search or scan per row, one value unpack per run. Barriers: three per run block (a warp reads back
// only the lengths it unpacked), none at the end (the next call's shared writes, but for the run
// lengths, follow its first barrier).
// LENGTH_UNROLL: rows of run lengths unpacked per iteration of (1) (1: the fewest registers).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T, int LENGTH_UNROLL = 1>
__device__ __forceinline__ void load_tile_rle(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                              i64* smem) {
  constexpr int TILE = BLOCK_THREADS * ITEMS_PER_THREAD, RPT = HETDB_BP_BLOCK / BLOCK_THREADS;
  constexpr int WARPS = BLOCK_THREADS / 32;
  using L = RleTileSmem<TILE>;
  static_assert(BLOCK_THREADS % 32 == 0 && HETDB_BP_BLOCK % BLOCK_THREADS == 0 && BLOCK_THREADS <= 256,
                "rle tiles: whole warps, at most 256 threads (HETDB_DECODE_SMEM_I64_TILE), dividing 1024");
  static_assert(TILE <= HETDB_BP_BLOCK, "tiles of at most 1024 values");
  static_assert(L::TOT_AT + WARPS <= HETDB_DECODE_SMEM_I64_TILE(TILE), "shared layout within HETDB_DECODE_SMEM_I64_TILE");
  if (n <= 0) return;
  unsigned int* vals32 = (unsigned int*)smem;
  i64* vals64 = smem;
  unsigned int* run_bits = (unsigned int*)(smem + L::VALS);
  unsigned int* ends = (unsigned int*)(smem + L::ENDS_AT);
  unsigned int* warp_tot = (unsigned int*)(smem + L::TOT_AT);
  unsigned int* warp_base = warp_tot + WARPS;
  // values of the window of runs (0): past the tile's 32-bit values, in the half of the values area
  // that types of up to 4 bytes leave free
  constexpr int WINDOW = sizeof(T) <= 4 && TILE >= 512 ? TILE / 2 : 0;
  unsigned int* win_vals = vals32 + TILE;
  const RlePage r = rle_page(p);
  const i64 blocks = bp_blocks(r.runs), tile_end = tile_start + n;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  bool first_block = true;
  // the guessed run block's directory entries load together with the search (its usual answer)
  const i64 g = rle_block_guess(r, tile_start);
  const BpBlock lg = bp_block(r.lengths, g), vg = bp_block(r.values, g);
  for (i64 b = rle_block_of_warp(r, tile_start, g); b < blocks; ++b) {
    const i64 lo_row = HETDB_LDG(r.starts + b);
    if (lo_row >= tile_end) break;
    i64 left = r.runs - b * HETDB_BP_BLOCK;
    left = left < HETDB_BP_BLOCK ? left : HETDB_BP_BLOCK;
    const int count = (int)(left < tile_end - lo_row ? left : tile_end - lo_row);
    const BpBlock lblk = b == g ? lg : bp_block(r.lengths, b), vblk = b == g ? vg : bp_block(r.values, b);
    // (0) types of up to 4 bytes, first run block: the values of a window of WINDOW runs from where
    // the tile's first run would lie if the block's runs were of equal length (less a margin) load
    // now, together with the run lengths (step 3 then finds most values in shared memory)
    unsigned int win[WINDOW / BLOCK_THREADS > 0 ? WINDOW / BLOCK_THREADS : 1];
    int w0 = 0;
    if (WINDOW > 0 && first_block) {
      const i64 next = b + 1 < blocks ? HETDB_LDG(r.starts + b + 1) : r.rows;
      const i64 s0 = tile_start - lo_row;  // (>= 0 in the first block)
      const i64 est = next > lo_row ? s0 * left / (next - lo_row) : 0;
      w0 = (int)(est - WINDOW / 8 > 0 ? est - WINDOW / 8 : 0) & ~31;
#pragma unroll
      for (int i = 0; i < WINDOW / BLOCK_THREADS; ++i) {
        const int j = w0 + i * BLOCK_THREADS + (int)threadIdx.x;
        win[i] = j < left ? bp_unpack32(r.values.words, vblk, (unsigned int)j) : 0u;
      }
    }
    // (1) lengths of rows q0 .. q0 + RPT - 1 of this lane (run j = 32 q + lane), 0 past count; a
    // warp whose runs all lie past count skips (1) and (2). The word after the first loads with it
    // (the next refill's; a refill then loads the one after: no load waited for in the loop where
    // RPT rows of lengths span at most two words).
    const int q0 = warp * RPT;
    const bool some = q0 * 32 < count;
    if (some && lblk.w != 0) {
      const unsigned int pos0 = (unsigned int)q0 * (unsigned int)lblk.w;
      const unsigned int* lw = r.lengths.words + lblk.off + lane;
      int kw = (int)(pos0 >> 5);  // the lane's word row holding the next bits
      u64 acc = HETDB_LDG(lw + kw * 32) >> (pos0 & 31);
      unsigned int nxt = kw + 1 < lblk.w ? HETDB_LDG(lw + (kw + 1) * 32) : 0u;
      int bits = 32 - (int)(pos0 & 31);
#pragma unroll LENGTH_UNROLL
      for (int i = 0; i < RPT; ++i) {
        if (bits < lblk.w) {  // (the same for the whole warp)
          acc |= (u64)nxt << bits;
          bits += 32;
          ++kw;
          nxt = kw + 1 < lblk.w ? HETDB_LDG(lw + (kw + 1) * 32) : 0u;
        }
        const int j = (q0 + i) * 32 + lane;
        ends[ends_slot(j)] = j < count ? (unsigned int)lblk.ref + ((unsigned int)acc & lblk.mask) : 0u;
        acc >>= lblk.w;
        bits -= lblk.w;
      }
    } else if (some) {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int j = (q0 + i) * 32 + lane;
        ends[ends_slot(j)] = j < count ? (unsigned int)lblk.ref : 0u;
      }
    }
    // (2) run ends from the warp's first run (they fit in 32 bits: a page has fewer than 2^32 rows),
    // and per warp the rows of the run block's earlier warps (warp_base). A warp reads back the runs
    // it wrote in (1) (runs 32 RPT warp .. 32 RPT warp + 32 RPT - 1 both ways): no block barrier.
    __syncwarp();
    unsigned int acc = 0, incl = 0;
    if (some) {
      unsigned int e[RPT];
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        acc += ends[ends_slot(threadIdx.x * RPT + i)];
        e[i] = acc;
      }
      incl = acc;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const unsigned int y = __shfl_up_sync(0xFFFFFFFFu, incl, d);
        if (lane >= d) incl += y;
      }
#pragma unroll
      for (int i = 0; i < RPT; ++i) ends[ends_slot(threadIdx.x * RPT + i)] = e[i] + (incl - acc);
    }
    if (lane == 31) warp_tot[warp] = incl;
    __syncthreads();
    if (first_block) {  // (after a barrier: the previous call's rows have read the bitmap and values)
      for (int w = threadIdx.x; w < L::WORDS; w += BLOCK_THREADS) run_bits[w] = 0u;
#pragma unroll
      for (int i = 0; i < WINDOW / BLOCK_THREADS; ++i) win_vals[i * BLOCK_THREADS + threadIdx.x] = win[i];
    }
    unsigned int wb = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
      if (w < warp) wb += warp_tot[w];
    }
    if (lane == 0) warp_base[warp] = wb;
    // the tile's first row from the block's (0 from the second block on); the runs ending at or
    // before it are a prefix: whole threads' (counted by the barrier), then part of one thread's
    const unsigned int s0 = tile_start > lo_row ? (unsigned int)(tile_start - lo_row) : 0u;
    const int whole = __syncthreads_count(wb + incl <= s0);
    int j = whole * RPT;
    const unsigned int base = warp_base[whole >> 5];
    while (j < count - 1 && ends[ends_slot(j)] + base <= s0) ++j;  // (< RPT steps, the same for every thread)
    // (3) runs j, j + 1, ... up to the one holding the tile's last row: one per thread
    const i64 rel = lo_row - tile_start;  // the block's first row from the tile's
    for (j += threadIdx.x; j < count; j += BLOCK_THREADS) {
      const i64 start = rel + (j > 0 ? ends[ends_slot(j - 1)] + warp_base[(j - 1) / (32 * RPT)] : 0u);
      if (start >= n) break;
      const int at = start > 0 ? (int)start : 0;
      atomicOr(run_bits + (at >> 5), 1u << (at & 31));
      if (sizeof(T) <= 4) {
        const int wj = j - w0;  // (its place in the window of prefetched values)
        vals32[at] = WINDOW > 0 && first_block && wj >= 0 && wj < WINDOW ? win_vals[wj]
                                                                         : bp_unpack32(r.values.words, vblk, (unsigned int)j);
      } else {
        vals64[at] = (i64)bp_unpack(r.values.words, vblk, j);
      }
    }
    __syncthreads();
    first_block = false;
  }
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    const int idx = k * BLOCK_THREADS + threadIdx.x;  // (rows past n find a run too: row 0's bit is set)
    int w = idx >> 5;
    unsigned int m = run_bits[w] & (0xFFFFFFFFu >> (31 - (idx & 31)));
    while (m == 0u && w > 0) m = run_bits[--w];
    const int at = m == 0u ? 0 : (w << 5) + 31 - __clz((int)m);
    if (idx < n) items[k] = sizeof(T) <= 4 ? decoded_as<T>((i64)(int)vals32[at]) : decoded_as<T>(vals64[at]);
  }
}
