"""kernels/shuffle_encode.cu *run* without a GPU: compiled with g++ under a threaded CUDA shim (one
std::thread per CUDA thread of a block, blocks one after the other; ``__syncthreads`` and the warp
shuffles are barriers over the block's or the warp's threads), driven as SegmentPlan drives them
(block parameters, choice, 8-byte-aligned placement, packing). Every segment's bytes must equal
``hetdb.codec.encode(values, GPU_CODECS)``; the partition ids must equal the exchange's."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pyarrow as pa
import pytest

from hetdb.backend.gpu.compile import load_source
from hetdb.codec import encode
from hetdb.dist.exchange import partition_ids
from hetdb.dist.segments import GPU_CODECS

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

SHIM = r"""
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
#define __restrict__
#define __shared__ static
struct Dim3 { unsigned x; };
static thread_local Dim3 threadIdx, blockIdx;
static Dim3 gridDim, blockDim;
static std::barrier<>* g_block;
static std::vector<std::barrier<>*> g_warp;
static long long g_slot[1024];
inline void __syncthreads() { g_block->arrive_and_wait(); }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
// what common.cuh's other helpers use (not called by these kernels)
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline long long __double_as_longlong(double v) { long long d; std::memcpy(&d, &v, 8); return d; }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  unsigned long long o = *p; if (o == c) *p = v; return o; }
template <class T> T shfl_from(T v, int src) {
  int w = threadIdx.x >> 5;
  std::memcpy(&g_slot[threadIdx.x], &v, sizeof(T));
  g_warp[w]->arrive_and_wait();
  T r;
  std::memcpy(&r, &g_slot[w * 32 + src], sizeof(T));
  g_warp[w]->arrive_and_wait();
  return r;
}
template <class T> T __shfl_sync(unsigned, T v, int src) { return shfl_from(v, src); }
template <class T> T __shfl_up_sync(unsigned, T v, int d) {
  int l = threadIdx.x & 31;
  return shfl_from(v, l >= d ? l - d : l);
}
template <class T> T __shfl_xor_sync(unsigned, T v, int m) { return shfl_from(v, (threadIdx.x & 31) ^ m); }
template <class F> void launch(unsigned grid, unsigned block, F body) {
  gridDim.x = grid; blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    std::barrier<> all(block);
    std::vector<std::barrier<>*> warps;
    for (unsigned w = 0; w < block / 32; ++w) warps.push_back(new std::barrier<>(32));
    g_block = &all; g_warp = warps;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([=] { blockIdx.x = b; threadIdx.x = t; body(); });
    for (auto& th : threads) th.join();
    for (auto* w : warps) delete w;
  }
}
"""

MAIN = r"""
static long long* read_all(const char* path, long long* count) {
  FILE* f = std::fopen(path, "rb");
  std::fseek(f, 0, SEEK_END);
  long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  long long* buf = (long long*)std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (std::fread(buf, 1, size, f) != (size_t)size) std::exit(2);
  std::fclose(f);
  *count = size / 8;
  return buf;
}
// input: nseg, then per segment 6 words (width, mode, n, start, rows length, plain only), the values
// (padded to 8 bytes) and the rows; output: per segment codec, bytes, offset, then the payload.
int main(int argc, char** argv) {
  long long words;
  long long* in = read_all(argv[1], &words);
  int nseg = (int)in[0];
  long long* p = in + 1;
  std::vector<long long> table(8 * nseg);
  long long first = 0;
  for (int s = 0; s < nseg; ++s) {
    long long width = p[0], mode = p[1], n = p[2], start = p[3], nrows = p[4], plain = p[5];
    long long vwords = p[6];
    long long* values = p + 7;
    long long* rows = values + vwords;
    long long* seg = &table[8 * s];
    seg[0] = (long long)values; seg[1] = nrows ? (long long)rows : 0; seg[2] = start; seg[3] = n;
    seg[4] = width; seg[5] = mode; seg[6] = first; seg[7] = plain ? 0 : (2 | 4 | 8);
    first += (n + 1023) / 1024;
    p = rows + nrows;
  }
  long long nb = first > 0 ? first : 1;
  std::vector<long long> for_ref(nb), d_ref(nb), base(nb), word_off(nb), seg_out(2 * nseg + 2), seg_off(nseg + 1);
  std::vector<int> for_w(nb), d_w(nb);
  unsigned grid = (unsigned)((first * 32 + 255) / 256);
  const long long* segs = table.data();
  if (first)
    launch(grid, 256, [&] { shuffle_block_params(segs, nseg, first, for_ref.data(), for_w.data(), d_ref.data(),
                                                 d_w.data(), base.data()); });
  launch(nseg < 3 ? nseg : 3, 256, [&] { shuffle_choose(segs, nseg, for_ref.data(), for_w.data(), d_w.data(),
                                                        seg_out.data(), word_off.data()); });
  long long total = 0;
  for (int s = 0; s < nseg; ++s) { seg_off[s] = total; total += (seg_out[2 * s + 1] + 7) / 8 * 8; }
  unsigned char* out = (unsigned char*)std::calloc(total + 8, 1);
  if (first)
    launch(grid, 256, [&] { shuffle_pack(segs, nseg, first, seg_out.data(), seg_off.data(), for_ref.data(),
                                         for_w.data(), d_ref.data(), d_w.data(), base.data(), word_off.data(), out); });
  FILE* f = std::fopen(argv[2], "wb");
  for (int s = 0; s < nseg; ++s) {
    long long meta[3] = {seg_out[2 * s], seg_out[2 * s + 1], seg_off[s]};
    std::fwrite(meta, 8, 3, f);
  }
  std::fwrite(out, 1, total, f);
  std::fclose(f);
  // partition ids of the first segment's values read as int64 keys (argv[3]: parts)
  if (argc > 3) {
    long long n = table[3];
    std::vector<int> ids(n);
    unsigned long long parts = std::strtoull(argv[3], nullptr, 10);
    launch((unsigned)((n + 255) / 256 < 4 ? (n + 255) / 256 : 4), 256,
           [&] { hash_partition_ids((const long long*)table[0], nullptr, 1, n, parts, ids.data()); });
    f = std::fopen(argv[4], "wb");
    std::fwrite(ids.data(), 4, n, f);
    std::fclose(f);
  }
  return 0;
}
"""

CODEC_NAMES = {0: "plain", 1: "const", 2: "for", 3: "delta"}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    d = tmp_path_factory.mktemp("shuffle-encode-host")
    src = d / "run.cpp"
    src.write_text(SHIM + load_source("shuffle_encode.cu") + MAIN)
    exe = d / "run"
    got = subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-w", str(src), "-o", str(exe)],
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr[-4000:]
    return exe


def _run(binary, tmp_path, segments: list[tuple], parts: int | None = None):
    """segments: (values, start, n, rows or None, sign_word, plain_only) -> [(codec, bytes)], ids."""
    words = [np.array([len(segments)], np.int64)]
    for values, start, n, rows, sign_word, plain in segments:
        dt = values.dtype
        mode = 2 if sign_word else (0 if dt.itemsize == 1 and dt.kind in "bu" else 1)
        raw = values.view(np.uint8)
        raw = np.concatenate([raw, np.zeros(-raw.shape[0] % 8, np.uint8)])
        r = np.zeros(0, np.int64) if rows is None else rows.astype(np.int64)
        words += [np.array([dt.itemsize, mode, n, start, r.shape[0], int(plain), raw.shape[0] // 8], np.int64),
                  raw.view(np.int64), r]
    (tmp_path / "in.bin").write_bytes(np.concatenate(words).tobytes())
    args = [str(binary), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")]
    if parts:
        args += [str(parts), str(tmp_path / "ids.bin")]
    got = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.uint8)
    meta = out[:24 * len(segments)].view(np.int64).reshape(-1, 3)
    payload = out[24 * len(segments):]
    result = [(CODEC_NAMES[int(c)], payload[int(o):int(o) + int(b)]) for c, b, o in meta]
    ids = np.frombuffer((tmp_path / "ids.bin").read_bytes(), np.int32) if parts else None
    return result, ids


def test_kernels_encode_like_the_host_encoder(binary, tmp_path) -> None:
    rng = np.random.default_rng(11)
    n = 2600  # three blocks, the last one partial
    cases = {
        "sorted": np.sort(rng.integers(0, 6_000_000, n)).astype(np.int64),
        "small": rng.integers(-7, 90, n).astype(np.int32),
        "const": np.full(n, -123456789012, np.int64),
        "wide": rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64),
        "bool": rng.random(n) < 0.3,
        "i8": rng.integers(-128, 128, n).astype(np.int8),
        "one": np.array([5], np.int64),  # plain (8 bytes) beats const (16)
        "deltas": np.cumsum(rng.integers(-3, 1000, n)).astype(np.int64),
    }
    order = rng.permutation(n)
    segs = [(v, 0, v.shape[0], None, False, False) for v in cases.values()]
    segs.append((cases["sorted"], 700, 1500, order, False, False))  # gathered through row numbers
    segs.append((cases["deltas"] - 4_000_000, 0, n, None, True, False))  # sign words: 0 or -1
    segs.append((cases["small"], 3, 1000, None, False, True))  # plain only
    segs.append((cases["small"], 0, 0, None, False, False))  # empty
    # 294 blocks: the word offsets are scanned over more than one chunk of 256 blocks
    big = np.cumsum(rng.integers(0, 1 << 20, 300_001)).astype(np.int64)
    segs.insert(0, (big, 0, big.shape[0], None, False, False))
    got, _ = _run(binary, tmp_path, segs)
    wants = [big, *cases.values(), cases["sorted"][order[700:2200]], (cases["deltas"] - 4_000_000) >> 63]
    for i, want_values in enumerate(wants):
        want, codec = encode(want_values, GPU_CODECS)
        assert got[i][0] == codec, (i, got[i][0], codec)
        assert np.array_equal(got[i][1], want.view(np.uint8)), i
    assert got[len(wants)][0] == "plain" and np.array_equal(got[len(wants)][1], cases["small"][3:1003].view(np.uint8))
    assert got[-1][0] == "plain" and got[-1][1].shape[0] == 0
    assert {c for c, _ in got} == {"plain", "const", "for", "delta"}


def test_partition_ids_kernel_equals_the_exchange(binary, tmp_path) -> None:
    rng = np.random.default_rng(5)
    keys = rng.integers(-(1 << 62), 1 << 62, 3000).astype(np.int64)
    for parts in (2, 8):
        _, ids = _run(binary, tmp_path, [(keys, 0, keys.shape[0], None, False, False)], parts)
        assert np.array_equal(ids, partition_ids(pa.table({"k": keys}), ["k"], parts))
