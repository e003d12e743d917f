// Building blocks of kernels made by the general pipeline compiler (hetdb/backend/gpu/codegen/
// pipeline_gen.py): column page loads behind a decode abstraction, validity, hash-table probes of
// join builds (GpuJoinTable of hashing.py) and find-or-insert into a hash-aggregation table.
// The generated kernel is per-row code inside a Crystal-style striped tile loop; everything with a
// loop lives here. Compiles under NVRTC and nvcc.
#pragma once
#include "common.cuh"
#include "decode.cuh"
#include "fused_pipeline.cuh"
#include "string_hash.cuh"

namespace pipe {

// One column of the rows a launch reads. load(row) returns the decoded value of a row: plain pages
// are the identity decode (a load from the value array); compressed page kinds decode here, so the
// generated code never changes with a page's encoding.
template <typename T>
struct PlainColumn {
  const T* __restrict__ values;
  __device__ __forceinline__ T load(i64 row) const { return values[row]; }
};

// Compressed pages read in place (decode.cuh; layout in docs/storage-format.md): the kernel gets the
// page's encoded data section instead of a value array, and load(row) decodes one value by random
// access. delta and rle pages are not random-access: the generated kernel decodes their tile into
// registers with load_tile_delta / load_tile_rle before its row loop.
template <typename T>
struct ConstColumn {
  T value;
  __device__ __forceinline__ explicit ConstColumn(const unsigned char* data)
      : value(decoded_as<T>(encoded_page(data).param)) {}
  __device__ __forceinline__ T load(i64) const { return value; }
};

// for and dict columns are made per tile (`first`: the tile's first row) and load that row's block
// directory entry once, so load(row) of a row of that block is one or two coalesced word loads and
// shifts in 32-bit arithmetic (bp_value; a row of another block reads its own entry). Rows of a page
// fit in 32 bits, so the row's place in the block is one 32-bit subtraction and compare.
template <typename T>
struct ForColumn {
  BpStream values;
  BpBlock blk;
  unsigned int blk_first;  // first row of block blk
  __device__ __forceinline__ ForColumn(const unsigned char* data, i64 first) : blk(), blk_first(0u) {
    const EncodedPage p = encoded_page(data);
    values = bp_stream(p.body, p.n);
    if (first < p.n) {
      blk_first = (unsigned int)first & ~(unsigned int)(HETDB_BP_BLOCK - 1);
      blk = bp_block(values, first >> 10);
    }
  }
  __device__ __forceinline__ T load(i64 row) const {
    unsigned int j = (unsigned int)row - blk_first;
    if (j < HETDB_BP_BLOCK) return bp_value<T>(values.words, blk, j);
    return bp_value<T>(values.words, bp_block(values, row >> 10), (unsigned int)row & (HETDB_BP_BLOCK - 1));
  }
};

template <typename T>
struct DictColumn {
  const i64* __restrict__ values;
  BpStream codes;
  BpBlock blk;
  unsigned int blk_first;
  __device__ __forceinline__ DictColumn(const unsigned char* data, i64 first) : blk(), blk_first(0u) {
    const EncodedPage p = encoded_page(data);
    values = (const i64*)p.body;
    codes = bp_stream(p.body + 8 * p.param, p.n);
    if (first < p.n) {
      blk_first = (unsigned int)first & ~(unsigned int)(HETDB_BP_BLOCK - 1);
      blk = bp_block(codes, first >> 10);
    }
  }
  __device__ __forceinline__ T load(i64 row) const {
    unsigned int j = (unsigned int)row - blk_first;
    if (j < HETDB_BP_BLOCK) return decoded_as<T>(HETDB_LDG(values + bp_unpack32(codes.words, blk, j)));
    return decoded_as<T>(HETDB_LDG(values + bp_unpack32(codes.words, bp_block(codes, row >> 10),
                                                       (unsigned int)row & (HETDB_BP_BLOCK - 1))));
  }
};

// One column's page in a page table (a paged kernel: one launch over many row groups), read in
// place whatever the page's kind: `codec` 0 means `data` is the value array, else it is the codec id
// (HETDB_CODEC_*) of the page's encoded data section (decode.cuh; the fused kernels' page tables
// say the same: fused::BlockLoadSelPage). Made per tile: `first` is the tile's first row in the
// page (< its rows), whose 1024-value block's directory entry (for, dict) is loaded once here (for a
// for page together with the header: its place does not depend on it), so load(row) of a row of
// that block is one or two coalesced word loads and shifts in 32-bit arithmetic (the kind branches
// are the same for every thread of a block, since a tile lies in one page). delta and rle pages are
// not random-access: tiled() says so, and the generated kernel decodes their tile into registers
// with load_tile (every thread of the block together) before its row loop; load() never reads them
// (page_table refuses such a page for an input that is not "paged_tile").
#define PIPE_PAGE_PLAIN 0
#define PIPE_PAGE_PACKED 1  // for
#define PIPE_PAGE_DICT 2
#define PIPE_PAGE_CONST 3
#define PIPE_PAGE_TILED 4   // delta, rle
template <typename T>
struct PageColumn {
  const unsigned char* __restrict__ data;
  EncodedPage page;
  int kind;
  BpStream stream;         // for: the values; dict: the codes
  const i64* dict;         // dict: the dictionary's values
  BpBlock blk;             // the directory entry of the block holding row blk_first
  unsigned int blk_first;
  __device__ __forceinline__ PageColumn(const unsigned char* ptr, long long codec, i64 first = 0)
      : data(ptr), page(), kind(PIPE_PAGE_PLAIN), stream(), dict(nullptr), blk(), blk_first(0u) {
    if (codec == 0) return;
    blk_first = (unsigned int)first & ~(unsigned int)(HETDB_BP_BLOCK - 1);
    if (codec == HETDB_CODEC_FOR) {
      kind = PIPE_PAGE_PACKED;
      blk = bp_block(BpStream{(const unsigned int*)(ptr + HETDB_CODEC_HEADER), nullptr}, first >> 10);
      page = encoded_page(ptr);
      stream = bp_stream(page.body, page.n);
      return;
    }
    page = encoded_page(ptr);
    if (codec == HETDB_CODEC_DICT) {
      kind = PIPE_PAGE_DICT;
      dict = (const i64*)page.body;
      stream = bp_stream(page.body + 8 * page.param, page.n);
      blk = bp_block(stream, first >> 10);
    } else {
      kind = codec == HETDB_CODEC_CONST ? PIPE_PAGE_CONST : PIPE_PAGE_TILED;
    }
  }
  __device__ __forceinline__ bool tiled() const { return kind == PIPE_PAGE_TILED; }
  __device__ __forceinline__ T load(i64 row) const {
    if (kind == PIPE_PAGE_PLAIN) return ((const T*)data)[row];
    if (kind == PIPE_PAGE_CONST) return decoded_as<T>(page.param);
    unsigned int j = (unsigned int)row - blk_first;
    BpBlock k = blk;
    if (j >= HETDB_BP_BLOCK) {
      k = bp_block(stream, row >> 10);
      j = (unsigned int)row & (HETDB_BP_BLOCK - 1);
    }
    if (kind == PIPE_PAGE_DICT) return decoded_as<T>(HETDB_LDG(dict + bp_unpack32(stream.words, k, j)));
    return bp_value<T>(stream.words, k, j);
  }
  template <int BLOCK_THREADS, int ITEMS_PER_THREAD>
  __device__ __forceinline__ void load_tile(i64 tile_start, T (&items)[ITEMS_PER_THREAD], int num, i64* smem) const {
    if (page.codec == HETDB_CODEC_DELTA) {
      load_tile_delta<BLOCK_THREADS, ITEMS_PER_THREAD>(page, tile_start, items, num, smem);
    } else {
      load_tile_rle<BLOCK_THREADS, ITEMS_PER_THREAD>(page, tile_start, items, num, smem);
    }
  }
};

// Validity as one byte per row (Column.validity on the device); a null pointer means "no NULLs".
__device__ __forceinline__ bool is_valid(const bool* __restrict__ valid, i64 row) {
  return valid == nullptr || valid[row];
}

// Row hash of normalised key bits, as hash_rows in hash.cu: h = splitmix64(h ^ bits) per key.
__device__ __forceinline__ u64 hash_step(u64 h, i64 bits) { return splitmix64(h ^ (u64)bits); }

// Build side of a hash join (hashing.py GpuJoinTable): the slot whose key equals `bits` (num_keys
// normalised keys of the probe row, hash h), or -1. Keys are compared in full, never by sentinel.
template <int MAX_KEYS>
__device__ __forceinline__ i64 probe_slot(const i64* __restrict__ slots, u64 mask,
                                          const i64* __restrict__ build_keys, i64 build_n,
                                          const u64* __restrict__ build_hashes, int num_keys,
                                          const i64 (&bits)[MAX_KEYS], u64 h) {
  if (build_n == 0) return -1;
  u64 s = h & mask;
  while (true) {
    const i64 cand = slots[s];
    if (cand < 0) return -1;
    if (build_hashes[cand] == h) {
      bool eq = true;
      for (int c = 0; c < num_keys; ++c) eq = eq && build_keys[(i64)c * build_n + cand] == bits[c];
      if (eq) return (i64)s;
    }
    s = (s + 1) & mask;
  }
}

// Hash-aggregation table: `state[s]` is 0 (empty), 1 (being written) or 2 (keys published);
// `keys` holds num_keys key bits plus one word of key validity bits per slot (column-major,
// capacity rows). Returns the slot of the row's group, or -1 when the table is too full (the
// launch then reports overflow and the host reruns it with a larger table).
template <int MAX_KEYS>
__device__ __forceinline__ i64 group_slot(int* __restrict__ state, i64* __restrict__ keys, u64 mask,
                                          int num_keys, const i64 (&bits)[MAX_KEYS], i64 null_bits, u64 h,
                                          unsigned long long* __restrict__ used, u64 max_used,
                                          unsigned long long* __restrict__ overflow) {
  const i64 cap = (i64)mask + 1;
  u64 s = h & mask;
  for (i64 step = 0; step < cap; ++step) {
    int st = ((volatile int*)state)[s];
    if (st == 0) {
      if (atomicCAS(&state[s], 0, 1) == 0) {
        if (atomicAdd(used, 1ULL) >= max_used) {
          atomicExch(&state[s], 0);  // leave the slot empty: this launch is rerun anyway
          atomicAdd(overflow, 1ULL);
          return -1;
        }
        for (int c = 0; c < num_keys; ++c) keys[(i64)c * cap + s] = bits[c];
        keys[(i64)num_keys * cap + s] = null_bits;
        __threadfence();
        atomicExch(&state[s], 2);
        return (i64)s;
      }
      st = ((volatile int*)state)[s];
    }
    while (st == 1) st = ((volatile int*)state)[s];  // another thread publishes this slot's keys
    if (st == 2) {
      __threadfence();
      const volatile i64* vk = keys;
      bool eq = vk[(i64)num_keys * cap + s] == null_bits;
      for (int c = 0; c < num_keys && eq; ++c) eq = vk[(i64)c * cap + s] == bits[c];
      if (eq) return (i64)s;
    } else {
      continue;  // the slot was given back (overflow elsewhere): try it again
    }
    s = (s + 1) & mask;
  }
  atomicAdd(overflow, 1ULL);
  return -1;
}

// Floor division (Python's //) for a positive divisor.
__device__ __forceinline__ i64 floor_div(i64 a, i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Proleptic Gregorian (year, month, day) of days since 1970-01-01; part 0 year, 1 month, 2 day
// (the same arithmetic as exec/expr_functions.civil_from_days).
__device__ __forceinline__ i64 civil_part(i64 days, int part) {
  const i64 z = days + 719468;
  const i64 era = floor_div(z, 146097);
  const i64 doe = z - era * 146097;
  const i64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const i64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const i64 mp = (5 * doy + 2) / 153;
  const i64 d = doy - (153 * mp + 2) / 5 + 1;
  const i64 m = mp < 10 ? mp + 3 : mp - 9;
  if (part == 2) return d;
  if (part == 1) return m;
  return yoe + era * 400 + (m <= 2 ? 1 : 0);
}

// Output position of the calling thread among the threads of its warp that call it together:
// one atomicAdd per warp (warp-aggregated), positions in lane order.
__device__ __forceinline__ unsigned long long claim(unsigned long long* __restrict__ counter) {
  const unsigned mask = __activemask();
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(mask) - 1;
  unsigned long long base = 0;
  if (lane == leader) base = atomicAdd(counter, (unsigned long long)__popc(mask));
  base = __shfl_sync(mask, base, leader);
  return base + (unsigned long long)__popc(mask & ((1u << lane) - 1u));
}

// SQL LIKE of one plain (not dictionary-encoded) UTF-8 string against a constant pattern, as
// strings.cu's like_kernel does it: '%' any sequence, '_' one code point, greedy with backtracking
// to the last '%' (the string position advances by whole code points only).
__device__ __forceinline__ int utf8_step(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

__device__ __forceinline__ bool like_bytes(const unsigned char* __restrict__ s, i64 slen,
                                           const unsigned char* __restrict__ pat, int plen) {
  i64 si = 0;
  int pi = 0;
  int star_p = -1;
  i64 star_s = 0;
  while (si < slen) {
    if (pi < plen && pat[pi] == '%') {
      star_p = pi++;
      star_s = si;
      continue;
    }
    if (pi < plen && pat[pi] == '_') {
      si += utf8_step(s[si]);
      ++pi;
      continue;
    }
    if (pi < plen && s[si] == pat[pi]) {
      ++si;
      ++pi;
      continue;
    }
    if (star_p < 0) return false;
    pi = star_p + 1;
    star_s += utf8_step(s[star_s]);
    si = star_s;
  }
  while (pi < plen && pat[pi] == '%') ++pi;
  return pi == plen && si >= slen;
}

}  // namespace pipe

// Growing a hash-aggregation table: every group of the old table (state/keys of old_cap slots, as
// group_slot writes them) is inserted into an empty larger one, and its accumulators (num_accs arrays
// of i64, passed as device arrays of pointers) are copied to the new slot. Groups are unique in the
// old table, so each insert takes a fresh slot; the hash is the one the generated kernels compute.
extern "C" __global__ void pipe_regroup(const int* __restrict__ old_state, const i64* __restrict__ old_keys,
                                        i64 old_cap, int num_keys, int* __restrict__ new_state,
                                        i64* __restrict__ new_keys, u64 new_mask,
                                        unsigned long long* __restrict__ used, u64 max_used,
                                        unsigned long long* __restrict__ overflow,
                                        const unsigned long long* __restrict__ old_accs,
                                        const unsigned long long* __restrict__ new_accs, int num_accs) {
  for (i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x; s < old_cap; s += (i64)gridDim.x * blockDim.x) {
    if (old_state[s] != 2) continue;
    i64 bits[16];
    u64 h = HETDB_HASH_SEED;
    for (int c = 0; c < num_keys; ++c) {
      bits[c] = old_keys[(i64)c * old_cap + s];
      h = pipe::hash_step(h, bits[c]);
    }
    const i64 nb = old_keys[(i64)num_keys * old_cap + s];
    h = pipe::hash_step(h, nb);
    const i64 g = pipe::group_slot<16>(new_state, new_keys, new_mask, num_keys, bits, nb, h, used, max_used,
                                       overflow);
    if (g < 0) continue;  // (counted in overflow: the host raises)
    for (int a = 0; a < num_accs; ++a) ((i64*)new_accs[a])[g] = ((const i64*)old_accs[a])[s];
  }
}

// Gathers `rows` (global row numbers over the pages of a page table: page p holds rows
// row_base[p] .. row_base[p + 1] - 1, row_base ascending) of one column whose pages lie anywhere in
// device memory: page_ptrs[p] points at page p's values of `width` bytes (1, 2, 4 or 8), or, where
// page_enc[p] is 1, at its encoded data section (a const, for, dict or rle page kept compressed:
// decode.cuh's random access; the value's int64 image is cut to `width` bytes). A null pointer is a
// validity array of a page without NULLs: its values read as 1 (valid).
extern "C" __global__ void pipe_paged_take(const long long* __restrict__ page_ptrs,
                                           const long long* __restrict__ page_enc,
                                           const long long* __restrict__ row_base, long long num_pages,
                                           int width, const long long* __restrict__ rows, long long n,
                                           unsigned char* __restrict__ out) {
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    const i64 r = rows[i];
    i64 lo = 0, hi = num_pages - 1;
    while (lo < hi) {
      const i64 mid = (lo + hi + 1) >> 1;
      if (row_base[mid] <= r) lo = mid; else hi = mid - 1;
    }
    const unsigned char* src = (const unsigned char*)page_ptrs[lo];
    const i64 local = r - row_base[lo];
    if (src == nullptr) {
      out[i] = 1;
      continue;
    }
    if (page_enc != nullptr && page_enc[lo]) {
      const u64 v = (u64)decode_value(encoded_page(src), local);
      if (width == 8) {
        ((unsigned long long*)out)[i] = v;
      } else if (width == 4) {
        ((unsigned int*)out)[i] = (unsigned int)v;
      } else if (width == 2) {
        ((unsigned short*)out)[i] = (unsigned short)v;
      } else {
        out[i] = (unsigned char)v;
      }
      continue;
    }
    if (width == 8) {
      ((unsigned long long*)out)[i] = ((const unsigned long long*)src)[local];
    } else if (width == 4) {
      ((unsigned int*)out)[i] = ((const unsigned int*)src)[local];
    } else if (width == 2) {
      ((unsigned short*)out)[i] = ((const unsigned short*)src)[local];
    } else {
      out[i] = src[local];
    }
  }
}
