// Window-operator kernels: the rows of each window partition sorted on their own, where the input is
// already grouped by the PARTITION BY keys (a table stored by them: lineitem by l_orderkey) and every
// partition is small. One thread sorts one partition by insertion into the permutation, stably (ties
// keep row order), instead of a radix sort over every row. Compiles under NVRTC and nvcc.
typedef long long i64;

// order[heads[s] .. heads[s+1]) = the rows of segment s in ascending ``code`` order, stable; the last
// segment ends at n.
extern "C" __global__ void window_sort_segments(const i64* __restrict__ code, const i64* __restrict__ heads,
                                                i64 segments, i64 n, i64* __restrict__ order) {
  for (i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x; s < segments; s += (i64)gridDim.x * blockDim.x) {
    const i64 a = heads[s];
    const i64 b = s + 1 < segments ? heads[s + 1] : n;
    for (i64 i = a; i < b; ++i) {
      const i64 c = code[i];
      i64 j = i;
      while (j > a && code[order[j - 1]] > c) {
        order[j] = order[j - 1];
        --j;
      }
      order[j] = i;
    }
  }
}
