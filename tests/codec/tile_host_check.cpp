// Host program running decode.cuh's tile loaders (load_tile_encoded: the cooperative delta / rle
// tile decode with warp shuffles and barriers, and the for / dict / const loaders) as a CUDA
// thread block would: one std::thread per CUDA thread, __syncthreads a block barrier, __shfl_up_sync
// an exchange through a per-warp barrier. No GPU needed (g++ -std=c++20 -pthread). Every page is
// decoded as its physical type T (header byte 1: 8 → long long, 4 → int, 1 → unsigned char: the
// 32-bit paths of types of up to 4 bytes) and written as int64 values (sign-extended). Checked
// against it in the same run (exit 5 on a difference): load_tile_sel (a selection's flagged items
// only) on const, for and dict pages, and the generated kernels' readers of pipeline.cuh —
// pipe::PageColumn (load per row, or load_tile for delta/rle pages) and pipe::ConstColumn /
// ForColumn / DictColumn.
// Arguments: BLOCK_THREADS ITEMS_PER_THREAD, then per page "<encoded file> <n> <out file>"; every
// page is decoded tile by tile (tiles of BLOCK_THREADS * ITEMS_PER_THREAD values).
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static

struct Dim3 {
  unsigned x, y, z;
};
static thread_local Dim3 threadIdx;
static Dim3 blockIdx{0, 0, 0}, gridDim{1, 1, 1}, blockDim{128, 1, 1};
static std::barrier<>* block_barrier = nullptr;
static std::vector<std::barrier<>*> warp_barriers;
static unsigned long long warp_slots[64][32];
static std::atomic<long long> sel_errors{0};

static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
static inline void __syncwarp() { warp_barriers[threadIdx.x / 32]->arrive_and_wait(); }
static inline double __longlong_as_double(long long v) {
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}
static inline long long __double_as_longlong(double v) {
  long long b;
  std::memcpy(&b, &v, 8);
  return b;
}
static inline unsigned long long __mul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  const unsigned long long old = *p;  // (common.cuh's error flags: not reached by the decoders)
  if (old == cmp) *p = v;
  return old;
}
// pipeline.cuh's atomics and warp votes are not reached by the column readers checked here
template <typename A, typename B>
static inline A atomicAdd(A*, B) { abort(); }
template <typename A, typename B>
static inline A atomicExch(A*, B) { abort(); }
template <typename A, typename B>
static inline A atomicMin(A*, B) { abort(); }
template <typename A, typename B>
static inline A atomicMax(A*, B) { abort(); }
static inline int atomicCAS(int*, int, int) { abort(); }
static inline unsigned __activemask() { abort(); }
static inline unsigned __match_any_sync(unsigned, unsigned long long) { abort(); }
static inline int __ffs(unsigned) { abort(); }
static inline int __popc(unsigned) { abort(); }
static inline void __threadfence() {}
static inline unsigned atomicOr(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_or(v); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
template <typename T>
static inline T __shfl_sync(unsigned, T, int) { abort(); }
static inline unsigned __ballot_sync(unsigned, bool pred) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  warp_slots[w][l] = pred ? 1 : 0;
  warp_barriers[w]->arrive_and_wait();
  unsigned m = 0;
  for (int k = 0; k < 32; ++k) m |= warp_slots[w][k] ? 1u << k : 0u;
  warp_barriers[w]->arrive_and_wait();
  return m;
}
static std::atomic<int> block_count{0};
static inline int __syncthreads_count(bool pred) {
  if (pred) block_count++;
  block_barrier->arrive_and_wait();
  const int c = block_count;
  block_barrier->arrive_and_wait();
  if (threadIdx.x == 0) block_count = 0;
  block_barrier->arrive_and_wait();
  return c;
}
template <typename T>
static inline T __shfl_up_sync(unsigned, T x, int d) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  warp_slots[w][l] = (unsigned long long)x;
  warp_barriers[w]->arrive_and_wait();
  const T y = l >= d ? (T)warp_slots[w][l - d] : x;
  warp_barriers[w]->arrive_and_wait();
  return y;
}

#define pipe hetdb_pipe  // (unistd.h declares a function pipe)
#include "pipeline.cuh"

static std::atomic<long long> reader_errors{0};

// items of the tile at `start` (count values) as PageColumn, and as ConstColumn / ForColumn /
// DictColumn where the codec has one, read them; a difference from `items` counts in reader_errors.
template <int BT, int IPT, typename T>
static void check_readers(const unsigned char* data, long long start, int count, const T (&items)[IPT], long long* smem) {
  const EncodedPage p = encoded_page(data);
  const pipe::PageColumn<T> col(data, p.codec, start);  // (page tables give the codec id)
  T got[IPT];
  if (col.tiled()) col.template load_tile<BT, IPT>(start, got, count, smem);
  for (int k = 0; k < IPT; ++k) {
    const int idx = k * BT + (int)threadIdx.x;
    if (idx >= count) continue;
    const long long row = start + idx;
    if (!col.tiled()) got[k] = col.load(row);
    T typed = got[k];
    if (p.codec == HETDB_CODEC_CONST) typed = pipe::ConstColumn<T>(data).load(row);
    if (p.codec == HETDB_CODEC_FOR) typed = pipe::ForColumn<T>(data, start).load(row);
    if (p.codec == HETDB_CODEC_DICT) typed = pipe::DictColumn<T>(data, start).load(row);
    if (std::memcmp(&got[k], &items[k], sizeof(T)) != 0 || std::memcmp(&typed, &items[k], sizeof(T)) != 0) reader_errors++;
  }
  if (col.tiled()) __syncthreads();  // (the next tile's loader reuses smem)
}

template <int BT, int IPT, typename T>
static void decode_tiles(const unsigned char* data, long long n, long long* out, int t, long long* smem) {
  for (long long start = 0; start < n; start += (long long)BT * IPT) {
    const int count = n - start < BT * IPT ? (int)(n - start) : BT * IPT;
    T items[IPT], sel[IPT];
    int flags[IPT];
    for (int k = 0; k < IPT; ++k) {
      const int idx = k * BT + t;
      flags[k] = idx < count && (start + idx) % 3 != 1;
      sel[k] = (T)0x5A;
    }
    const EncodedPage p = encoded_page(data);
    const bool random_access = p.codec != HETDB_CODEC_DELTA && p.codec != HETDB_CODEC_RLE;
    load_tile_encoded<BT, IPT>(data, start, items, count, smem);
    if (random_access) load_tile_sel<BT, IPT>(p, start, sel, flags);
    check_readers<BT, IPT>(data, start, count, items, smem);
    for (int k = 0; k < IPT; ++k) {
      const int idx = k * BT + t;
      if (idx < count) out[start + idx] = (long long)items[k];
      // load_tile_sel: the flagged items as load_tile_encoded gives them, the others untouched
      if (random_access && idx < count && sel[k] != (flags[k] ? items[k] : (T)0x5A)) sel_errors++;
    }
  }
}

template <int IPT, typename T>
static void decode(const unsigned char* data, long long n, long long* out, int bt) {
  std::vector<long long> smem(HETDB_DECODE_SMEM_I64_TILE(256 * 4));
  std::barrier<> block(bt);
  block_barrier = &block;
  warp_barriers.clear();
  for (int w = 0; w < bt / 32; ++w) warp_barriers.push_back(new std::barrier<>(32));
  std::vector<std::thread> threads;
  for (int t = 0; t < bt; ++t) {
    threads.emplace_back([&, t] {
      threadIdx = Dim3{(unsigned)t, 0, 0};
      if (bt == 128) {
        decode_tiles<128, IPT, T>(data, n, out, t, smem.data());
      } else {
        decode_tiles<256, IPT, T>(data, n, out, t, smem.data());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto* b : warp_barriers) delete b;
}

template <int IPT>
static void decode_as_stored(const unsigned char* data, long long n, long long* out, int bt) {
  const int size = data[1];
  if (size == 8) {
    decode<IPT, long long>(data, n, out, bt);
  } else if (size == 4) {
    decode<IPT, int>(data, n, out, bt);
  } else {
    decode<IPT, unsigned char>(data, n, out, bt);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) return 1;
  const int bt = atoi(argv[1]), ipt = atoi(argv[2]);
  if ((bt != 128 && bt != 256) || (ipt != 3 && ipt != 4)) return 4;
  for (int a = 3; a + 2 < argc; a += 3) {
    FILE* f = fopen(argv[a], "rb");
    if (!f) return 2;
    std::vector<unsigned char> buf;
    int c;
    while ((c = fgetc(f)) != EOF) buf.push_back((unsigned char)c);
    fclose(f);
    buf.resize(buf.size() + 64, 0);
    const long long n = atoll(argv[a + 1]);
    if (encoded_page(buf.data()).n != n) return 3;
    std::vector<long long> out(n, 0x5A5A);
    if (ipt == 3) {
      decode_as_stored<3>(buf.data(), n, out.data(), bt);
    } else {
      decode_as_stored<4>(buf.data(), n, out.data(), bt);
    }
    if (sel_errors != 0 || reader_errors != 0) {
      fprintf(stderr, "load_tile_sel (%lld) or pipe:: column readers (%lld) differ from load_tile_encoded on %s\n",
              (long long)sel_errors, (long long)reader_errors, argv[a]);
      return 5;
    }
    FILE* o = fopen(argv[a + 2], "wb");
    fwrite(out.data(), sizeof(long long), n, o);
    fclose(o);
  }
  return 0;
}
