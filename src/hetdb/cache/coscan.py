"""One scan shared by the GPU and CPU workers (CPU+GPU co-processing, "Pump Up the Volume").

The GPU streamer takes row groups from the front of the scan, in its delivery batches; CPU workers
take single row groups from the back. Nothing is split in advance: each side claims what it takes
when it takes it, so neither waits for the other at the end (work is stolen, not pre-split).

Which row groups the CPU may take is the router's decision (``cache/router.py``), made per steal from
measured rates: a CPU worker takes one only when it would finish it before the GPU would have worked
through what is left (the GPU's time per row group: the slower of its pages over the host→GPU
link and the GPU scans' measured pages/s), so the CPU never holds the query up at its end. A row group whose pages the
GPU already holds (the device tier has them all) is never taken: it costs the GPU no copy.

``mode``: "auto" (the decision above) or "on" (co-processing forced: every steal of a row group the
GPU does not hold succeeds, which tests use with tiny morsels so every pipeline mixes CPU and GPU
work).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from hetdb.cache.router import PageRouter
from hetdb.errors import HetdbError

MODES = ("auto", "on")
OPTION_VALUES = ("off", "auto", "on")  # the connection option gpu_coprocess


def check_coprocess(value: str) -> str:
    """``value`` if it is a gpu_coprocess setting, else a HetdbError naming the accepted ones."""
    if value not in OPTION_VALUES:
        raise HetdbError(f"unknown gpu_coprocess {value!r}: use one of {', '.join(OPTION_VALUES)}")
    return value


class SharedScan:
    """The row groups of one scan (in scan order), claimed by the GPU from the front (``take_front``)
    and by CPU workers from the back (``steal``). ``link_bytes[i]``: stored bytes of row group
    ``row_groups[i]``'s pages (what the GPU would copy); ``pages``: pages per row group;
    ``resident(rg)``: whether the device tier holds every page of ``rg`` (such a row group stays with
    the GPU)."""

    def __init__(self, row_groups: list[int], link_bytes: list[int], pages: int, router: PageRouter,
                 mode: str = "auto", resident: Callable[[int], bool] | None = None,
                 gpu_pipeline: str = "scan") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown co-processing mode {mode!r}")
        if len(link_bytes) != len(row_groups):
            raise ValueError("one link byte count per row group")
        self.row_groups = list(row_groups)
        self.link_bytes = list(link_bytes)
        self.pages = max(1, int(pages))
        self.router = router
        self.mode = mode
        self.resident = resident
        # the GPU's pages/s end to end: what GPU scans observe (scan_device.DeviceScanState.close)
        self.gpu_pipeline = gpu_pipeline
        self._lo = 0                       # the next position the GPU takes
        self._hi = len(self.row_groups)    # one past the last position the CPU may take
        self._lock = threading.Lock()
        self.gpu_taken: list[int] = []
        self.cpu_taken: list[int] = []
        self._kept: set[int] = set()       # positions left to the GPU (resident, or not worth taking)
        self.cpu_seconds = 0.0             # CPU workers' busy time on the row groups they took

    def take_front(self, positions: list[int]) -> list[int]:
        """The GPU claims ``positions`` (consecutive, in order); returns the prefix of them no CPU
        worker has taken (an empty list: the scan is done)."""
        with self._lock:
            got = []
            for i in positions:
                if i != self._lo or i >= self._hi:
                    break
                got.append(i)
                self._lo += 1
            self.gpu_taken.extend(self.row_groups[i] for i in got)
            return got

    def remaining(self) -> int:
        with self._lock:
            return self._hi - self._lo

    def steal(self) -> int | None:
        """A CPU worker claims the back-most row group still unclaimed when the router says the CPU
        finishes it first; None when nothing is left for the CPU (the worker stops)."""
        with self._lock:
            while self._hi > self._lo:
                i = self._hi - 1
                rg = self.row_groups[i]
                if self.resident is not None and self.resident(rg):
                    return None  # the GPU holds it, and (scanned in order) likely what precedes it
                if self.mode == "auto" and not self._worth(i):
                    return None
                self._hi -= 1
                self.cpu_taken.append(rg)
                return rg
            return None

    def _worth(self, i: int) -> bool:
        """Whether one CPU worker finishes row group ``i`` before the GPU would finish every row group
        left before it (so taking it shortens the scan). The GPU's time per row group is the slower
        of its copy over the link and the pipeline's GPU rate (copies and kernels overlap)."""
        rates = self.router.rates
        cpu = self.router.cpu_seconds() * self.pages
        gpu_page = rates.gpu_rate(self.gpu_pipeline).seconds(1)
        gpu_left = sum(max(rates.h2d.seconds(self.link_bytes[j]), self.pages * gpu_page)
                       for j in range(self._lo, i))
        return cpu < gpu_left

    def observe_cpu(self, pages: int, seconds: float) -> None:
        """A CPU worker's time for a stolen row group: the router's CPU rate follows it."""
        with self._lock:
            self.cpu_seconds += seconds
        self.router.observe_cpu(pages, seconds)

