// Small host->device uploads made by the SMs (backend/gpu/upload.py): threads load pinned host memory
// (mapped into the device's address space under unified addressing) 16 bytes at a time and store it
// in device memory. The loads travel over the link as the kernel's own reads, not as copy-engine
// work, so the upload does not wait behind host->device copies a scan has queued on the copy engine.
struct alignas(16) WordPair {
  unsigned long long lo, hi;
};

// n 8-byte words from src to dst (both 16-byte aligned): pairs of words as one 16-byte load each, an
// odd last word by one thread
extern "C" __global__ void upload_words(const unsigned long long* __restrict__ src,
                                        unsigned long long* __restrict__ dst, long long n) {
  const long long pairs = n >> 1;
  const WordPair* s = reinterpret_cast<const WordPair*>(src);
  WordPair* d = reinterpret_cast<WordPair*>(dst);
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += stride) {
    d[i] = s[i];
  }
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
    dst[n - 1] = src[n - 1];
  }
}
