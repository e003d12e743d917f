"""GPU decode throughput of plain-string pages in codec lz4 / offsets (backend/gpu/strings_codec.py):
every page of the given columns is copied to the device as stored once, then decoded repeatedly with
nvCOMP's batched LZ4 (page headers and chunk directories read from the host copy, as the page
streamers do, or read back from the device) and with the host fallback (HETDB_NVCOMP=0: device ->
host, pyarrow, host -> device); GB/s of decoded bytes (offsets + chars), medians. Needs a GPU and a database written by
`hetdb generate tpch` (compression auto).

Usage: python scripts/string_codec_gpu_bench.py DB [--columns orders.o_comment,lineitem.l_comment] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from hetdb.storage import Database


def main() -> None:
    import cupy

    from hetdb.backend.gpu import strings_codec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--columns", default="orders.o_comment,lineitem.l_comment")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    db = Database.open(args.db)
    nvcomp, reason = strings_codec.nvcomp_module()
    print(f"nvCOMP: {'version ' + nvcomp.__version__ if nvcomp is not None else reason}")
    for spec in args.columns.split(","):
        table, column = spec.split(".")
        r = db.table(table)
        pages = []
        for rg in range(r.num_row_groups):
            loc = r.page_location(column, rg)
            with open(loc.path, "rb") as f:
                f.seek(loc.offset)
                host = np.frombuffer(f.read(loc.length), np.uint8)
            pages.append((rg, cupy.asarray(host), r.page_sections(column, rg), r.row_group_rows(rg),
                          r.page_codec(column, rg), r.decoded_bytes(column, rg), host))
        decoded = sum(p[5] for p in pages)
        stored = sum(int(p[1].shape[0]) for p in pages)
        codecs = sorted({p[4] for p in pages})
        print(f"{spec}: {len(pages)} pages {codecs}, stored {stored / 1e6:.1f} MB, decoded {decoded / 1e6:.1f} MB")
        if any(c not in ("lz4", "offsets") for c in codecs):
            print("  (pages not in a string codec: nothing to measure)")
            continue
        modes = (("nvCOMP, headers read on the host", "1", True), ("nvCOMP, headers read back", "1", False),
                 ("host fallback", "0", True))
        for what, env, host_headers in modes:
            os.environ[strings_codec.NVCOMP_ENV] = env
            times = []
            for _ in range(args.repeat):
                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                for rg, raw, sections, n, codec, _, host in pages:
                    strings_codec.decode_string_page(raw, sections, n, codec, f"{spec} page {rg}",
                                                     [host] if host_headers else None)
                cupy.cuda.Device().synchronize()
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            if env == "1" and nvcomp is None:
                what = "host fallback (no nvCOMP)"
            print(f"  {what:34s}: {med * 1000:8.1f} ms, {decoded / med / 1e9:6.2f} GB/s decoded "
                  f"(runs {', '.join(f'{t * 1000:.1f}' for t in times)} ms)")
        os.environ.pop(strings_codec.NVCOMP_ENV, None)
        if nvcomp is not None and codecs == ["lz4"]:
            run = one_call(pages)
            times = []
            for _ in range(args.repeat):
                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                run()
                cupy.cuda.Device().synchronize()
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            print(f"  {'nvCOMP, every page in one call':34s}: {med * 1000:8.1f} ms, {decoded / med / 1e9:6.2f} GB/s "
                  f"decoded (runs {', '.join(f'{t * 1000:.1f}' for t in times)} ms)")


def one_call(pages: list) -> Any:
    """What decoding every page of a column in one nvCOMP call would cost: the pages' chars sections
    copied (outside the timing) into one device buffer, 16-aligned; the timed part decodes each
    page's offsets and then every chunk of every page in one strings_codec.decompress_sections call."""
    import cupy

    from hetdb.backend.gpu import strings_codec
    from hetdb.backend.gpu.decode import decode_device
    from hetdb.codec import strings as sc

    items, offsets, pos = [], [], 0
    for _, raw, sections, n, _, _, host in pages:
        start, length = sections["chars"]
        items.append((pos, sc.chunk_table(host[start:start + length]), raw[start:start + length]))
        pos += -(-length // 16) * 16
        off_start, off_len = sections["offsets"]
        section = raw[off_start:off_start + off_len]
        offsets.append((section, sc.offsets_codec(host[off_start:off_start + 16]), n))
    buf = cupy.empty(pos, dtype=cupy.uint8)
    for base, _, section in items:
        buf[base:base + section.shape[0]] = section
    nvcomp, _ = strings_codec.nvcomp_module()

    def run() -> None:
        for section, name, n in offsets:
            decode_device(section, name, n + 1, np.int64)
        strings_codec.decompress_sections(nvcomp, buf, [(base, table) for base, table, _ in items])

    return run


if __name__ == "__main__":
    main()
