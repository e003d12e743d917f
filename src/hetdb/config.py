"""Per-connection settings shared by the planner and the executor."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from hetdb.errors import HetdbError


def usable_cpus() -> int:
    """The number of CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Options:
    device: str = "auto"                 # "auto" | "cpu" | "gpu" (resolved by the Connection)
    gpu_memory_limit: int | None = None  # bytes hetdb may allocate on the GPU (None: 80% of free)
    host_memory_limit: int | None = None  # bytes for operator state on the host (None: 60% of RAM)
    batch_rows: int | None = None        # rows per batch pushed through pipelines (None: page size)
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    zone_maps: bool = True               # page pruning by zone maps
    disabled_passes: frozenset[str] = frozenset()  # optimizer passes switched off by name
    spill_dir: str | None = None         # where host spills go (None: <db>/.spill)
    host_cache_limit: int | None = None  # pinned host page tier (GPU path); None: half of RAM, 0: off
    # A repeated plan may reuse the dense dimension tables its fused GPU kernel built last time
    # (derived data kept in the device cache, invalidated with the table versions).
    reuse_fused_state: bool = True
    # With reuse_fused_state on the GPU: a hot run of a cached plan replays the fused launches its last
    # full run made over resident pages, without the pipeline driver around them (exec/hot_replay.py).
    # False: every run goes through the driver (A/B).
    gpu_hot_replay: bool = True
    # GPU scans larger than the device cache (a gpu_memory_limit below the scan's pages): the row groups
    # whose pages the cache holds run as one fused launch, and only the others are streamed, their
    # copies beside that launch (exec/resident_split.py). False: every row group streams, the cached
    # ones riding along in the deliveries (A/B).
    gpu_resident_split: bool = True
    # CPU pipelines (scan -> filters/probes -> aggregation) run as one compiled Numba loop per morsel
    cpu_compile: bool = True
    timezone: str = "UTC"                # TIMESTAMPTZ display, casts and date parts (DuckDB's TimeZone)
    recursion_limit: int = 10_000        # iterations a WITH RECURSIVE query may take
    # GPU: encoded pages stay compressed in the device page cache and generated kernels decode them
    # as they load them (backend/gpu/encoded.py); off: pages are decoded on arrival. "auto" (the
    # default): on only when the database's pages, decoded, would not fit in the device cache
    # (exec/device.py ``keep_compressed``). On the H100: SSB SF 5 at a 10% budget, q1.1 27.7 vs
    # 29.5 ms, q4.1 42.5 vs 113.4 ms with it on (decoded pages did not fit: the query went to the
    # CPU); SSB SF 20 hot with everything in GPU memory, q1.1 16.5 vs 5.4 ms with it on (the kernels
    # decode every page on every run).
    gpu_compressed_cache: bool | str = "auto"
    # Fused GPU kernels that read pages kept compressed are compiled for at least this many resident
    # blocks of 128 threads per SM (__launch_bounds__: registers capped so they fit; in-kernel decode
    # is latency-bound and gains from more warps), unless they hold the delta/rle tile loaders or the
    # cap spills more than 32 bytes per thread (codegen/runtime.py MAX_SPILL_BYTES). 0: no cap (A/B).
    gpu_encoded_min_blocks: int = 8
    # With gpu_compressed_cache "auto" resolved to compressed: the device cache keeps decoded the
    # columns whose in-kernel decode costs the most scan time per extra byte held, weighted by how
    # often queries read them, within the room the compressed working set leaves (cache/placement.py).
    # H100, SSB SF 20 (compressed) at a 50% budget, hot, one process: 2.03 ms geomean with it vs 6.68
    # without (unlimited 1.89 ms); `hetdb bench` at 10% and 50% with it on: 13/13 answers DuckDB's.
    # tests/exec/test_gpu_decoded_placement.py failed on the H100 for placement on and off alike
    # (cut by its step's timeout before saying why): see docs/gpu.md. False: every page as "auto" says.
    gpu_decoded_placement: bool = True
    # Page routing (cache/router.py): "auto", or one path forced for tests and measurements
    # ("copy": host tier -> GPU only, "cpu": host tier -> CPU workers, "disk": no cache tier).
    route: str = "auto"
    # When a fused GPU scan's pages go into the device cache: "reuse" (default) from the second scan
    # of those columns in this connection: the first streams them through without keeping them
    # (compressed deliveries, decoded in the kernel: a one-off scan pays no per-page decode or copy
    # into the cache), the second fills the cache from the host tier (or, when the scan does not fit,
    # streams into it by benefit) and later ones are hot (a first scan of columns the cache already
    # holds a page of does not pass through: it would copy those again); "first": from the first
    # scan (cache/router.py ADMISSION).
    gpu_cache_admission: str = "reuse"
    # GPU scans of pages the device cache does not keep: consecutive row groups are delivered together
    # in batches of about this many link bytes (one allocation, one decode launch per column);
    # 0: row group by row group, page by page (backend/gpu/stream_batch.py)
    gpu_batch_bytes: int = 64 << 20
    # Batched GPU deliveries overlap better: the first three aim at 1/8, 1/4 and 1/2 of
    # gpu_batch_bytes (the kernel starts after a short first copy instead of a full one), their
    # decode kernels run on a stream of their own, so the copy stream moves the next delivery while
    # this one is decoded and consumed, and a scan past the device cache queues the next delivery's
    # copies before the consumer takes this one. False: as before (A/B).
    gpu_delivery_overlap: bool = True
    # A GPU query whose largest table streams past the device cache (a warm scan out of the pinned
    # host tier) starts that scan's first deliveries when it starts, on streams of their own, while
    # the pipelines before it (dimension scans and builds) run (exec/early_scan.py). False: the
    # scan starts when its pipeline does (A/B).
    gpu_early_scan: bool = True
    # With gpu_early_scan: the scans of the dimension pipelines that run before the fact pipeline
    # start before it too (their small copies queued on the link ahead of the fact's primed ones,
    # which otherwise delayed them: SSB SF 20 q1.2's date delivery ended at 15.7 instead of 1.7 ms
    # on the H100). False: only the fact scan starts early (A/B).
    gpu_early_dims: bool = True
    # Batched GPU deliveries copy a column's pages that lie back to back in the pinned host tier as
    # one copy (the bytes between them, under one 64 KiB block, copied along: backend/gpu/batch_plan.py
    # ``mirror``). False: one copy per page (A/B).
    gpu_copy_neighbours: bool = True
    # Fused and compiled GPU pipelines make what they derive from small dimension builds on the host:
    # dense join tables of up to 64Ki build rows, compacted group keys of up to 64Ki values, string
    # dictionary lookups over up to 64Ki strings (one copy out, NumPy / the CPU backend, one copy
    # in) instead of with many small device launches and waits. False: on the device (A/B).
    gpu_host_small_builds: bool = True
    # Warm GPU scans (pages in the pinned host tier) of selective fused pipelines: columns the kernel
    # reads only for rows that passed its filters and probes stay in pinned host memory, and the
    # kernel reads those rows in place over the link (zero-copy) instead of the whole pages being
    # copied: "off", "on" (every such column of a random-access page), "auto" (default: once a run
    # of the pipeline measured that at most 0.1% of the rows reach them, cache/router.py
    # ``zero_copy_columns``). Only scans that stream past the device cache (exec/fusion_stream.py).
    gpu_zero_copy: str = "off"
    # Warm GPU scans that stream past the device cache deliver pages as stored, and the fused kernel
    # decodes the rows it reads as it loads them (no decode kernels, no decoded copies; exec/
    # fusion_stream.py). Off: such pages are decoded on arrival unless gpu_compressed_cache is on.
    gpu_stream_encoded: bool = False
    # CPU+GPU co-processing of fused GPU pipelines (exec/coprocess.py): CPU workers run the pipeline
    # compiled for the CPU over row groups they take from the back of the scan while the GPU streams
    # the front. "off", "auto" (the cost model, cache/comodel.py, decides whether and with how many
    # workers; the shared scan each steal), "on" (forced)
    gpu_coprocess: str = "off"


_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
          "TIB": 1 << 40}


def parse_bytes(value: str | int | None) -> int | None:
    """'64MB', '1.5GiB', 1000000 -> bytes. Raises HetdbError with the accepted forms."""
    if value is None or isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).upper() not in _UNITS:
        raise HetdbError(f"cannot read memory size {value!r}: write a number with an optional unit, "
                         "e.g. 64MB, 1.5GB, 512MiB")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
