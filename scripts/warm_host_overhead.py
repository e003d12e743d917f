"""Host (Python) time a warm GPU scan spends per delivery and per page, measured without a GPU.

    PYTHONPATH=src python scripts/warm_host_overhead.py DB [--table lineorder]
        [--columns lo_orderdate,lo_discount,lo_quantity,lo_extendedprice] [--repeat-groups 20]
        [--runs 5] [--batch-bytes 67108864] [--profile]

Runs ``PageStreamer.deliveries()`` as a warm scan does (pages in the pinned host tier, route='copy',
pages kept compressed, batched deliveries) with ``scripts/host_only_cupy.py`` standing in for CuPy,
so only the streamer's Python runs (copies are memmoves, launches and events do nothing). The table's
row groups are listed ``--repeat-groups`` times so a small database gives as many pages as a large
one (SSB SF 1 x 20 ~ SF 20). Prints per run the ms, deliveries, pages, us per delivery and per page.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time

import host_only_cupy
import numpy as np

host_only_cupy.install()
host_only_cupy.COPY_BYTES = False
import host_only_gpu  # noqa: E402

host_only_gpu._no_compile()  # (the batched decode kernels load as stand-ins: launches are counted, not run)

import hetdb  # noqa: E402
from hetdb.backend.gpu.memory import DeviceMemoryBudget  # noqa: E402
from hetdb.backend.gpu.stream import PageStreamer  # noqa: E402
from hetdb.cache.host_cache import HostPageCache  # noqa: E402
from hetdb.cache.router import PageRouter  # noqa: E402


def aligned(n: int) -> np.ndarray:
    raw = np.empty(n + 4096, dtype=np.uint8)
    start = (-raw.ctypes.data) % 4096
    return raw[start:start + n]


def scan(reader, columns, row_groups, host, batch_bytes, **kw) -> tuple[float, int, int]:
    host_only_cupy.copies[:] = [0, 0]
    t0 = time.perf_counter()
    deliveries = pages = 0
    with PageStreamer(reader, columns, row_groups, budget=DeviceMemoryBudget(1 << 40), host_cache=host,
                      router=PageRouter("copy", gpu=True), batch_bytes=batch_bytes, **kw) as s:
        for rgs, _parts in s.deliveries():
            deliveries += 1
            pages += len(rgs) * len(columns)
    return time.perf_counter() - t0, deliveries, pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--table", default="lineorder")
    ap.add_argument("--columns", default="lo_orderdate,lo_discount,lo_quantity,lo_extendedprice")
    ap.add_argument("--repeat-groups", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch-bytes", type=int, default=64 << 20)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--decoded", action="store_true", help="pages decoded on arrival (default: kept as stored)")
    ap.add_argument("--overlap", action="store_true", help="gpu_delivery_overlap's ramped deliveries")
    ap.add_argument("--zero-copy", default="", help="columns left in the host tier (gpu_zero_copy)")
    args = ap.parse_args()
    con = hetdb.connect(args.db, device="cpu", create=False)
    reader = con.db.table(args.table)
    columns = args.columns.split(",")
    rgs = list(range(reader.num_row_groups)) * args.repeat_groups
    host = HostPageCache(4 << 30, allocate=aligned)
    from hetdb.backend.gpu import memory

    memory.host_view = lambda address, nbytes, owner: np.ctypeslib.as_array(
        (ctypes.c_uint8 * nbytes).from_address(address)).view(host_only_cupy.ndarray)
    kw = dict(compressed=not args.decoded, overlap=args.overlap,
              zero_copy=frozenset(c for c in args.zero_copy.split(",") if c))
    scan(reader, columns, list(range(reader.num_row_groups)), host, args.batch_bytes, **kw)  # load the host tier
    times = []
    for _ in range(args.runs):
        t, d, p = scan(reader, columns, rgs, host, args.batch_bytes, **kw)
        times.append(t)
        print(f"run {t * 1e3:.2f} ms deliveries {d} pages {p} = {t / d * 1e6:.0f} us/delivery "
              f"{t / p * 1e6:.1f} us/page; copies {host_only_cupy.copies[0]} of {host_only_cupy.copies[1]:,} B",
              flush=True)
    print(f"median {statistics.median(times) * 1e3:.2f} ms")
    if args.profile:
        import cProfile
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        scan(reader, columns, rgs, host, args.batch_bytes, **kw)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    sys.exit(main())
