"""CPU decode throughput per encoding: GB/s of decoded values, pages decoded by 1 and 2 threads.

Each encoding gets pages shaped like the SSB columns it is chosen for (1 Mi values, the default page):
const (lo_shippriority), for (lo_quantity: 6 bits; lo_extendedprice: 24 bits), delta (a sorted int64
key), rle (lo_orderdate: runs of 1-7 rows), dict (lo_supplycost: 12,939 distinct values), and plain
(the copy the reader makes of an unencoded page is none: a view; here a copy, as a memory-speed
yardstick). A run decodes PAGES pages through ``codec.decode`` (what the table reader calls: a new
array per page), spread over the threads; the median of REPEAT runs is reported.

Usage: python scripts/codec_decode_throughput.py [--threads 1,2] [--pages 16] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hetdb import codec
from hetdb.codec.encodings import encode_as

N = 1 << 20


def pages() -> dict[str, tuple[str, np.ndarray]]:
    """{label: (codec, values)}."""
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 8, N // 2)
    starts = np.cumsum(lengths)
    run_of = np.searchsorted(starts, np.arange(N), side="right")
    dates = rng.integers(19920101, 19980802, lengths.shape[0]).astype(np.int32)
    return {
        "const int32": ("const", np.full(N, 7, np.int32)),
        "for int32 6-bit": ("for", rng.integers(1, 51, N).astype(np.int32)),
        "for int32 24-bit": ("for", rng.integers(90200, 10489950, N).astype(np.int32)),
        "delta int64 sorted key": ("delta", np.cumsum(rng.integers(1, 9, N)).astype(np.int64)),
        "rle int32 runs 1-7": ("rle", dates[run_of]),
        "dict int32 12939 values": ("dict", rng.choice(rng.integers(54060, 125940, 12939), N).astype(np.int32)),
        "plain int32 (copy)": ("plain", rng.integers(0, 1 << 31, N).astype(np.int32)),
    }


def measure(buf: np.ndarray, name: str, values: np.ndarray, threads: int, npages: int, repeat: int) -> float:
    """Median GB/s of decoded bytes for ``npages`` decodes of ``buf`` on ``threads`` threads."""
    n, dtype = values.shape[0], values.dtype

    def one(_: int) -> np.ndarray:
        if name == "plain":
            return buf.view(dtype).copy()
        return codec.decode(buf, name, n, dtype)

    out = one(0)
    if out.view(np.uint8).tobytes() != values.view(np.uint8).tobytes():
        raise AssertionError(f"{name} did not round-trip")
    rates = []
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(threads)))  # warm the threads
        for _ in range(repeat):
            t0 = time.perf_counter()
            list(pool.map(one, range(npages)))
            rates.append(npages * values.nbytes / (time.perf_counter() - t0) / 1e9)
    return statistics.median(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--pages", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    print(f"{'page':26s} {'ratio':>7s} " + " ".join(f"{f'{t} thr GB/s':>11s}" for t in threads))
    for label, (name, values) in pages().items():
        buf = encode_as(values, name)
        rates = [measure(buf, name, values, t, args.pages, args.repeat) for t in threads]
        print(f"{label:26s} {values.nbytes / buf.shape[0]:6.2f}x " + " ".join(f"{r:11.2f}" for r in rates),
              flush=True)


if __name__ == "__main__":
    main()
