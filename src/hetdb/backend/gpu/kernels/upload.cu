// Small host->device uploads made by the SMs (backend/gpu/upload.py): each thread loads 8-byte words
// of pinned host memory (mapped into the device's address space under unified addressing) and stores
// them in device memory. The loads travel over the link as the kernel's own reads, not as copy-engine
// work, so the upload does not wait behind host->device copies a scan has queued on the copy engine.
extern "C" __global__ void upload_words(const unsigned long long* __restrict__ src,
                                        unsigned long long* __restrict__ dst, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    dst[i] = src[i];
  }
}
