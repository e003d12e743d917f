"""The executor configurations every fuzz campaign runs under (after test_configurations.py's matrix).

Default CPU executor (2 worker threads), batches of 7 rows, zone maps off, every optimizer pass off,
a host memory limit small enough that hash joins and aggregates partition and spill (with four worker
threads, so that spilling starts while other workers are done), four threads on 16-row batches, the
interpreted operators (compiled CPU loops off), and the fuzz tables written in plain pages
(compression off: a storage option, ``PAGE_COMPRESSION``, that the harness takes out of the options
and passes to ``build_fuzz``; run operator at a time).
"""

from __future__ import annotations

from hetdb.plan.optimizer import PASSES

SPILL_LIMIT = "16KB"  # the fuzz tables' aggregates and joins spill below ~20 KB
PAGE_COMPRESSION = "page_compression"  # not a connect option: how the fuzz tables are written

FUZZ_CONFIGURATIONS: list[tuple[str, dict]] = [
    ("default", {}),
    ("batch_rows=7", {"batch_rows": 7}),
    ("zone_maps=False", {"zone_maps": False}),
    ("all passes off", {"disabled_passes": {name for name, _ in PASSES}}),
    (f"host_memory_limit={SPILL_LIMIT} threads=4", {"host_memory_limit": SPILL_LIMIT, "threads": 4}),
    ("threads=4 batch_rows=16", {"threads": 4, "batch_rows": 16}),
    ("cpu_compile=False", {"cpu_compile": False}),
    # operator at a time: the compiled loops decode pages through the same readers, and their Numba
    # compile per generated query would make this configuration ten times dearer in `make test`
    ("compression=none cpu_compile=False", {PAGE_COMPRESSION: "none", "cpu_compile": False}),
]


# the GPU runs every configuration above (as the fuzz tests do with device=gpu) and three of its own:
# deliveries of one row group each within a tiny GPU memory budget, pages kept compressed on the GPU,
# and warm scans that stream pages as stored and read late columns in place
TINY_GPU = "24MB"
GPU_FUZZ_CONFIGURATIONS: list[tuple[str, dict]] = [
    *FUZZ_CONFIGURATIONS,
    (f"gpu_batch_bytes=0 gpu_memory_limit={TINY_GPU}", {"gpu_batch_bytes": 0, "gpu_memory_limit": TINY_GPU}),
    (f"gpu_compressed_cache=True gpu_memory_limit={TINY_GPU}",
     {"gpu_compressed_cache": True, "gpu_batch_bytes": 256 << 10, "gpu_memory_limit": TINY_GPU}),
    # warm scans past the device cache: pages as stored, late columns read in place from the host tier
    ("gpu_zero_copy=on gpu_stream_encoded=True", {"gpu_zero_copy": "on", "gpu_stream_encoded": True}),
]


def configurations_of(device: str) -> list[tuple[str, dict]]:
    """The configurations a campaign runs on ``device`` (cpu | gpu)."""
    return GPU_FUZZ_CONFIGURATIONS if device == "gpu" else FUZZ_CONFIGURATIONS


def split_options(options: dict) -> tuple[str, dict]:
    """(page compression of the fuzz tables, hetdb.connect options) of one configuration."""
    rest = dict(options)
    return rest.pop(PAGE_COMPRESSION, "auto"), rest
