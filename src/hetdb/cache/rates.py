"""Measured rates of the links pages travel over and of the processors that consume them.

The placement policy values a cached page by the link time it saves, and the router compares the
ways a page can reach its consumer; both read these rates. They start from defaults (the H100 box's
measured pinned host→GPU copy rate, a datacenter NVMe drive) and follow what scans observe: each
observation moves the estimate a step (an exponentially weighted mean), so one slow or fast
outlier does not swing decisions. Process-wide (``shared_rates``): every connection moves pages
over the same links.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

EWMA_WEIGHT = 0.25          # weight of a new observation
MIN_OBSERVED_BYTES = 1 << 20  # smaller transfers say more about latency than about bandwidth


@dataclass
class LinkRate:
    """A link: a per-transfer latency plus bytes at a bandwidth."""

    bytes_per_s: float
    latency_s: float
    observations: int = 0

    def seconds(self, nbytes: int) -> float:
        return self.latency_s + nbytes / self.bytes_per_s

    def transfer_seconds(self, nbytes: int) -> float:
        return nbytes / self.bytes_per_s

    def observe(self, nbytes: int, seconds: float) -> None:
        """``nbytes`` moved in ``seconds`` (wall time of a batch of transfers)."""
        if nbytes < MIN_OBSERVED_BYTES or seconds <= 0:
            return
        rate = nbytes / seconds
        self.bytes_per_s = rate if not self.observations else (
            (1 - EWMA_WEIGHT) * self.bytes_per_s + EWMA_WEIGHT * rate)
        self.observations += 1


@dataclass
class WorkRate:
    """Pages per second a processor gets through for one kind of pipeline."""

    pages_per_s: float
    observations: int = 0

    def seconds(self, pages: int) -> float:
        return pages / self.pages_per_s

    def observe(self, pages: int, seconds: float) -> None:
        if pages <= 0 or seconds <= 0:
            return
        rate = pages / seconds
        self.pages_per_s = rate if not self.observations else (
            (1 - EWMA_WEIGHT) * self.pages_per_s + EWMA_WEIGHT * rate)
        self.observations += 1


DEFAULT_H2D = (50e9, 10e-6)     # pinned host -> GPU: 53 GB/s measured on the H100 box
DEFAULT_DISK = (3e9, 100e-6)    # O_DIRECT reads of 4 MiB pages from NVMe
DEFAULT_CPU_PAGES_PER_S = 400.0   # a CPU worker decoding and filtering a 1M-row page: ~2.5 ms
DEFAULT_GPU_PAGES_PER_S = 20000.0  # a GPU kernel over a resident page: ~50 us
# the CPU side of a co-processed scan before its first morsel (host copies and hash tables of the
# join builds, the loop's plan; S14 SSB SF 1 on the H100: 1-5 ms)
DEFAULT_SETUP_S = 3e-3


@dataclass
class Rates:
    """The link and processor rates decisions use."""

    h2d: LinkRate = field(default_factory=lambda: LinkRate(*DEFAULT_H2D))
    disk: LinkRate = field(default_factory=lambda: LinkRate(*DEFAULT_DISK))
    cpu: dict[str, WorkRate] = field(default_factory=dict)  # pipeline kind -> CPU pages/s (one worker)
    gpu: dict[str, WorkRate] = field(default_factory=dict)  # pipeline kind -> GPU pages/s
    # fused pipeline (its spec's text) -> share of scanned rows that passed its filters and probes,
    # as last measured (the router's zero-copy decision, cache/router.py ``zero_copy_columns``)
    passing: dict[str, float] = field(default_factory=dict)
    # pipeline kind -> the CPU side's set-up of a co-processed scan (made, not reused), and the GPU
    # side's wait for its workers' last runs at the end, as last measured (seconds)
    setup: dict[str, float] = field(default_factory=dict)
    end_wait: dict[str, float] = field(default_factory=dict)
    # pipeline kind -> how much slower the GPU got through a co-processed scan than alone, per CPU
    # worker beside it (its feeder thread shares the interpreter lock and the cores with them):
    # slowdown = 1 + this x workers; a running mean
    slowdown: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def observe_passing(self, pipeline: str, rows_in: int, rows_out: int) -> None:
        """A fused pipeline let ``rows_out`` of ``rows_in`` scanned rows through its filters and probes."""
        if rows_in <= 0:
            return
        with self._lock:
            if len(self.passing) >= 4096 and pipeline not in self.passing:
                self.passing.pop(next(iter(self.passing)))
            self.passing[pipeline] = rows_out / rows_in

    def passing_share(self, pipeline: str) -> float | None:
        """The share last observed for ``pipeline`` (None: never run in this process)."""
        with self._lock:
            return self.passing.get(pipeline)

    def observe_setup(self, pipeline: str, seconds: float) -> None:
        """The CPU side of a co-processed scan of ``pipeline`` took ``seconds`` to set up."""
        with self._lock:
            if len(self.setup) >= 4096 and pipeline not in self.setup:
                self.setup.pop(next(iter(self.setup)))
            self.setup[pipeline] = seconds

    def setup_seconds(self, pipeline: str, default: float = DEFAULT_SETUP_S) -> float:
        """The last measured set-up of ``pipeline``'s CPU side, else ``default``."""
        with self._lock:
            return self.setup.get(pipeline, default)

    def observe_end_wait(self, pipeline: str, seconds: float) -> None:
        """The GPU side of a co-processed scan of ``pipeline`` waited ``seconds`` for the CPU
        workers' last runs once its own part was done."""
        with self._lock:
            if len(self.end_wait) >= 4096 and pipeline not in self.end_wait:
                self.end_wait.pop(next(iter(self.end_wait)))
            self.end_wait[pipeline] = seconds

    def end_wait_seconds(self, pipeline: str) -> float:
        with self._lock:
            return self.end_wait.get(pipeline, 0.0)

    def observe_slowdown(self, pipeline: str, factor: float, workers: int) -> None:
        """The GPU's time per row group in a co-processed scan of ``pipeline`` with ``workers`` CPU
        workers beside it was ``factor`` times its time alone."""
        if not factor > 0 or workers <= 0:
            return
        per = max(0.0, factor - 1.0) / workers
        with self._lock:
            if len(self.slowdown) >= 4096 and pipeline not in self.slowdown:
                self.slowdown.pop(next(iter(self.slowdown)))
            old = self.slowdown.get(pipeline)
            self.slowdown[pipeline] = per if old is None else (1 - EWMA_WEIGHT) * old + EWMA_WEIGHT * per

    def gpu_slowdown(self, pipeline: str, workers: int) -> float:
        """The GPU's slowdown with ``workers`` CPU workers beside it, as measured for ``pipeline``
        (1.0: never measured)."""
        with self._lock:
            return 1.0 + self.slowdown.get(pipeline, 0.0) * max(0, workers)

    def cpu_rate(self, pipeline: str) -> WorkRate:
        with self._lock:
            return self.cpu.setdefault(pipeline, WorkRate(DEFAULT_CPU_PAGES_PER_S))

    def forget_cpu(self, pipeline: str) -> None:
        """Drop the CPU rate measured for ``pipeline`` (the next co-processed scan probes it afresh)."""
        with self._lock:
            self.cpu.pop(pipeline, None)

    def gpu_rate(self, pipeline: str) -> WorkRate:
        with self._lock:
            return self.gpu.setdefault(pipeline, WorkRate(DEFAULT_GPU_PAGES_PER_S))

    def observe_h2d(self, nbytes: int, seconds: float) -> None:
        with self._lock:
            self.h2d.observe(nbytes, seconds)

    def observe_disk(self, nbytes: int, seconds: float) -> None:
        with self._lock:
            self.disk.observe(nbytes, seconds)

    def as_dict(self) -> dict[str, float]:
        return {"h2d_bytes_per_s": self.h2d.bytes_per_s, "disk_bytes_per_s": self.disk.bytes_per_s}


_shared = Rates()


def shared_rates() -> Rates:
    """The process's rates (every connection moves pages over the same links)."""
    return _shared
