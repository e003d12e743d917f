"""Does a small pageable host->device copy wait for the stream's earlier work?"""
import time
import numpy as np
import cupy
import cupyx

spin = cupy.RawKernel(r'''
extern "C" __global__ void spin(long long cycles) {
  long long t0 = clock64(); while (clock64() - t0 < cycles) {}
}''', "spin")
s = cupy.cuda.Stream(non_blocking=True)
host = np.arange(4096, dtype=np.int64)
pinned = cupyx.empty_pinned(host.shape, host.dtype); pinned[...] = host
dev = cupy.empty(host.shape, host.dtype)
rt = cupy.cuda.runtime
def probe(name, fn):
    for _ in range(2):
        with s:
            spin((1,), (1,), (np.int64(2_000_000_000 // 100),))  # ~10-20 ms
            t = time.perf_counter(); fn(); dt = time.perf_counter() - t
        t2 = time.perf_counter(); s.synchronize(); rest = time.perf_counter() - t2
    print(f"{name}: call {dt*1e3:.3f} ms, then stream sync {rest*1e3:.3f} ms", flush=True)
probe("nothing", lambda: None)
probe("cupy.asarray(pageable 32KB)", lambda: cupy.asarray(host))
probe("memcpyAsync pageable 32KB", lambda: rt.memcpyAsync(dev.data.ptr, host.ctypes.data, host.nbytes, 1, s.ptr))
probe("memcpyAsync pinned 32KB", lambda: rt.memcpyAsync(dev.data.ptr, pinned.ctypes.data, pinned.nbytes, 1, s.ptr))
probe("dev.set(pinned, stream)", lambda: dev.set(pinned, stream=s))
small = np.arange(16, dtype=np.int64)
probe("cupy.asarray(pageable 128B)", lambda: cupy.asarray(small))
probe("memcpyAsync pageable 128B", lambda: rt.memcpyAsync(dev.data.ptr, small.ctypes.data, small.nbytes, 1, s.ptr))
