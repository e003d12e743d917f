"""The co-processing cost model: whether CPU workers taking row groups of a GPU scan finish it sooner
than the GPU alone, from measured rates (``cache/rates.py``).

A co-processed scan (``cache/coscan.SharedScan``) is a race: the GPU works through the row groups from
the front, each CPU worker claims the back-most one left when it is free, and only when it would be
done with it before the GPU reaches it (``steal_run``). ``estimate`` plays that race out with the
rates the decision has:

- the GPU's time per row group alone: for a pipeline whose scans ran on the GPU alone before (with
  gpu_coprocess "auto"), its measured time (exec/coprocess.observe_gpu_scan); else the link copy of
  its stored bytes at the measured host→GPU rate or the GPU scans' pages/s, whichever is slower;
- how much slower the GPU gets through its part while CPU workers run (its feeder is one Python
  thread: it shares the interpreter lock and the cores with them), measured by earlier co-processed
  scans of the pipeline and taken to grow with the number of workers;
- one CPU worker's time per row group (the pipeline's CPU pages/s measured by those scans);
- the number of CPU workers and the set-up the CPU side needs before its first morsel (host copies
  and hash tables of the join builds, the CPU loop's plan; near zero when a cached plan runs again)
  plus the GPU side's wait for the workers at the end, as last measured. The set-up runs on a worker
  thread but holds the interpreter lock the GPU's feeder needs, so it counts against the GPU's time.

``decide`` says whether to co-process, and with how many workers: with a measured CPU rate (taken
MEASURED_MARGIN times slower), the worker count whose race is shortest, when it saves at least MIN_GAIN_S and MIN_GAIN_SHARE of the GPU's time alone (below that the
run-to-run noise of a warm scan decides, and the CPU side's threads are not worth it); with no
measured rate yet, when one probe row group at the prior estimate (the default rate scaled to the
pages' rows, times PROBE_MARGIN) would be done before the GPU is: the probe's time then becomes the
pipeline's rate.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

# a probe run at the prior (unmeasured) CPU estimate is taken only when this many times its
# estimate fits before the GPU would be done. Below 1: the probe is exploration, once per pipeline
# and process (the GPU waits at most for the probe's overrun); with 2, and with 1, SSB q1.1 at SF 20
# (a row group of four 1M-row pages: 10 ms at the default rate, the GPU's scan estimated at 8.9 ms)
# never probed, so never learned the CPU's real rate (the H100's CPU engine: 5.7 ms a row group on
# one thread, hot)
PROBE_MARGIN = 0.7
# co-processing with a measured rate must save at least this much, and this share of the GPU's time
MIN_GAIN_S = 0.5e-3
MIN_GAIN_SHARE = 0.05
# a CPU rate measured by earlier scans is taken as this many times slower: those scans' workers may
# have met less contention (a run that ends after the GPU is done holds the query up)
MEASURED_MARGIN = 1.25


@dataclass(frozen=True)
class CoEstimate:
    """The race of one scan as the model plays it."""

    gpu_s: float           # the GPU alone over every row group
    co_s: float            # the GPU and the CPU workers together, set-up included
    cpu_row_groups: int    # row groups the CPU workers take
    setup_s: float         # the CPU side's set-up (counted against the GPU)
    cpu_rg_s: float        # one CPU worker's time per row group used

    @property
    def gain_s(self) -> float:
        return self.gpu_s - self.co_s


def estimate(gpu_rg_s: list[float], cpu_rg_s: float, workers: int, setup_s: float = 0.0,
             slowdown: float = 1.0, cpu_start_s: float = 0.0, gpu_fixed_s: float = 0.0) -> CoEstimate:
    """The race over row groups whose GPU times (alone) are ``gpu_rg_s`` (in scan order): CPU workers
    (all free once the set-up is done) claim from the back while a claim ends before the GPU,
    ``slowdown`` times slower next to them, reaches that row group. ``gpu_fixed_s``: the GPU's time
    for the scan that the row groups it leaves do not shorten (from the query's start to its first
    copy, after its last: a warm run's end to end less ``gpu_rg_s``), which CPU workers starting
    with the query have too."""
    gpu_s = sum(gpu_rg_s) + gpu_fixed_s
    # starts[i]: when the GPU reaches position i (the set-up delays it)
    starts = list(itertools.accumulate(gpu_rg_s if slowdown == 1.0 else [s * slowdown for s in gpu_rg_s],
                                       initial=setup_s + gpu_fixed_s))
    hi = len(gpu_rg_s)
    free = [setup_s + cpu_start_s] * max(0, workers)  # (the workers start after the GPU's copies did)
    heapq.heapify(free)
    cpu_end = 0.0
    while free and hi > 0 and cpu_rg_s > 0:
        t = heapq.heappop(free)
        done = t + cpu_rg_s
        if done >= starts[hi - 1]:
            continue  # this worker would hold the query up; so would every later claim (t only grows)
        hi -= 1
        cpu_end = max(cpu_end, done)
        heapq.heappush(free, done)
    taken = len(gpu_rg_s) - hi
    co_s = max(starts[hi], cpu_end) if taken else gpu_s + setup_s
    return CoEstimate(gpu_s, co_s, taken, setup_s, cpu_rg_s)


@dataclass(frozen=True)
class CoDecision:
    """``go``: co-process, with ``workers`` CPU workers; ``probe``: on the prior estimate (one worker
    measures the rate first); ``why``: the reason not to (empty when ``go``); ``est``: the race as
    estimated."""

    go: bool
    probe: bool
    why: str
    est: CoEstimate
    workers: int = 0


def decide(gpu_rg_s: list[float], cpu_rg_s: float, measured: bool, workers: int, setup_s: float,
           slowdown: Callable[[int], float] = lambda w: 1.0, cpu_start_s: float = 0.0,
           gpu_fixed_s: float = 0.0) -> CoDecision:
    """Co-process or not, and with how many of at most ``workers`` CPU workers (see the module
    docstring). ``cpu_rg_s``: one CPU worker's time per row group (``measured``: by earlier
    co-processed scans of the pipeline, else the prior); ``slowdown(w)``: the GPU's with ``w``
    workers beside it, as measured by those scans. With a measured rate the worker counts tried
    are ``workers``, its half, quarter, ...: fewer workers slow the GPU less."""
    if not measured:
        est = estimate(gpu_rg_s, cpu_rg_s * PROBE_MARGIN, 1, setup_s, slowdown(workers), cpu_start_s, gpu_fixed_s)
        if est.cpu_row_groups:
            return CoDecision(True, True, "", est, workers)
        return CoDecision(False, True, f"the GPU's estimated {est.gpu_s * 1e3:.1f} ms for the scan is less than "
                                       f"{est.cpu_rg_s * 1e3:.1f} ms for one row group on a CPU worker "
                                       f"(prior rate, x{PROBE_MARGIN:g})", est, workers)
    best: tuple[CoEstimate, int] | None = None
    w = max(1, workers)
    counts = [w >> k for k in range(w.bit_length())]
    latest = sum(gpu_rg_s) * max(1.0, *(slowdown(c) for c in counts)) + gpu_fixed_s
    if setup_s + cpu_start_s + cpu_rg_s * MEASURED_MARGIN >= latest:  # (no worker count lets one row group fit)
        alone = sum(gpu_rg_s) + gpu_fixed_s
        est = CoEstimate(alone, alone + setup_s, 0, setup_s, cpu_rg_s * MEASURED_MARGIN)
        return CoDecision(False, False, _none_fits(est), est, w)
    while True:
        est = estimate(gpu_rg_s, cpu_rg_s * MEASURED_MARGIN, w, setup_s, slowdown(w), cpu_start_s, gpu_fixed_s)
        if best is None or est.gain_s > best[0].gain_s:
            best = (est, w)
        if w == 1:
            break
        w //= 2
    est, w = best
    if est.gain_s >= max(MIN_GAIN_S, MIN_GAIN_SHARE * est.gpu_s):
        return CoDecision(True, False, "", est, w)
    if not est.cpu_row_groups:
        why = _none_fits(est)
    else:
        why = (f"{w} CPU workers would save {est.gain_s * 1e3:.2f} ms of the GPU's estimated "
               f"{est.gpu_s * 1e3:.1f} ms (set-up {est.setup_s * 1e3:.2f} ms, the GPU {slowdown(w):.2f}x "
               f"slower next to them, a CPU row group {est.cpu_rg_s * 1e3:.2f} ms)")
    return CoDecision(False, False, why, est, w)


def _none_fits(est: CoEstimate) -> str:
    return (f"no CPU worker finishes a row group ({est.cpu_rg_s * 1e3:.2f} ms measured) before the GPU "
            f"would (estimated {est.gpu_s * 1e3:.1f} ms for the scan)")


# What co-processing did for a pipeline, end to end: each "auto" run's time from the query's start
# (its early fact scan) to the end of the pipeline's scan, co-processed or on the GPU alone; the model
# stops co-processing a pipeline whose co-processed runs were not OUTCOME_MARGIN times faster than
# its runs alone with the smallest of the SPLIT_SCALES shares (whatever the rates said: a feeder
# thread starved of the interpreter lock, a link or memory shared, shows only there), and tries
# again every EXPLORE_EVERY-th run.
OUTCOME_MARGIN = 0.97
EXPLORE_EVERY = 16
_KEPT = 3  # the last runs of each kind compared (their median; the smaller of two)
# the share of the model's CPU row groups a co-processed run reserves, step by step: a pipeline whose
# co-processed runs were not faster than its runs alone tries the next (smaller) share before the
# outcome keeps it on the GPU alone. The model plays the race with the rates of runs whose GPU went
# alone, and the GPU beside CPU workers loses more than its measured slowdown says (memory and cores
# shared with the link's copies): SSB SF 50 on an H200, 14 workers started with the first delivery,
# q1.2 with 48 row groups of 287 on the CPU 27.3 ms against 31.7 alone, with the model's 52-57 (and
# 72) no faster than alone (q1.1: 31.6-32.5 ms against 31.3); q3.3 with its 154 row groups 47.5 ms
# against 41.3, with 48 39.6.
SPLIT_SCALES = (1.0, 0.5, 0.25)


@dataclass
class Outcome:
    alone: list[float]
    co: list[float]
    refused: int = 0  # runs the outcome kept on the GPU alone since the last co-processed one
    step: int = 0     # the SPLIT_SCALES share its co-processed runs now take


def _typical(times: list[float]) -> float:
    s = sorted(times)
    return s[(len(s) - 1) // 2]  # (the median of three; of two the smaller: a compile, a probe)


def observe_outcome(rates: object, pipeline: str, coprocessed: bool, seconds: float) -> None:
    """One "auto" run of ``pipeline`` took ``seconds`` from its query's start to its scan's end."""
    if seconds <= 0:
        return
    store = _outcomes(rates)
    with _OUTCOME_LOCK:
        o = store.get(pipeline)
        if o is None:
            o = store[pipeline] = Outcome([], [])
        kept = o.co if coprocessed else o.alone
        kept.append(seconds)
        del kept[:-_KEPT]
        if coprocessed:
            o.refused = 0


def alone_seconds(rates: object, pipeline: str) -> float | None:
    """What ``pipeline``'s "auto" runs on the GPU alone took from their query's start to their scan's
    end (the least of the last ones: the first may have been cold), or None when none was measured."""
    store = _outcomes(rates)
    with _OUTCOME_LOCK:
        o = store.get(pipeline)
        return min(o.alone) if o is not None and o.alone else None


def outcome_refuses(rates: object, pipeline: str) -> str:
    """Why not to co-process ``pipeline`` by what its earlier "auto" runs took ("" when they do not
    say so: fewer than two co-processed runs or none alone, co-processed ones faster than two or more
    runs alone, a smaller CPU share to try next (``SPLIT_SCALES``: the runs so far were not faster),
    or a run that tries again)."""
    store = _outcomes(rates)
    with _OUTCOME_LOCK:
        o = store.get(pipeline)
        if o is None or len(o.co) < 2 or not o.alone:
            return ""
        co, alone = _typical(o.co), _typical(o.alone)
        if co < alone * OUTCOME_MARGIN:
            if len(o.alone) > 1:
                return ""
            # one run alone - the first, which measured the GPU's rates and may have paid a cold cache or
            # compile (SSB q1.1 at SF 20: 40 ms alone, then ~24 ms co-processed, 17 ms alone warm): this run
            # measures the GPU alone once more before co-processing is taken as faster
            return (f"its co-processed runs took {co * 1e3:.1f} ms to the end of its scan, its one run on the "
                    f"GPU alone {alone * 1e3:.1f} ms: a second run alone first")
        if o.step + 1 < len(SPLIT_SCALES):
            o.step += 1  # (a smaller share next: its runs are compared afresh)
            o.co.clear()
            return ""
        o.refused += 1
        if o.refused % EXPLORE_EVERY == 0:
            return ""
    return (f"its co-processed runs took {co * 1e3:.1f} ms to the end of its scan, on the GPU alone "
            f"{alone * 1e3:.1f} ms (with {SPLIT_SCALES[-1]:g} of the model's share on the CPU)")


def reprobe(rates: object, pipeline: str) -> bool:
    """The model kept ``pipeline`` on the GPU alone because no CPU worker fits a row group at its
    measured rate: whether this run measures the rate again (the EXPLORE_EVERY-th such run, then
    each time their count has grown four times over: a probe that was right costs the GPU's wait
    for one slow row group each time). A rate one probe measured stays otherwise (a running mean
    moves slowly), and a probe's row group may meet what later ones do not (SSB q3.2 at SF 50 on an H200: its probe's loop 292 ms a row group, q3.1's
    16 ms: the pipeline stayed on the GPU alone for good)."""
    store = _kept(rates, "_co_rate_refused")
    with _OUTCOME_LOCK:
        n = store[pipeline] = store.get(pipeline, 0) + 1
    times, left = divmod(n, EXPLORE_EVERY)
    return not left and times & (times - 1) == 0 and (times.bit_length() - 1) % 2 == 0


def split_scale(rates: object, pipeline: str) -> float:
    """The share of the model's CPU row groups ``pipeline``'s co-processed runs take now
    (``SPLIT_SCALES``, stepped down by ``outcome_refuses``)."""
    o = _outcomes(rates).get(pipeline)
    return SPLIT_SCALES[o.step] if o is not None else SPLIT_SCALES[0]


def _outcomes(rates: object) -> dict[str, Outcome]:
    return _kept(rates, "_co_outcomes")


def _kept(rates: object, name: str) -> dict:
    """The model's per-pipeline book ``name`` kept on the rates object (made on first use)."""
    got = rates.__dict__.get(name)
    if got is None:
        with _OUTCOME_LOCK:
            got = rates.__dict__.setdefault(name, {})
    return got


_OUTCOME_LOCK = threading.Lock()


def observe_start_delay(rates: object, pipeline: str, seconds: float) -> None:
    """The CPU workers of an "auto" run of ``pipeline`` started ``seconds`` after its GPU side began
    (the early scan's priming ran first): a running mean the race's set-up counts."""
    store = _kept(rates, "_co_start_delay")
    with _OUTCOME_LOCK:
        old = store.get(pipeline)
        store[pipeline] = seconds if old is None else 0.75 * old + 0.25 * seconds


def start_delay(rates: object, pipeline: str) -> float:
    """``observe_start_delay``'s mean for ``pipeline`` (0 when never measured)."""
    return rates.__dict__.get("_co_start_delay", {}).get(pipeline, 0.0)
