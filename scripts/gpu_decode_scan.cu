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
// reader of codec CODEC (every page has it); 4 (for pages, an experiment): each thread unpacks
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
      } else {
        load_tile_rle<SCAN_BLOCK, SCAN_ITEMS>(encoded_page(data), first, tl, num, smem);
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
SCAN_KERNEL(scan_lanes_i32, int, 4)
SCAN_KERNEL(scan_plain_i64, long long, 0)
SCAN_KERNEL(scan_paged_i64, long long, 1)
SCAN_KERNEL(scan_eager_i64, long long, 2)
SCAN_KERNEL(scan_for_i64, long long, 3, HETDB_CODEC_FOR)
SCAN_KERNEL(scan_dict_i64, long long, 3, HETDB_CODEC_DICT)
SCAN_KERNEL(scan_delta_i64, long long, 3, HETDB_CODEC_DELTA)
SCAN_KERNEL(scan_rle_i64, long long, 3, HETDB_CODEC_RLE)
SCAN_KERNEL(scan_lanes_i64, long long, 4)
