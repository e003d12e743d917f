"""Kernel-level cost of decoding compressed pages inside a scan, against the same scan of plain pages.

Usage (on a GPU machine, from the repository root):
    PYTHONPATH=src python scripts/gpu_decode_scan.py [--rows 120e6] [--page-rows 1048576] [--repeat 20]
        [--only SUBSTRING] [--min-blocks N] [--items N]

Columns are shaped like SSB lineorder's (SF 20 has 120M rows; pages of about 1M rows as hetdb
writes them). Each is encoded page by page on the CPU with the codec named, copied to the device
once, and scanned by scripts/gpu_decode_scan.cu the way a compiled paged pipeline reads a column
(pipe::PlainColumn vs pipe::PageColumn, tiles of 512 rows, a range filter and a sum per row).
Both scans must give the same count and sum (checked). Prints per column the ratio, the plain and
the encoded scan's best time (CUDA events), the plain-equivalent GB/s of each, encoded / plain, the
same with every tile decoded into registers first (load_tile_encoded: "eager") and through the
reader of the one codec ("typed": pipe::ForColumn/DictColumn, load_tile_delta/rle, without the
per-page kind of PageColumn), for rle pages the rle tile loader with its run-length unpack loop unrolled ("unrl") and the one
before session 14 ("prev": passes
of run lengths from the run block's first run; scripts/gpu_decode_scan.cu), for for pages an experiment ("lanes": each thread unpacks consecutive
rows of its lane sequentially into shared memory, then reads its striped rows), for for and dict
pages load_tile_sel ("sel": the fused kernels' reader, every row flagged; blocks narrow enough walk
each thread's lane bit stream over its striped rows), and the GB/s of decoding the pages whole (decode.cu, as on arrival
when pages are not kept compressed). First, per kernel: registers and resident blocks per SM.
--only keeps the columns whose name holds SUBSTRING (or one of several, comma-separated); --min-blocks N compiles the kernels with
__launch_bounds__(128, N) (the compiler then keeps registers low enough for N blocks per SM);
--items N gives each thread N rows of a tile (tiles of 128 N rows; 4 as the compiled pipelines do,
at most 8): more rows per tile spread each tile's dependent loads (page table, header, directory)
over more values.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cupy
import numpy as np

from hetdb.backend.gpu.codegen.runtime import compile_source
from hetdb.backend.gpu.compile import launch, load_source
from hetdb.backend.gpu.decode import decode_device
from hetdb.codec.encodings import CODEC_IDS, encode_as

GRID = 132 * 16


def columns(n: int, rng: np.random.Generator) -> dict[str, tuple[str, np.ndarray, tuple[int, int]]]:
    """name -> (codec, values, filter range)."""
    runs = rng.integers(1, 8, n // 3 + 64)  # lines per order 1..7 (mean 4: more than n rows in all)
    order_of_row = np.repeat(np.arange(runs.shape[0]), runs)[:n]
    dates = (19920101 + rng.integers(0, 2406, runs.shape[0])).astype(np.int32)
    return {
        "lo_quantity 1..50": ("for", rng.integers(1, 51, n).astype(np.int32), (1, 24)),
        "lo_discount 0..10": ("for", rng.integers(0, 11, n).astype(np.int32), (1, 3)),
        "lo_extendedprice": ("for", rng.integers(90_000, 10_500_000, n).astype(np.int32), (0, 1 << 30)),
        "lo_orderdate per order": ("rle", dates[order_of_row], (19930101, 19931231)),
        "lo_orderdate dict": ("dict", dates[order_of_row], (19930101, 19931231)),
        "lo_custkey per order": ("rle", rng.integers(1, 600_000, runs.shape[0]).astype(np.int32)[order_of_row],
                                 (0, 300_000)),
        "sorted key int64": ("delta", order_of_row.astype(np.int64) * 4 + 1, (0, 1 << 62)),
    }


def best_ms(fn, reps: int) -> float:
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


def measure(module, name: str, codec: str, values: np.ndarray, rng_filter: tuple[int, int], page_rows: int,
            repeat: int) -> bool:
    """Prints the column's line; False where a scan's count or sum differs from the plain scan's."""
    n, (lo, hi) = values.shape[0], rng_filter
    suffix = "i64" if values.dtype == np.int64 else "i32"
    ctype = np.int64 if suffix == "i64" else np.int32
    plain_pages, enc_pages = [], []
    for s in range(0, n, page_rows):
        page = values[s:s + page_rows]
        plain_pages.append(cupy.asarray(page))
        enc_pages.append(cupy.asarray(encode_as(page, codec)))
    stored = sum(int(p.nbytes) for p in enc_pages)
    out = cupy.zeros(2, dtype=cupy.uint64)
    tables = {}
    codec_id = CODEC_IDS[codec]  # what page tables give pipe::PageColumn for an encoded page
    kinds = [("plain", plain_pages, 0), ("paged", enc_pages, codec_id), ("eager", enc_pages, 1), ("typed", enc_pages, 1)]
    if codec == "for":
        kinds.append(("lanes", enc_pages, 1))
    if codec in ("for", "dict"):
        kinds.append(("sel", enc_pages, 1))
    if codec == "rle":
        kinds += [("unrl", enc_pages, 1), ("prev", enc_pages, 1)]
    for kind, pages, flag in kinds:
        fn = module.function(f"scan_{codec if kind == 'typed' else kind}_{suffix}")
        tables[kind] = (cupy.asarray(np.array([int(p.data.ptr) for p in pages], dtype=np.int64)),
                        cupy.full(len(pages), flag, dtype=cupy.int64), fn)

    def scan(kind: str) -> None:
        ptrs, enc, fn = tables[kind]
        out.fill(0)
        launch(fn, GRID, 128, (ptrs, enc, np.int64(page_rows), np.int64(n), ctype(lo), ctype(hi), out))

    sel = values[(values >= lo) & (values <= hi)]
    expected = [int(sel.shape[0]), int(sel.astype(np.int64).sum()) % (1 << 64)]
    wrong = []
    for kind in tables:
        scan(kind)
        got = cupy.asnumpy(out).tolist()
        if got != expected:
            print(f"WRONG {name}: {kind} scan counted/summed {got}, expected {expected}", flush=True)
            wrong.append(kind)
    assert "plain" not in wrong, f"{name}: the plain scan is wrong"

    def ratio(kind: str, width: int) -> str:
        if kind not in tables:
            return f"{'-':>{width}}"
        if kind in wrong:
            return f"{'WRONG':>{width}}"
        return f"{best_ms(lambda: scan(kind), repeat) / plain_ms:>{width}.2f}"

    plain_ms = best_ms(lambda: scan("plain"), repeat)
    enc_ms = best_ms(lambda: scan("paged"), repeat)
    eager, typed, lanes, sel, unrl, prev = (ratio("eager", 9), ratio("typed", 9), ratio("lanes", 9),
                                             ratio("sel", 8), ratio("unrl", 8), ratio("prev", 8))
    decode_ms = best_ms(lambda: [decode_device(p, codec, int(v.shape[0]), values.dtype)
                                 for p, v in zip(enc_pages, plain_pages)], repeat)
    print(f"{name:<24} {codec:<6} {values.nbytes / stored:>6.2f} {plain_ms:>9.3f} {enc_ms:>8.3f} "
          f"{values.nbytes / plain_ms / 1e6:>11.0f} {values.nbytes / enc_ms / 1e6:>9.0f} "
          f"{enc_ms / plain_ms:>9.2f}{'!' if 'paged' in wrong else ' '}{eager} {typed} {lanes} {sel} {unrl} {prev} "
          f"{values.nbytes / decode_ms / 1e6:>10.0f}", flush=True)
    return not wrong


def kernel_report(module) -> None:
    """Registers, local memory and resident blocks per SM of each scan kernel."""
    names = [f"scan_{k}_{s}" for s in ("i32", "i64")
             for k in ("plain", "paged", "eager", "for", "dict", "delta", "rle", "unrl", "prev", "lanes", "sel")]
    for name in names:
        fn = module.function(name)
        try:
            blocks = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, 128, 0)
        except AttributeError:  # (CuPy without the occupancy call: 64K registers, 64 warps per SM)
            regs = int(getattr(fn, "num_regs", 0))
            warp_regs = -(-regs * 32 // 256) * 256
            blocks = f"{min(16, 65536 // max(4 * warp_regs, 1))} (by registers)"
        print(f"kernel {name:<16} registers {getattr(fn, 'num_regs', '?'):>4}  local bytes "
              f"{getattr(fn, 'local_size_bytes', '?'):>4}  blocks/SM {blocks}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=120e6)
    ap.add_argument("--page-rows", type=int, default=1 << 20)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", default="", help="only the columns whose name holds this (or one of these, comma-separated)")
    ap.add_argument("--min-blocks", type=int, default=0, help="__launch_bounds__ minimum blocks per SM")
    ap.add_argument("--items", type=int, default=4, choices=(1, 2, 4, 8), help="rows per thread and tile")
    args = ap.parse_args()
    n = int(args.rows)
    source = (f"#define SCAN_MIN_BLOCKS {args.min_blocks}\n#define SCAN_ITEMS {args.items}\n"
              + load_source("pipeline.cuh") + "\n"
              + Path(__file__).with_suffix(".cu").read_text())
    module = compile_source(source, "gpu_decode_scan.cu")
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}  rows={n:,}  "
          f"page rows={args.page_rows:,}  min blocks={args.min_blocks}  items/thread={args.items}")
    kernel_report(module)
    print(f"{'column':<24} {'codec':<6} {'ratio':>6} {'plain ms':>9} {'enc ms':>8} {'plain GB/s':>11} "
          f"{'enc GB/s':>9} {'enc/plain':>9} {'eager/pl':>9} {'typed/pl':>9} {'lanes/pl':>9} {'sel/pl':>8} {'unrl/pl':>8} {'prev/pl':>8} {'dec GB/s':>10}")
    right = True
    for name, (codec, values, rng_filter) in columns(n, np.random.default_rng(0)).items():
        if not any(part in name for part in args.only.split(",")):
            continue
        right = measure(module, name, codec, values, rng_filter, args.page_rows, args.repeat) and right
    if not right:
        raise SystemExit("a scan's count or sum differed from the plain scan's (WRONG above; '!': the paged scan)")


if __name__ == "__main__":
    main()
