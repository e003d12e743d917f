"""The page router: where each page of a scan comes from and how it reaches the processor.

HetCache (Chrysogelos et al., "HetCache: Synergising NVMe Storage and GPU acceleration for Memory-
Efficient Analytics", CIDR 2023) has a scan emit page ids and route each page by where copies of it
already live. This module is that decision, in one place; the data movers (``PageStreamer`` for GPU
scans, the CPU table scan) ask it per page and carry out what it says. The paths:

    GPU_RESIDENT  the device tier holds it: the kernel reads it in place
    HOST_TO_GPU   the pinned host tier holds it: one async copy to the GPU
    HOST_CPU      host memory holds it: CPU workers process it (on a CPU connection always; on the GPU
                  when the scan has CPU workers taking morsels too and the cost model says the CPU
                  finishes it first — the hook CPU+GPU co-processing uses)
    DISK_TO_HOST  read from disk into the host tier (which admitted it), then as HOST_TO_GPU / HOST_CPU
    DISK_DIRECT   read from disk straight into the copy ring (GPU) or a transient buffer (CPU): no tier
                  keeps it (the tier refused it, or the route is forced)
    HOST_ZERO_COPY the pinned host tier holds it and the GPU kernel reads, in place over the link, only
                  the rows that passed its filters and probes (a selective pipeline's late columns:
                  ``zero_copy_columns``; HetCache's sub-page access)

The cost model compares, for a host-resident page, the time until it would be done on each
processor: the work already queued there plus its own time (GPU: the link copy at the measured
host→GPU rate and the pipeline's measured GPU pages/s; CPU: the pipeline's measured CPU pages/s per
worker). Rates come from ``cache/rates.py`` and follow observed timings.

``route`` (a connection option) forces one path for tests and measurements:

    auto  the decisions above
    copy  no GPU-resident pages: every page is copied from the host tier (loaded there first if
          needed) and is not kept on the GPU (a GPU connection only)
    cpu   host-tier pages are processed by CPU workers (a GPU connection needs CPU+GPU co-processing,
          which reports whether it has CPU workers; a CPU connection always does)
    disk  no tier at all: every page is read from disk straight to its consumer
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hetdb.cache.rates import Rates, shared_rates
from hetdb.errors import HetdbError, UnsupportedError

MODES = ("auto", "copy", "cpu", "disk")
ADMISSION = ("reuse", "first")  # the connection option gpu_cache_admission
ZERO_COPY = ("off", "on", "auto")  # the connection option gpu_zero_copy


def check_zero_copy(value: str) -> str:
    """``value`` if it is a gpu_zero_copy setting, else a HetdbError naming the accepted ones."""
    if value not in ZERO_COPY:
        raise HetdbError(f"unknown gpu_zero_copy {value!r}: use 'off', 'on' (selective scans read the rows "
                         "they need of late columns in place from pinned host memory) or 'auto'")
    return value


def check_admission(value: str) -> str:
    """``value`` if it is a gpu_cache_admission setting, else a HetdbError naming the accepted ones."""
    if value not in ADMISSION:
        raise HetdbError(f"unknown gpu_cache_admission {value!r}: use 'reuse' (fill the GPU cache on a "
                         "scan's second run) or 'first' (on its first)")
    return value


class Route(StrEnum):
    GPU_RESIDENT = "gpu_resident"
    HOST_TO_GPU = "host_to_gpu"
    HOST_CPU = "host_cpu"
    DISK_TO_HOST = "disk_to_host"
    DISK_DIRECT = "disk_direct"
    HOST_ZERO_COPY = "host_zero_copy"


# gpu_zero_copy='auto': a late column is read in place when at most this share of the scanned rows
# reaches it. A row read over the link costs a 32-byte sector or two (plus the request) where a copy
# moves the page's ~2-4 bytes per row at the link's full rate: below ~0.5% the sectors are the
# smaller cost; the margin covers the request rate, which limits small reads before bytes do.
ZERO_COPY_MAX_PASSING = 0.002


def zero_copy_columns(mode: str, late: list[str], passing: float | None) -> frozenset[str]:
    """The late columns (read by a fused kernel only for rows that passed its filters and probes) a
    warm scan leaves in the pinned host tier for the kernel to read in place: every one with
    gpu_zero_copy 'on'; with 'auto' every one when the share of rows reaching them, as last
    measured for the pipeline (``passing``; None: not yet), is at most ZERO_COPY_MAX_PASSING;
    none with 'off'."""
    if mode == "on" or (mode == "auto" and passing is not None and passing <= ZERO_COPY_MAX_PASSING):
        return frozenset(late)
    return frozenset()


def check_mode(mode: str, gpu: bool, cpu_workers: bool = False) -> str:
    """``mode`` if this connection can follow it, else a HetdbError saying why."""
    if mode not in MODES:
        raise HetdbError(f"unknown route {mode!r}: use one of {', '.join(MODES)}")
    if mode == "copy" and not gpu:
        raise HetdbError("route='copy' moves pages from host memory to the GPU, but this connection runs "
                         "on the CPU (use device='gpu', or route='auto')")
    if mode == "cpu" and gpu and not cpu_workers:
        raise UnsupportedError("route='cpu' on a GPU connection: CPU workers taking morsels of a GPU scan "
                               "(CPU+GPU co-processing) are not available in this build; use route='auto', "
                               "'copy' or 'disk', or device='cpu'")
    return mode


@dataclass
class RouteCounts:
    """Pages and bytes a scan moved by each path, and the placement decisions it caused."""

    pages: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    admitted: int = 0   # pages a tier took in
    evicted: int = 0    # entries a tier evicted meanwhile
    bypassed: int = 0   # pages a tier refused (worth less than what they would displace)
    deliveries: int = 0  # GPU scans: steps handed to the consumer (a row group, or a batch of them)

    def add(self, route: Route | str, nbytes: int, pages: int = 1) -> None:
        name = route.value if isinstance(route, Route) else route
        self.pages[name] = self.pages.get(name, 0) + pages
        self.bytes[name] = self.bytes.get(name, 0) + int(nbytes)

    def merge(self, other: RouteCounts) -> None:
        for name, n in other.pages.items():
            self.pages[name] = self.pages.get(name, 0) + n
        for name, n in other.bytes.items():
            self.bytes[name] = self.bytes.get(name, 0) + n
        self.admitted += other.admitted
        self.evicted += other.evicted
        self.bypassed += other.bypassed
        self.deliveries += other.deliveries

    def __bool__(self) -> bool:
        return bool(self.pages) or bool(self.admitted or self.evicted or self.bypassed)

    def as_dict(self) -> dict:
        return {"pages": dict(self.pages), "bytes": dict(self.bytes), "admitted": self.admitted,
                "evicted": self.evicted, "bypassed": self.bypassed, "deliveries": self.deliveries}

    def format(self) -> str:
        """'gpu_resident 12 pages / 48.0 MB, ...; cache admitted=3 evicted=1 bypassed=0'."""
        parts = [f"{name} {self.pages[name]:,} pages/{self.bytes.get(name, 0):,} B"
                 for name in (r.value for r in Route) if name in self.pages]
        text = ", ".join(parts)
        decisions = f"cache admitted={self.admitted:,} evicted={self.evicted:,} bypassed={self.bypassed:,}"
        if self.deliveries:
            text = f"{text} in {self.deliveries:,} deliveries" if text else text
        return f"{text}; {decisions}" if text else decisions


class PageRouter:
    """Per-page routing for one scan. ``gpu``: the scan feeds a GPU pipeline; ``cpu_workers``: CPU
    workers take morsels of it too (always on a CPU connection); ``pipeline``: the key of the
    pipeline's measured rates."""

    def __init__(self, mode: str = "auto", *, gpu: bool = True, cpu_workers: bool = False,
                 pipeline: str = "scan", rates: Rates | None = None) -> None:
        self.mode = check_mode(mode, gpu, cpu_workers)
        self.gpu = gpu
        self.cpu_workers = cpu_workers or not gpu
        self.pipeline = pipeline
        self.rates = rates or shared_rates()

    # ---- what the scan may use -----------------------------------------------------------------------
    @property
    def use_device_tier(self) -> bool:
        """Whether pages may be served from, and kept in, the GPU tier."""
        return self.gpu and self.mode == "auto"

    @property
    def use_host_tier(self) -> bool:
        """Whether pages may be served from, and loaded into, a host tier."""
        return self.mode != "disk"

    # ---- the decision ----------------------------------------------------------------------------------
    def route(self, nbytes: int, on_gpu: Callable[[], bool], in_host: Callable[[], bool],
              load_host: Callable[[], bool], gpu_backlog_s: float = 0.0, cpu_backlog_s: float = 0.0) -> Route:
        """The path of one page of ``nbytes`` (stored bytes). The probes are asked lazily, in this
        order, and each one that answers True has taken hold of the copy it found or made (a pin, or
        blocks being loaded): ``on_gpu`` (device tier), ``in_host`` (host tier), ``load_host`` (the
        host tier admitted it and its read into the tier has started)."""
        if self.use_device_tier and on_gpu():
            return Route.GPU_RESIDENT
        if self.use_host_tier:
            if in_host():
                return self.host_path(nbytes, gpu_backlog_s, cpu_backlog_s)
            if load_host():
                return Route.DISK_TO_HOST
        return Route.DISK_DIRECT

    def route_with(self, probes: Any, page: Any, nbytes: int) -> Route:
        """``route`` with the probes as methods ``probes.on_gpu(page)``, ``probes.in_host(page)`` and
        ``probes.load_host(page)`` (a scan's hot loop: no closures made per page)."""
        if self.use_device_tier and probes.on_gpu(page):
            return Route.GPU_RESIDENT
        if self.use_host_tier:
            if probes.in_host(page):
                return self.host_path(nbytes)
            if probes.load_host(page):
                return Route.DISK_TO_HOST
        return Route.DISK_DIRECT

    def host_path(self, nbytes: int, gpu_backlog_s: float = 0.0, cpu_backlog_s: float = 0.0) -> Route:
        """A page in host memory: HOST_CPU or HOST_TO_GPU, whichever finishes it first."""
        if not self.gpu:
            return Route.HOST_CPU
        if not self.cpu_workers:
            return Route.HOST_TO_GPU
        if self.mode == "cpu":
            return Route.HOST_CPU
        gpu_done = gpu_backlog_s + self.gpu_seconds(nbytes)
        cpu_done = cpu_backlog_s + self.cpu_seconds()
        return Route.HOST_CPU if cpu_done < gpu_done else Route.HOST_TO_GPU

    def gpu_seconds(self, nbytes: int) -> float:
        """Copy over the link plus the GPU's share of the pipeline, for one page."""
        return self.rates.h2d.seconds(nbytes) + self.rates.gpu_rate(self.pipeline).seconds(1)

    def cpu_seconds(self) -> float:
        """One CPU worker's time for one page of the pipeline."""
        return self.rates.cpu_rate(self.pipeline).seconds(1)

    def observe_cpu(self, pages: int, seconds: float) -> None:
        self.rates.cpu_rate(self.pipeline).observe(pages, seconds)

    def observe_gpu(self, pages: int, seconds: float) -> None:
        self.rates.gpu_rate(self.pipeline).observe(pages, seconds)
