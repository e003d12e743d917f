"""GPU decode throughput per encoding (GB/s of decoded values) against a device-to-device copy.

Usage: python scripts/gpu_decode_throughput.py [million values, default 16]. Columns are shaped like
SSB lineorder's (int32 unless noted); each is encoded on the CPU with the codec named, copied to the
device once, then decoded whole-page by decode.cu (best of 10, CUDA events).
"""

from __future__ import annotations

import sys

import cupy
import numpy as np

from hetdb.backend.gpu.decode import decode_device
from hetdb.codec.encodings import encode_as


def best_ms(fn, reps: int = 10) -> float:
    fn()
    times = []
    for _ in range(reps):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return min(times)


def main() -> None:
    n = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 16_000_000
    rng = np.random.default_rng(0)
    cols = {
        "for quantity 1..50": ("for", rng.integers(1, 51, n).astype(np.int32)),
        "for discount 0..10": ("for", rng.integers(0, 11, n).astype(np.int32)),
        "for extendedprice": ("for", rng.integers(90_000, 10_500_000, n).astype(np.int32)),
        "dict orderdate (2406 dates)": ("dict", (19920101 + rng.integers(0, 2406, n)).astype(np.int32)),
        "delta sorted key int64": ("delta", np.repeat(np.arange(n // 4 + 1, dtype=np.int64), 4)[:n]),
        "rle runs of 4 int64": ("rle", np.repeat(rng.integers(0, 1 << 40, n // 4 + 1), 4)[:n]),
        "const": ("const", np.full(n, 7, np.int32)),
    }
    src = cupy.arange(n * 2, dtype=cupy.int32)
    dst = cupy.empty_like(src)
    copy_ms = best_ms(lambda: dst.__setitem__(slice(None), src))
    copy_gbs = 2 * src.nbytes / copy_ms / 1e6
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}  n={n:,}")
    print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read+write)")
    print(f"{'column':<30} {'codec':<6} {'ratio':>6} {'ms':>8} {'GB/s decoded':>13} {'GB/s read+written':>18}")
    for name, (codec, values) in cols.items():
        buf = encode_as(values, codec)
        dev = cupy.asarray(buf)
        out = decode_device(dev, codec, n, values.dtype)
        assert np.array_equal(cupy.asnumpy(out), values), name
        ms = best_ms(lambda d=dev, c=codec, t=values.dtype: decode_device(d, c, n, t))
        gbs = values.nbytes / ms / 1e6
        print(f"{name:<30} {codec:<6} {values.nbytes / buf.nbytes:>6.2f} {ms:>8.3f} {gbs:>13.0f} "
              f"{(values.nbytes + buf.nbytes) / ms / 1e6:>18.0f}")


if __name__ == "__main__":
    main()
