"""One scan shared by the GPU and CPU workers (CPU+GPU co-processing, "Pump Up the Volume").

The GPU streamer takes row groups from the front of the scan, in its delivery batches; CPU workers
take single row groups from the back. Each side claims what it takes when it takes it, so neither
waits for the other at the end (work is stolen, not pre-split) — except that a warm scan's GPU side
claims at the host's pace, far ahead of its copies (SSB q1.1 at SF 20 on the H100: every delivery
queued 4 ms into the query, the link busy until 13.5 ms), so a co-processed "auto" scan reserves
the back the cost model gives the CPU workers (``reserve``) from the query's start: the GPU's
streamer stops before it, a worker claims a reserved row group only when it would be done by the
GPU's expected end, and what the workers leave the GPU takes once its share is copied
(``take_rest``).

Which row groups the CPU may take is the router's decision (``cache/router.py``), made per steal from
rates measured during this scan: a CPU worker takes a run of row groups only when it would finish
them before the GPU would have worked through what is left before them, so the CPU never holds the
query up at its end. The CPU's time per row group is what this scan's CPU workers took (wall time of
their runs, so contention between them and with the GPU's feeder thread is in it); until one run is
done, the CPU's time is the pipeline's rate measured by earlier co-processed scans (``cpu_prior``);
when there is none, a single probe run of one row group is in flight, taken only when the default
estimate with a margin fits, and the other workers wait for its time. The GPU's time per row group is its progress through this scan (claims over
time) once it has some, else the slower of its pages over the host→GPU link and the GPU scans'
measured pages/s. A row group whose pages the GPU already holds (the device tier has them all) is
never taken: it costs the GPU no copy.

``mode``: "auto" (the decision above) or "on" (co-processing forced: every steal of a row group the
GPU does not hold succeeds, which tests use with tiny morsels so every pipeline mixes CPU and GPU
work).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import numpy as np

from hetdb.cache.comodel import PROBE_MARGIN
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
    and by CPU workers from the back (``steal_run``, ``steal``). ``link_bytes[i]``: stored bytes of
    row group ``row_groups[i]``'s pages (what the GPU would copy); ``pages``: pages per row group;
    ``resident(rg)``: whether the device tier holds every page of ``rg`` (such a row group stays with
    the GPU)."""

    def __init__(self, row_groups: list[int], link_bytes: list[int], pages: int, router: PageRouter,
                 mode: str = "auto", resident: Callable[[int], bool] | None = None,
                 gpu_pipeline: str = "scan", cpu_prior: float | None = None, gpu_slowdown: float = 1.0,
                 default_scale: float = 1.0) -> None:
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
        self.gpu_slowdown = gpu_slowdown  # the GPU next to CPU workers, as earlier scans measured it
        self._lo = 0                       # the next position the GPU takes
        self._done = 0                     # positions the GPU's consumer has had delivered (``delivered``)
        self._by_deliveries = False        # the GPU's rate follows its deliveries, not its claims
        self.expected_cpu = 0              # row groups the cost model expected the CPU to take
        self.workers = 1                   # CPU workers taking part (the cost model's choice in "auto")
        # when an "auto" scan's workers start (exec/coprocess_plan.WORKERS_AFTER): "first", "fact", ...
        self.start_after = "first"
        self.probe = False                 # "auto" on the prior CPU rate: one probe row group measures it
        self._hi = len(self.row_groups)    # one past the last position the CPU may take
        # positions from here on are the CPU workers' (``reserve``): the GPU's streamer stops before
        # them, and takes what the workers left of them only at its end (``take_rest``)
        self._gpu_hi = len(self.row_groups)
        # with a reservation: when the GPU is expected to be through its share (perf_counter); a
        # worker claims a reserved row group only when it would finish it by then
        self.gpu_end: float | None = None
        self.reserved = 0  # row groups ``reserve`` reserved
        # (perf_counter start, end, row groups, thread CPU s) of each CPU worker's morsel, when the
        # query asks for its co-processing timeline (EXPLAIN ANALYZE, scripts)
        self.intervals: list[tuple[float, float, int, float]] | None = None
        self._cond = threading.Condition()
        self.gpu_taken: list[int] = []
        self.cpu_taken: list[int] = []
        self.cpu_seconds = 0.0             # CPU workers' busy time on the row groups they took
        self.cpu_rg_seconds: float | None = None  # measured in this scan: one worker, one row group
        self._cpu_done = 0                 # row groups whose time was observed
        self._probing = False              # the probe run is out, its time not yet known
        self._gpu_first: tuple[float, int] | None = None  # (time, row groups claimed) at the first claim
        self.gpu_rg_seconds: float | None = None  # measured in this scan: the GPU's progress
        self.stopped = False               # nothing more for the CPU: waiting workers leave
        # one worker's time per row group measured by earlier scans of the pipeline (None: probe)
        self.cpu_prior = cpu_prior
        # the default CPU rate (per page) scaled to these pages (it is a 1M-row page's)
        self.default_scale = default_scale
        self.setup_seconds: float | None = None  # the CPU side's set-up, once done (EXPLAIN ANALYZE)
        self._alone: list[float] | None = None   # see gpu_alone_all
        self._alone_prefix: list[float] = []
        # when the GPU's copies began ahead of its consumer (an early scan's priming, at the query's
        # start); None: they begin with it
        self.began: float | None = None
        self._ahead: float | None = None  # the copies' head start, fixed when the consumer began
        # once CPU workers claim in compiled code (``open_claims``): one past the last position the
        # CPU may take, with CLAIMS_STOP set once they may take no more; it holds ``_hi`` from then on
        self._word: np.ndarray | None = None

    def take_front(self, positions: list[int]) -> list[int]:
        """The GPU claims ``positions`` (consecutive, in order); returns the prefix of them no CPU
        worker has taken (an empty list: the scan is done)."""
        with self._cond:
            got = []
            end = min(self._hi, self._gpu_hi)
            for i in positions:
                if i != self._lo or i >= end:
                    break
                got.append(i)
                self._lo += 1
            self.gpu_taken.extend(self.row_groups[i] for i in got)
            if not self._by_deliveries:
                self._progress(len(self.gpu_taken))
            if self._lo >= self._hi:
                self._cond.notify_all()
            return got

    def reserve(self, count: int, gpu_end: float | None = None) -> None:
        """The back ``count`` row groups are the CPU workers': the GPU's streamer stops before them
        (it claims at the host's pace, far ahead of its copies, so a boundary left open went to the
        GPU before a worker came), and a worker claims one only when it would be done with it by
        ``gpu_end`` (when the GPU is expected to be through its share); what they leave the GPU
        takes at its end (``take_rest``)."""
        with self._cond:
            self._gpu_hi = max(self._lo, len(self.row_groups) - max(0, int(count)))
            self.reserved = len(self.row_groups) - self._gpu_hi
            self.gpu_end = gpu_end

    def share_delivered(self) -> bool:
        """Whether the GPU's consumer has had every row group the GPU claimed, and the GPU may claim
        no more before its end (its share stops at the reserved back, or where the CPU began)."""
        with self._cond:
            return self._lo >= min(self._hi, self._gpu_hi) and self._done >= self._lo

    def take_rest(self) -> list[int]:
        """The GPU is through its share: no more claims for the CPU workers; returns the row groups
        (in scan order) none of them claimed, now the GPU's."""
        with self._cond:
            self.stopped = True
            if self._word is not None:
                self._hi = _claims().stop_claims(self._word)
            got = list(range(self._lo, self._hi))
            self._lo = self._gpu_hi = self._hi
            self.gpu_taken.extend(self.row_groups[i] for i in got)
            self._cond.notify_all()
            return [self.row_groups[i] for i in got]

    def _progress(self, count: int) -> None:
        """The GPU's rate from its progress (``count`` row groups claimed, or delivered) over time:
        the first step's row groups are not counted (claims run ahead of the kernels by the
        streamer's depth), the ones since took the time since."""
        now = time.perf_counter()
        if self._gpu_first is None:
            self._gpu_first = (now, count)
        elif count > self._gpu_first[1] and now > self._gpu_first[0]:
            self.gpu_rg_seconds = (now - self._gpu_first[0]) / (count - self._gpu_first[1])

    def delivered(self, count: int) -> None:
        """The GPU's consumer took a delivery of ``count`` row groups (in scan order): what it has
        claimed but not yet had delivered is still ahead of it (``_gpu_left``), and its rate
        follows its deliveries from now on."""
        with self._cond:
            if not self._by_deliveries:
                self._by_deliveries, self._gpu_first = True, None
            self._done = min(self._lo, self._done + count)
            self._progress(self._done)

    def restart_clock(self) -> None:
        """Forget the GPU's rate measured so far (claims of an early scan's primed deliveries came
        in a burst, long before its consumer)."""
        with self._cond:
            self._gpu_first, self.gpu_rg_seconds = None, None

    def consumer_began(self) -> None:
        """The GPU's consumer (the fused pipeline) takes over the early scan: the copies' head start
        stops growing (from now on the GPU works through what it was delivered)."""
        with self._cond:
            if self.began is not None and self._ahead is None:
                self._ahead = time.perf_counter() - self.began

    def remaining(self) -> int:
        with self._cond:
            self._sync()
            return self._hi - self._lo

    def open_claims(self) -> tuple[np.ndarray, int] | None:
        """(the claim word, the first position the CPU may take) for CPU workers that claim reserved
        row groups in compiled code without the interpreter lock (exec/coprocess_batch.py,
        backend/cpu/claims.py: ``claim_one`` takes the back-most one, atomically against the GPU's ``take_rest``); None
        when nothing is reserved for the CPU, or it may take no more."""
        with self._cond:
            self._sync()
            if self.mode != "auto" or self.stopped or self._hi <= self._gpu_hi:
                return None
            if self._word is None:
                self._word = np.array([self._hi], np.int64)
            return self._word, self._gpu_hi

    def reserved_from(self) -> int:
        """The first position of the back reserved for the CPU workers (``reserve``)."""
        with self._cond:
            return self._gpu_hi

    def batch_taken(self, positions: list[int]) -> None:
        """Positions CPU workers claimed in compiled code (``open_claims``), now counted as theirs."""
        with self._cond:
            self.cpu_taken.extend(self.row_groups[i] for i in positions)
            self._sync()

    def _sync(self) -> None:
        if self._word is not None:
            self._hi = int(self._word[0]) & _CLAIMS_MASK

    def steal(self) -> int | None:
        """One row group for a CPU worker (``steal_run`` of at most one)."""
        got = self.steal_run(1)
        return got[0] if got else None

    def steal_run(self, most: int) -> list[int]:
        """A CPU worker claims up to ``most`` back-most row groups still unclaimed (consecutive in the
        scan, returned back to front) that the router says the CPU finishes first; an empty list
        when nothing is left for the CPU (the worker stops). In "auto" mode a worker may wait here
        for the probe run's time."""
        with self._cond:
            while True:
                self._sync()
                if self.stopped or self._hi <= self._lo:
                    return []
                i = self._hi - 1
                if self.resident is not None and self.resident(self.row_groups[i]):
                    return []  # the GPU holds it, and (scanned in order) likely what precedes it
                if self.mode == "on":  # at most half of what is left: the GPU's side takes some too
                    return self._claim(min(max(1, most), max(1, (self._hi - self._lo) // 2)))
                per = self.cpu_rg_seconds if self.cpu_rg_seconds is not None else self.cpu_prior
                if i >= self._gpu_hi:  # (reserved: the GPU does not claim it before its end)
                    return self._claim_reserved(most, per)
                if per is None:
                    if self._probing:
                        self._cond.wait()  # the probe's time decides; then decide again
                        continue
                    prior = self.router.cpu_seconds() * self.default_scale * self.pages * PROBE_MARGIN
                    if prior >= self._gpu_left(i):
                        return []
                    self._probing = True
                    return self._claim(1)
                k = min(max(1, most), self._hi - self._lo)
                while k and per * k >= self._gpu_left(i - k + 1):
                    k -= 1
                return self._claim(k) if k else []

    def would_steal(self) -> bool:
        """Whether a CPU worker's ``steal_run`` would claim a row group now, or wait for the probe's
        time (nothing is claimed): a worker sets the CPU side up only then."""
        with self._cond:
            self._sync()
            if self.stopped or self._hi <= self._lo:
                return False
            i = self._hi - 1
            if self.resident is not None and self.resident(self.row_groups[i]):
                return False
            if self.mode == "on":
                return True
            per = self.cpu_rg_seconds if self.cpu_rg_seconds is not None else self.cpu_prior
            if i >= self._gpu_hi:
                return self._fits_reserved(per)
            if per is None:
                prior = self.router.cpu_seconds() * self.default_scale * self.pages * PROBE_MARGIN
                return self._probing or prior < self._gpu_left(i)
            return per < self._gpu_left(i)

    def _fits_reserved(self, per: float | None) -> bool:
        return self.gpu_end is None or per is None or time.perf_counter() + per < self.gpu_end

    def _claim_reserved(self, most: int, per: float | None) -> list[int]:
        """A run of reserved row groups (``reserve``): as many of ``most`` as end by ``gpu_end``."""
        k = min(max(1, most), self._hi - self._gpu_hi)
        if self.gpu_end is not None and per is not None:
            left = self.gpu_end - time.perf_counter()
            k = min(k, int(left // per) if per > 0 else k)
        return self._claim(k) if k > 0 else []

    def _claim(self, k: int) -> list[int]:
        if self._word is not None:  # (workers in compiled code claim beside this one)
            hi, k = _claims().claim_back(self._word, self._lo, k)
            self._hi = hi - k
            got = [self.row_groups[hi - 1 - j] for j in range(k)]
            self.cpu_taken.extend(got)
            return got
        got = [self.row_groups[self._hi - 1 - j] for j in range(k)]
        self._hi -= k
        self.cpu_taken.extend(got)
        if self.mode == "on":
            self._cond.notify_all()  # (``wait_for_cpu``)
        return got

    def wait_for_cpu(self, timeout: float) -> bool:
        """Forced on: wait (at most ``timeout`` seconds) until a CPU worker has claimed a row group,
        or none is left for one; whether one did. The GPU's streamer claims a whole delivery's row
        groups at once (with small pages, the whole scan), so without it the CPU workers of a
        small scan got nothing."""
        deadline = time.perf_counter() + timeout
        with self._cond:
            self._sync()
            while not self.cpu_taken and not self.stopped and self._hi > self._lo:
                if self.resident is not None and self.resident(self.row_groups[self._hi - 1]):
                    break  # (no worker takes a row group the GPU holds)
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                self._cond.wait(left)
            return bool(self.cpu_taken)

    def gpu_row_group_seconds(self, i: int) -> float:
        """The GPU's time for position ``i``: its measured progress in this scan, else its time alone
        times the slowdown earlier scans measured."""
        if self.gpu_rg_seconds is not None:
            return self.gpu_rg_seconds
        return self.gpu_alone_seconds(i) * self.gpu_slowdown

    def gpu_alone_seconds(self, i: int) -> float:
        """The GPU's time for position ``i`` with no CPU worker beside it, as the rates say: the
        slower of the copy over the link and the pipeline's GPU rate (copies and kernels overlap)."""
        return self.gpu_alone_all()[i]

    def gpu_alone_all(self) -> list[float]:
        """``gpu_alone_seconds`` of every position, as the rates said when first asked (kept: a
        worker's steal asks for sums of them, under the lock and the interpreter's)."""
        got = self._alone
        if got is None:
            rates = self.router.rates
            h2d = rates.h2d
            lat, bw = h2d.latency_s, h2d.bytes_per_s
            kernel = self.pages * rates.gpu_rate(self.gpu_pipeline).seconds(1)
            got = self._alone = [max(lat + b / bw, kernel) for b in self.link_bytes]
            self._alone_prefix = list(itertools.accumulate(got, initial=0.0))
        return got

    def _gpu_left(self, i: int) -> float:
        """The GPU's time for every position before ``i`` it has not had delivered yet (claimed
        ahead, or unclaimed); before its progress is measured, its time alone less the time since
        its copies began ahead of its consumer (they run while the pipelines before it do)."""
        if i <= self._done:
            return 0.0
        if self.gpu_rg_seconds is not None:
            return (i - self._done) * self.gpu_rg_seconds
        self.gpu_alone_all()
        prefix = self._alone_prefix
        ahead = self._ahead if self._ahead is not None else (
            0.0 if self.began is None else time.perf_counter() - self.began)
        return max(0.0, (prefix[i] - prefix[self._done]) * self.gpu_slowdown - ahead)

    def gpu_seconds_left(self) -> float:
        with self._cond:
            self._sync()
            return self._gpu_left(self._hi)

    def observe_cpu(self, row_groups: int, seconds: float, warmup: bool = False,
                    later: float | None = None) -> None:
        """A CPU worker's wall time for a run of ``row_groups`` it took: this scan's CPU time per row
        group follows it (a running mean), and so does the router's CPU rate of the pipeline (in
        "auto" only), which takes ``later`` when given: the run's time without the decoding its
        pages, kept decoded now, spare the next scans (a rate learnt from a first run's decoding
        would keep the model from co-processing the scans that need none).
        ``warmup``: the run compiled the loop; its time is not a rate (the next steal probes again)."""
        if row_groups <= 0:
            return
        with self._cond:
            self.cpu_seconds += seconds
            if warmup:
                self._probing = False
                self._cond.notify_all()
                return
            per = seconds / row_groups
            done = self._cpu_done + row_groups
            self.cpu_rg_seconds = per if self.cpu_rg_seconds is None else (
                (self.cpu_rg_seconds * self._cpu_done + seconds) / done)
            self._cpu_done = done
            self._probing = False
            self._cond.notify_all()
        if self.mode == "auto":  # (forced runs, every worker stealing at once, teach "auto" nothing)
            self.router.observe_cpu(row_groups * self.pages, seconds if later is None or later <= 0 else later)

    def stop(self) -> None:
        """No more row groups for the CPU (the GPU side failed or finished): waiting workers leave."""
        with self._cond:
            self.stopped = True
            if self._word is not None:
                self._hi = _claims().stop_claims(self._word)
            self._cond.notify_all()


_CLAIMS_MASK = (1 << 40) - 1  # (backend/cpu/claims.CLAIMS_MASK: not imported with the module)


def _claims():
    from hetdb.backend.cpu import claims  # (Numba: imported once workers claim in compiled code)

    return claims
