"""CPU decode throughput per encoding: GB/s of decoded values, pages decoded by 1 and 2 threads.

Each encoding gets pages shaped like the SSB columns it is chosen for (1 Mi values, the default page):
const (lo_shippriority), for (lo_quantity: 6 bits; lo_extendedprice: 24 bits), delta (a sorted int64
key), rle (lo_orderdate: runs of 1-7 rows), dict (lo_supplycost: 12,939 distinct values), and plain
(the copy the reader makes of an unencoded page is none: a view; here a copy, as a memory-speed
yardstick). A run decodes PAGES pages spread over the threads, either through ``codec.decode`` (what
the table reader calls: a new array per page, whose memory the kernel must fault in and zero) or,
``--into``, into one reused array per thread (the decoder alone). Reported per thread count: the
median over REPEAT runs of decoded GB per wall second, and of decoded GB per CPU second of the
process (on a shared machine wall time includes waiting for a core; CPU time does not).

Usage: python scripts/codec_decode_throughput.py [--threads 1,2] [--pages 16] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import threading
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


def measure(buf: np.ndarray, name: str, values: np.ndarray, threads: int, npages: int, repeat: int,
            into: bool) -> tuple[float, float]:
    """Median (GB/s wall, GB/s of process CPU time) of decoded bytes for ``npages`` decodes of ``buf``
    on ``threads`` threads."""
    n, dtype = values.shape[0], values.dtype
    outs = threading.local()

    def one(_: int) -> np.ndarray:
        if not into:
            return buf.view(dtype).copy() if name == "plain" else codec.decode(buf, name, n, dtype)
        out = getattr(outs, "out", None)
        if out is None:
            out = outs.out = np.empty(n, dtype)
        if name == "plain":
            out.view(np.uint8)[:] = buf
        else:
            codec.decode_into(buf, name, n, out)
        return out

    out = one(0)
    if out.view(np.uint8).tobytes() != values.view(np.uint8).tobytes():
        raise AssertionError(f"{name} did not round-trip")
    wall, cpu = [], []
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(threads)))  # warm the threads
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            list(pool.map(one, range(npages)))
            wall.append(npages * values.nbytes / (time.perf_counter() - t0) / 1e9)
            cpu.append(npages * values.nbytes / max(time.process_time() - c0, 1e-9) / 1e9)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--pages", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--into", action="store_true", help="decode into one reused array per thread")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    print(("into reused arrays" if args.into else "into new arrays (as the table reader)")
          + f", {args.pages} pages of {N} values per run, median of {args.repeat} runs; GB/s of decoded values")
    print(f"{'page':26s} {'ratio':>9s} " + " ".join(f"{f'{t} thr wall':>11s} {f'{t} thr CPU':>10s}" for t in threads))
    for label, (name, values) in pages().items():
        buf = encode_as(values, name)
        rates = [measure(buf, name, values, t, args.pages, args.repeat, args.into) for t in threads]
        print(f"{label:26s} {values.nbytes / buf.shape[0]:8.2f}x "
              + " ".join(f"{w:11.2f} {c:10.2f}" for w, c in rates), flush=True)


if __name__ == "__main__":
    main()
