// Host program running decode.cuh's tile loaders (load_tile_encoded: the cooperative delta / rle
// prefix decode with warp shuffles and barriers, and the for / dict / const loaders) as a CUDA
// thread block would: one std::thread per CUDA thread, __syncthreads a block barrier, __shfl_up_sync
// an exchange through a per-warp barrier. No GPU needed (g++ -std=c++20 -pthread). For const, for
// and dict pages, load_tile_sel (a selection's flagged items only) is checked against it too.
// Arguments: BLOCK_THREADS ITEMS_PER_THREAD, then per page "<encoded file> <n> <out file>"; every
// page is decoded tile by tile (tiles of BLOCK_THREADS * ITEMS_PER_THREAD values) into int64 values.
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

struct Dim3 {
  unsigned x, y, z;
};
static thread_local Dim3 threadIdx;
static std::barrier<>* block_barrier = nullptr;
static std::vector<std::barrier<>*> warp_barriers;
static unsigned long long warp_slots[64][32];
static std::atomic<long long> sel_errors{0};

static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
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
template <typename T>
static inline T __shfl_up_sync(unsigned, T x, int d) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  warp_slots[w][l] = (unsigned long long)x;
  warp_barriers[w]->arrive_and_wait();
  const T y = l >= d ? (T)warp_slots[w][l - d] : x;
  warp_barriers[w]->arrive_and_wait();
  return y;
}

#include "decode.cuh"

template <int IPT>
static void decode(const unsigned char* data, long long n, long long* out, int bt) {
  std::vector<long long> smem(HETDB_DECODE_SMEM_I64);
  std::barrier<> block(bt);
  block_barrier = &block;
  warp_barriers.clear();
  for (int w = 0; w < bt / 32; ++w) warp_barriers.push_back(new std::barrier<>(32));
  std::vector<std::thread> threads;
  for (int t = 0; t < bt; ++t) {
    threads.emplace_back([&, t] {
      threadIdx = Dim3{(unsigned)t, 0, 0};
      for (long long start = 0; start < n; start += (long long)bt * IPT) {
        const int count = n - start < bt * IPT ? (int)(n - start) : bt * IPT;
        long long items[IPT], sel[IPT];
        int flags[IPT];
        for (int k = 0; k < IPT; ++k) {
          const int idx = k * bt + t;
          flags[k] = idx < count && (start + idx) % 3 != 1;
          sel[k] = 0x5A5A;
        }
        const EncodedPage p = encoded_page(data);
        const bool random_access = p.codec != HETDB_CODEC_DELTA && p.codec != HETDB_CODEC_RLE;
        if (bt == 128) {
          load_tile_encoded<128, IPT>(data, start, items, count, smem.data());
          if (random_access) load_tile_sel<128, IPT>(p, start, sel, flags);
        } else {
          load_tile_encoded<256, IPT>(data, start, items, count, smem.data());
          if (random_access) load_tile_sel<256, IPT>(p, start, sel, flags);
        }
        for (int k = 0; k < IPT; ++k) {
          const int idx = k * bt + t;
          if (idx < count) out[start + idx] = items[k];
          // load_tile_sel: the flagged items as load_tile_encoded gives them, the others untouched
          if (random_access && idx < count && sel[k] != (flags[k] ? items[k] : 0x5A5A)) sel_errors++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto* b : warp_barriers) delete b;
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
      decode<3>(buf.data(), n, out.data(), bt);
    } else {
      decode<4>(buf.data(), n, out.data(), bt);
    }
    if (sel_errors != 0) {
      fprintf(stderr, "load_tile_sel differs from load_tile_encoded on %s\n", argv[a]);
      return 5;
    }
    FILE* o = fopen(argv[a + 2], "wb");
    fwrite(out.data(), sizeof(long long), n, o);
    fclose(o);
  }
  return 0;
}
