// Kernels of scripts/gpu_decode_scan.py: one column scanned as the compiled paged pipelines scan it
// (tiles of SCAN_TILE rows, a page per SCAN_PAGE_ROWS rows, a filter and a sum per row), read from
// plain value arrays (pipe::PlainColumn) or in place from encoded pages (pipe::PageColumn: for, dict
// and const by random access at the row's use, delta and rle tiles decoded into registers first),
// so the two differ only in the decode; and through the reader of the one codec every page has
// (pipe::ForColumn / DictColumn, load_tile_delta / load_tile_rle: "typed", as the generated kernels
// over one row group read a page whose codec they were compiled for). Prepended by the script:
// pipeline.cuh (headers inlined), SCAN_MIN_BLOCKS (the kernels' minimum resident blocks per SM for
// __launch_bounds__: 0 leaves registers to the compiler) and SCAN_ITEMS (items per thread: tiles of
// 128 * SCAN_ITEMS rows, at most 1024).
#define SCAN_BLOCK 128
#ifndef SCAN_ITEMS
#define SCAN_ITEMS 4
#endif
#define SCAN_TILE (SCAN_BLOCK * SCAN_ITEMS)

// The rle tile loader before session 14 (for the A/B: "prev"): passes of 4 * BLOCK_THREADS run
// lengths from the run block's first run, the run block found by rle_block_of's gallop.
// The run ends of one pass over an rle run block: values j_first .. j_first + 4*BLOCK_THREADS - 1 of
// its lengths (block k of stream words; values at or past count count as 0), thread t holding the 4
// consecutive values j_first + 4t .. (4 consecutive lanes of one row of the lane layout: 4 consecutive
// words). Each thread sums its values serially; one warp scan (shuffles) and one pass over the warp
// totals in `warp_tot` (BLOCK_THREADS / 32 slots of shared memory; one barrier: a caller alternates
// two such areas between consecutive calls, and every thread of the block calls it) combine them.
// v[i]: carry + the sum of the pass's values up to j_first + 4t + i; before: carry + the sum before
// j_first + 4t (so value 4t+i is v[i] - (i ? v[i-1] : before)). Returns carry + the pass's sum. Run
// ends relative to their run block's first row fit in 32 bits (a page has fewer than 2^32 rows).
template <int BLOCK_THREADS>
__device__ __forceinline__ unsigned int scan_run_ends(const unsigned int* words, const BpBlock& k, int j_first, int count,
                                                      unsigned int carry, unsigned int (&v)[4], unsigned int& before,
                                                      unsigned int* warp_tot) {
  constexpr int WARPS = BLOCK_THREADS / 32;
  static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS <= 512, "tile loaders: whole warps, at most 512 threads");
  const int j0 = j_first + threadIdx.x * 4;
  unsigned int acc = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (j0 + i < count) acc += bp_unpack32(words, k, (unsigned int)(j0 + i));
    v[i] = acc;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned int incl = acc;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned int y = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl += y;
  }
  if (lane == 31) warp_tot[warp] = incl;
  __syncthreads();
  before = carry + (incl - acc);
  unsigned int total = carry;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    const unsigned int t = warp_tot[w];
    if (w < warp) before += t;
    total += t;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] += before;
  return total;
}

// An rle page's tile. Per block of 1024 runs holding tile rows, passes of 4 * BLOCK_THREADS runs
// (scan_run_ends) find the ends of its runs, until a pass ends past the tile or the runs that can
// hold tile rows (at most tile_end - the block's first row: every run has a row) are done; each run
// overlapping the tile sets the bit of its first row in the tile (the tile's first row for the run
// holding it) in a bitmap of the tile's rows and stores its value there (vals). Then every row takes
// the value at the last set bit at or before it: the bitmap word of 32 rows is the same for a whole
// warp (striped rows), so most rows need one shared load, a mask and a count of leading zeros, and
// rows of a run that started in an earlier word look back word by word. No search or scan per row,
// one value unpack per run. Barriers: one per pass, one before the rows read, one at the end (the
// next call clears the bitmap first).
template <int BLOCK_THREADS, int ITEMS_PER_THREAD, typename T>
__device__ __forceinline__ void load_tile_rle_passes(const EncodedPage& p, i64 tile_start, T (&items)[ITEMS_PER_THREAD], int n,
                                              i64* smem) {
  constexpr int TILE = BLOCK_THREADS * ITEMS_PER_THREAD, PASS = 4 * BLOCK_THREADS;
  constexpr int WARPS = BLOCK_THREADS / 32, WORDS = (TILE + 31) / 32;
  static_assert(TILE <= HETDB_BP_BLOCK, "tiles of at most 1024 values");
  if (n <= 0) return;
  i64* vals = smem;
  unsigned int* run_bits = (unsigned int*)(smem + TILE);             // WORDS words
  unsigned int* scan_tot = (unsigned int*)(smem + TILE + TILE / 4);  // 2 areas of WARPS
  for (int w = threadIdx.x; w < WORDS; w += BLOCK_THREADS) run_bits[w] = 0u;
  const RlePage r = rle_page(p);
  const i64 blocks = bp_blocks(r.runs), tile_end = tile_start + n;
  int area = 0;
  for (i64 b = rle_block_of(r, tile_start); b < blocks; ++b) {
    const i64 lo_row = HETDB_LDG(r.starts + b);
    if (lo_row >= tile_end) break;
    const i64 first = b * HETDB_BP_BLOCK;
    i64 count = r.runs - first < HETDB_BP_BLOCK ? r.runs - first : HETDB_BP_BLOCK;
    if (count > tile_end - lo_row) count = tile_end - lo_row;
    const BpBlock lblk = bp_block(r.lengths, b), vblk = bp_block(r.values, b);
    const i64 rel = lo_row - tile_start;  // the run block's first row from the tile's (>= -2^32)
    unsigned int carry = 0;  // rows of the runs of earlier passes
    for (int j_first = 0; j_first < count && rel + carry < n; j_first += PASS) {
      unsigned int end[4], before;
      carry = scan_run_ends<BLOCK_THREADS>(r.lengths.words, lblk, j_first, (int)count, carry, end, before,
                                           scan_tot + area * WARPS);
      area ^= 1;
      const int j0 = j_first + threadIdx.x * 4;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const i64 run_start = rel + (i ? end[i - 1] : before), run_end = rel + end[i];
        if (j0 + i < count && run_end > run_start && run_end > 0 && run_start < n) {
          const int at = run_start > 0 ? (int)run_start : 0;
          atomicOr(run_bits + (at >> 5), 1u << (at & 31));
          vals[at] = sizeof(T) <= 4 ? (i64)bp_unpack32(r.values.words, vblk, (unsigned int)(j0 + i))
                                    : (i64)bp_unpack(r.values.words, vblk, j0 + i);
        }
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < ITEMS_PER_THREAD; ++k) {
    const int idx = k * BLOCK_THREADS + threadIdx.x;  // (rows past n find a run too: row 0's bit is set)
    int w = idx >> 5;
    unsigned int m = run_bits[w] & (0xFFFFFFFFu >> (31 - (idx & 31)));
    while (m == 0u && w > 0) m = run_bits[--w];
    const int at = m == 0u ? 0 : (w << 5) + 31 - __clz((int)m);
    if (idx < n) items[k] = decoded_as<T>(vals[at]);
  }
  __syncthreads();
}


__device__ __forceinline__ void scan_flush(long long cnt, long long sum, unsigned long long* out) {
  for (int d = 16; d > 0; d >>= 1) {
    cnt += __shfl_down_sync(0xFFFFFFFFu, cnt, d);
    sum += __shfl_down_sync(0xFFFFFFFFu, sum, d);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(out, (unsigned long long)cnt);
    atomicAdd(out + 1, (unsigned long long)sum);
  }
}

// ptrs[p]: page p's value array (enc[p] 0) or encoded data section (enc[p] its codec id); pages of page_rows
// rows (the last one shorter); counts and sums the values in [lo, hi] into out[0], out[1].
// MODE 0: plain value arrays; 1: encoded pages through pipe::PageColumn (as compiled paged pipelines
// read them); 2: encoded pages, every tile decoded into registers first (load_tile_encoded); 3: the
// reader of codec CODEC (every page has it); 5: for/dict pages through load_tile_sel (as the fused
// kernels read them, every row flagged); 4 (for pages, an experiment): each thread unpacks
// SCAN_ITEMS consecutive rows of its lane of the block's lane layout sequentially (one word load per
// 32 bits, a bit buffer and shifts: a warp's lanes are at the same bit positions, so loads stay
// coalesced and the refill branch uniform) into shared memory, then reads its striped rows there.
template <typename T, int MODE, int CODEC = 0>
__device__ __forceinline__ void scan_pages(const long long* __restrict__ ptrs, const long long* __restrict__ enc,
                                           long long page_rows, long long n, T lo, T hi, unsigned long long* out) {
  __shared__ i64 smem[HETDB_DECODE_SMEM_I64_TILE(SCAN_TILE)];
  const long long tiles_per_page = (page_rows + SCAN_TILE - 1) / SCAN_TILE;
  const long long pages = (n + page_rows - 1) / page_rows;
  const long long last_rows = n - (pages - 1) * page_rows;
  const long long num_tiles = (pages - 1) * tiles_per_page + (last_rows + SCAN_TILE - 1) / SCAN_TILE;
  long long cnt = 0, sum = 0;
  for (long long t = blockIdx.x; t < num_tiles; t += gridDim.x) {
    const long long p = t / tiles_per_page;
    const long long first = (t - p * tiles_per_page) * SCAN_TILE;
    const long long rows = p == pages - 1 ? last_rows : page_rows;
    const int num = rows - first < SCAN_TILE ? (int)(rows - first) : SCAN_TILE;
    if (MODE == 0) {
      const pipe::PlainColumn<T> col{(const T*)ptrs[p]};
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) {
        const int idx = threadIdx.x + it * SCAN_BLOCK;
        if (idx >= num) continue;
        const T v = col.load(first + idx);
        if (v >= lo && v <= hi) {
          cnt += 1;
          sum += (long long)v;
        }
      }
    } else if (MODE == 3) {
      const unsigned char* data = (const unsigned char*)ptrs[p];
      T tl[SCAN_ITEMS];
      if (CODEC == HETDB_CODEC_FOR) {
        const pipe::ForColumn<T> col(data, first);
#pragma unroll
        for (int it = 0; it < SCAN_ITEMS; ++it) {
          const int idx = threadIdx.x + it * SCAN_BLOCK;
          if (idx < num) tl[it] = col.load(first + idx);
        }
      } else if (CODEC == HETDB_CODEC_DICT) {
        const pipe::DictColumn<T> col(data, first);
#pragma unroll
        for (int it = 0; it < SCAN_ITEMS; ++it) {
          const int idx = threadIdx.x + it * SCAN_BLOCK;
          if (idx < num) tl[it] = col.load(first + idx);
        }
      } else if (CODEC == HETDB_CODEC_DELTA) {
        load_tile_delta<SCAN_BLOCK, SCAN_ITEMS>(encoded_page(data), first, tl, num, smem);
      } else if (CODEC == HETDB_CODEC_RLE) {
        load_tile_rle<SCAN_BLOCK, SCAN_ITEMS>(encoded_page(data), first, tl, num, smem);
      } else if (CODEC == 100 + HETDB_CODEC_RLE) {  // (the run lengths' unpack loop unrolled)
        load_tile_rle<SCAN_BLOCK, SCAN_ITEMS, T, HETDB_BP_BLOCK / SCAN_BLOCK>(encoded_page(data), first, tl, num, smem);
      } else {  // (-HETDB_CODEC_RLE: the previous rle loader)
        load_tile_rle_passes<SCAN_BLOCK, SCAN_ITEMS>(encoded_page(data), first, tl, num, smem);
      }
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) {
        const int idx = threadIdx.x + it * SCAN_BLOCK;
        if (idx < num && tl[it] >= lo && tl[it] <= hi) {
          cnt += 1;
          sum += (long long)tl[it];
        }
      }
    } else if (MODE == 2) {
      T tl[SCAN_ITEMS];
      load_tile_encoded<SCAN_BLOCK, SCAN_ITEMS>((const unsigned char*)ptrs[p], first, tl, num, smem);
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) {
        const int idx = threadIdx.x + it * SCAN_BLOCK;
        if (idx < num && tl[it] >= lo && tl[it] <= hi) {
          cnt += 1;
          sum += (long long)tl[it];
        }
      }
    } else if (MODE == 5) {  // load_tile_sel (the fused kernels' for/dict reader), every row flagged
      T tl[SCAN_ITEMS];
      int flags[SCAN_ITEMS];
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) flags[it] = threadIdx.x + it * SCAN_BLOCK < num;
      load_tile_sel<SCAN_BLOCK, SCAN_ITEMS>(encoded_page((const unsigned char*)ptrs[p]), first, tl, flags);
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) {
        const int idx = threadIdx.x + it * SCAN_BLOCK;
        if (idx < num && tl[it] >= lo && tl[it] <= hi) {
          cnt += 1;
          sum += (long long)tl[it];
        }
      }
    } else if (MODE == 4) {
      T* vals = (T*)smem;
      const EncodedPage pg = encoded_page((const unsigned char*)ptrs[p]);
      const BpStream st = bp_stream(pg.body, pg.n);
      const BpBlock k = bp_block(st, first >> 10);
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
      const int row0 = (int)((first & (HETDB_BP_BLOCK - 1)) >> 5) + warp * SCAN_ITEMS;  // of the lane layout
      if (k.w == 0 || k.w > 32) {  // (a constant block, or one wider than a word: random access)
#pragma unroll
        for (int i = 0; i < SCAN_ITEMS; ++i)
          vals[(warp * SCAN_ITEMS + i) * 32 + lane] = bp_value<T>(st.words, k, (unsigned int)((row0 + i) * 32 + lane));
      } else {
        const unsigned int pos0 = (unsigned int)row0 * (unsigned int)k.w;
        const unsigned int* lw = st.words + k.off + lane + (pos0 >> 5) * 32;
        u64 acc = HETDB_LDG(lw) >> (pos0 & 31);
        int bits = 32 - (int)(pos0 & 31);
#pragma unroll
        for (int i = 0; i < SCAN_ITEMS; ++i) {
          if (bits < k.w) {  // (the same for the whole warp)
            lw += 32;
            acc |= (u64)HETDB_LDG(lw) << bits;
            bits += 32;
          }
          const unsigned int x = (unsigned int)acc & k.mask;
          acc >>= k.w;
          bits -= k.w;
          vals[(warp * SCAN_ITEMS + i) * 32 + lane] = sizeof(T) <= 4 ? (T)((unsigned int)k.ref + x) : (T)(k.ref + x);
        }
      }
      __syncthreads();
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) {
        const int idx = threadIdx.x + it * SCAN_BLOCK;
        if (idx < num && vals[idx] >= lo && vals[idx] <= hi) {
          cnt += 1;
          sum += (long long)vals[idx];
        }
      }
      __syncthreads();
    } else {
      const pipe::PageColumn<T> col{(const unsigned char*)ptrs[p], enc[p], first};
      T tl[SCAN_ITEMS];
      const bool tt = col.tiled();
      if (tt) col.template load_tile<SCAN_BLOCK, SCAN_ITEMS>(first, tl, num, smem);
#pragma unroll
      for (int it = 0; it < SCAN_ITEMS; ++it) {
        const int idx = threadIdx.x + it * SCAN_BLOCK;
        if (idx >= num) continue;
        const T v = tt ? tl[it] : col.load(first + idx);
        if (v >= lo && v <= hi) {
          cnt += 1;
          sum += (long long)v;
        }
      }
    }
  }
  scan_flush(cnt, sum, out);
}

#if SCAN_MIN_BLOCKS > 0
#define SCAN_BOUNDS __launch_bounds__(SCAN_BLOCK, SCAN_MIN_BLOCKS)
#else
#define SCAN_BOUNDS __launch_bounds__(SCAN_BLOCK)
#endif
#define SCAN_KERNEL(NAME, T, ...)                                                                         \
  extern "C" __global__ void SCAN_BOUNDS NAME(const long long* ptrs, const long long* enc, long long page_rows, \
                                              long long n, T lo, T hi, unsigned long long* out) {          \
    scan_pages<T, __VA_ARGS__>(ptrs, enc, page_rows, n, lo, hi, out);                                      \
  }
SCAN_KERNEL(scan_plain_i32, int, 0)
SCAN_KERNEL(scan_paged_i32, int, 1)
SCAN_KERNEL(scan_eager_i32, int, 2)
SCAN_KERNEL(scan_for_i32, int, 3, HETDB_CODEC_FOR)
SCAN_KERNEL(scan_dict_i32, int, 3, HETDB_CODEC_DICT)
SCAN_KERNEL(scan_delta_i32, int, 3, HETDB_CODEC_DELTA)
SCAN_KERNEL(scan_rle_i32, int, 3, HETDB_CODEC_RLE)
SCAN_KERNEL(scan_prev_i32, int, 3, -HETDB_CODEC_RLE)
SCAN_KERNEL(scan_unrl_i32, int, 3, 100 + HETDB_CODEC_RLE)
SCAN_KERNEL(scan_lanes_i32, int, 4)
SCAN_KERNEL(scan_sel_i32, int, 5)
SCAN_KERNEL(scan_plain_i64, long long, 0)
SCAN_KERNEL(scan_paged_i64, long long, 1)
SCAN_KERNEL(scan_eager_i64, long long, 2)
SCAN_KERNEL(scan_for_i64, long long, 3, HETDB_CODEC_FOR)
SCAN_KERNEL(scan_dict_i64, long long, 3, HETDB_CODEC_DICT)
SCAN_KERNEL(scan_delta_i64, long long, 3, HETDB_CODEC_DELTA)
SCAN_KERNEL(scan_rle_i64, long long, 3, HETDB_CODEC_RLE)
SCAN_KERNEL(scan_prev_i64, long long, 3, -HETDB_CODEC_RLE)
SCAN_KERNEL(scan_unrl_i64, long long, 3, 100 + HETDB_CODEC_RLE)
SCAN_KERNEL(scan_lanes_i64, long long, 4)
SCAN_KERNEL(scan_sel_i64, long long, 5)
