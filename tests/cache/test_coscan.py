"""The scan shared by the GPU streamer and CPU workers (cache/coscan.py): the GPU claims from the
front, CPU workers steal from the back, nothing is taken twice or lost (also under concurrent
claims), GPU-resident row groups stay with the GPU, and in "auto" mode a CPU worker steals only what
it finishes before the GPU would have worked through the rest (the router's measured rates)."""

from __future__ import annotations

import threading

import pytest

from hetdb.cache.coscan import SharedScan, check_coprocess
from hetdb.cache.rates import Rates
from hetdb.cache.router import PageRouter
from hetdb.errors import HetdbError


def _router(cpu_pages_per_s: float = 1000.0, gpu_pages_per_s: float = 1000.0,
            h2d_bytes_per_s: float = 1e9) -> PageRouter:
    rates = Rates()
    rates.cpu_rate("coprocess").pages_per_s = cpu_pages_per_s
    rates.gpu_rate("scan").pages_per_s = gpu_pages_per_s
    rates.h2d.bytes_per_s, rates.h2d.latency_s = h2d_bytes_per_s, 0.0
    return PageRouter("auto", gpu=True, pipeline="coprocess", rates=rates)


def test_front_and_back_meet_without_overlap():
    s = SharedScan([10, 11, 12, 13, 14, 15], [1] * 6, 2, _router(), "on")
    assert s.take_front([0, 1]) == [0, 1]
    assert s.steal() == 15 and s.steal() == 14
    # a planned GPU group reaching into what the CPU took ends where the CPU began
    assert s.take_front([2, 3, 4]) == [2, 3]
    assert s.steal() is None and s.take_front([4]) == [] and s.remaining() == 0
    assert s.gpu_taken == [10, 11, 12, 13] and s.cpu_taken == [15, 14]


def test_concurrent_claims_cover_every_row_group_once():
    n = 2000
    s = SharedScan(list(range(n)), [1] * n, 1, _router(), "on")
    got_cpu: list[int] = []
    lock = threading.Lock()

    def cpu() -> None:
        while (rg := s.steal()) is not None:
            with lock:
                got_cpu.append(rg)

    threads = [threading.Thread(target=cpu) for _ in range(3)]
    for t in threads:
        t.start()
    gpu: list[int] = []
    pos = 0
    while True:
        got = s.take_front([pos, pos + 1, pos + 2])
        if not got:
            break
        gpu.extend(got)
        pos += len(got)
    for t in threads:
        t.join()
    assert sorted(gpu + got_cpu) == list(range(n))
    assert gpu == list(range(len(gpu)))  # the GPU's share is a prefix, in scan order
    assert s.gpu_taken == gpu and sorted(s.cpu_taken) == sorted(got_cpu)


def test_gpu_resident_row_groups_are_never_stolen():
    resident = {4, 5}
    s = SharedScan(list(range(6)), [1] * 6, 1, _router(), "on", resident=lambda rg: rg in resident)
    assert s.steal() is None  # the back-most row group is on the GPU already
    assert s.take_front([0, 1, 2, 3, 4, 5]) == [0, 1, 2, 3, 4, 5]


def _blocked_steal(s: SharedScan, most: int = 1) -> tuple[threading.Thread, list]:
    got: list = []
    t = threading.Thread(target=lambda: got.append(s.steal_run(most)))
    t.start()
    t.join(0.2)
    return t, got


def test_auto_probes_then_steals_what_the_measured_cpu_finishes_before_the_gpu():
    # a row group: 2 pages; GPU max(link 1 MB at 1 GB/s = 1 ms, 2 pages at 1 ms) = 2 ms. The prior
    # CPU estimate (2 pages at 90/s = 22.2 ms, times PROBE_MARGIN) lets one probe
    # run out; the others wait for its time
    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=90.0), "auto")
    assert s.steal_run(4) == [29]
    waiting, got = _blocked_steal(s)
    assert waiting.is_alive() and not got  # no decision before the probe's time is known
    s.observe_cpu(1, 5.0, warmup=True)  # the probe compiled the loop: no rate, the next steal probes
    waiting.join(5)
    assert got == [[28]] and s.cpu_rg_seconds is None
    assert s._probing and s.router.rates.cpu_rate("coprocess").observations == 0
    waiting, got = _blocked_steal(s)
    assert waiting.is_alive()
    s.observe_cpu(1, 0.0222)  # this scan's CPU: 22.2 ms a row group
    waiting.join(5)
    assert got == [[27]]
    stolen = [27]
    while (rg := s.steal()) is not None:
        stolen.append(rg)
    # worth it only with at least 12 row groups (24 ms of GPU work) left before it
    assert stolen == list(range(27, 11, -1))
    assert s.take_front(list(range(30))) == list(range(12))
    assert sorted(s.cpu_taken) == list(range(12, 30))


def test_a_run_is_as_long_as_the_gpu_leaves_time_for():
    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=90.0), "auto")
    assert s.steal_run(8) == [29]
    s.observe_cpu(1, 0.010)  # measured: 10 ms a row group; the GPU: 2 ms
    # 8 row groups (80 ms) need 40 row groups before them; 7 (70 ms) need 35 ...; with 28 left
    # before position 28, a run of k ends at 28 - k + 1 and needs 5k < 29 - k: k = 4
    assert s.steal_run(8) == [28, 27, 26, 25]
    assert s.cpu_rg_seconds == pytest.approx(0.010)
    s.observe_cpu(4, 0.080)  # slower now: the mean over the scan's five row groups is 18 ms
    assert s.cpu_rg_seconds == pytest.approx(0.018)


def test_the_gpu_progress_measured_in_the_scan_replaces_the_model():
    s = SharedScan(list(range(10)), [1_000_000] * 10, 2, _router(), "auto")
    assert s.gpu_row_group_seconds(0) == pytest.approx(0.002)
    s.take_front([0, 1, 2])
    assert s.gpu_rg_seconds is None  # the first claim runs ahead of the kernels: no time yet
    import time

    time.sleep(0.02)
    s.take_front([3])
    assert s.gpu_rg_seconds is not None and s.gpu_rg_seconds >= 0.02
    assert s.gpu_row_group_seconds(5) == s.gpu_rg_seconds


def test_without_a_probe_worth_taking_the_cpu_takes_nothing_and_stop_releases_waiters():
    slow = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=1.0), "auto")
    assert slow.steal() is None and slow.cpu_taken == []
    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=90.0), "auto")
    assert s.steal() == 29
    waiting, got = _blocked_steal(s)
    assert waiting.is_alive()
    s.stop()  # (the GPU finished, or a worker failed)
    waiting.join(5)
    assert got == [[]] and s.steal() is None
    # the GPU claiming everything releases waiters too
    s2 = SharedScan(list(range(4)), [1_000_000] * 4, 2, _router(cpu_pages_per_s=1e4), "auto")
    assert s2.steal() == 3
    waiting, got = _blocked_steal(s2)
    s2.take_front([0, 1, 2])
    waiting.join(5)
    assert got == [[]]


def test_forced_runs_leave_the_gpu_a_share():
    s = SharedScan(list(range(10)), [1] * 10, 1, _router(), "on")
    assert s.steal_run(8) == [9, 8, 7, 6, 5]
    assert s.steal_run(8) == [4, 3]
    assert s.take_front([0, 1, 2]) == [0, 1, 2] and s.steal_run(8) == []


def test_observed_cpu_time_moves_the_rate_and_bad_modes_are_refused():
    router = _router(cpu_pages_per_s=100.0)
    s = SharedScan([0, 1], [1, 1], 4, router, "auto")
    s.observe_cpu(1, 0.001)
    assert router.rates.cpu_rate("coprocess").pages_per_s > 100.0 and s.cpu_seconds == pytest.approx(0.001)
    with pytest.raises(ValueError):
        SharedScan([0], [1], 1, router, "sometimes")
    assert check_coprocess("auto") == "auto"
    with pytest.raises(HetdbError, match="gpu_coprocess"):
        check_coprocess("yes")


def test_the_connection_option_is_checked_at_connect_and_set():
    import hetdb

    with pytest.raises(HetdbError, match="gpu_coprocess 'x'"):
        hetdb.connect(":memory:", device="cpu", gpu_coprocess="x")
    with hetdb.connect(":memory:", device="cpu") as con:
        assert con.options.gpu_coprocess == "off"
        con.sql("SET gpu_coprocess = 'AUTO'")
        assert con.options.gpu_coprocess == "auto"
        with pytest.raises(HetdbError, match="use one of off, auto, on"):
            con.sql("SET gpu_coprocess = 'maybe'")


def test_would_steal_claims_nothing_and_agrees_with_steal():
    fast = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=90.0), "auto")
    assert fast.would_steal() and fast.cpu_taken == [] and fast.remaining() == 30
    assert fast.steal_run(1) == [29]
    assert fast.would_steal()  # (the probe is out: a worker would wait for its time)
    slow = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=1.0), "auto")
    assert not slow.would_steal() and slow.steal() is None
    held = SharedScan(list(range(4)), [1] * 4, 1, _router(), "on", resident=lambda rg: rg == 3)
    assert not held.would_steal()


def test_a_rate_measured_by_earlier_scans_skips_the_probe():
    # 9.9 ms a row group measured before; the GPU 2 ms: workers steal runs at once, none waits
    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=1.0), "auto", cpu_prior=0.0099)
    assert s.steal_run(8) == [29, 28, 27, 26, 25]  # 5 x 9.9 ms < 2 ms x 25 row groups before them
    assert s.steal_run(8) == [24, 23, 22, 21]
    assert not s._probing and s.cpu_rg_seconds is None
    s.observe_cpu(2, 0.040)  # this scan's own time replaces the prior
    assert s.cpu_rg_seconds == pytest.approx(0.020)


def test_claimed_but_undelivered_row_groups_still_count_as_the_gpus_work():
    # a streamer that claimed 20 of 30 row groups ahead (an early scan's primed deliveries) has
    # not worked through them: a CPU worker at 9.9 ms a row group (GPU 2 ms) still steals a run
    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=1.0), "auto", cpu_prior=0.0099)
    assert s.take_front(list(range(20))) == list(range(20))
    s.restart_clock()  # (the burst of claims says nothing of the GPU's rate)
    assert s.gpu_rg_seconds is None
    assert s.steal_run(8) == [29, 28, 27, 26, 25]  # 5 x 9.9 ms < 25 row groups of 2 ms before them
    s.delivered(18)  # 18 delivered: 6 row groups (12 ms) before position 24 leave time for one more
    assert s.steal_run(8) == [24]
    s.delivered(10)  # (never past what the GPU claimed)
    assert s._done == 20 and s.steal_run(8) == []


def test_the_gpu_time_left_counts_the_head_start_of_early_copies():
    import time

    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(), "auto")
    assert s.gpu_seconds_left() == pytest.approx(0.060)  # 30 row groups at 2 ms
    s.began = time.perf_counter() - 0.010  # the early scan's copies began 10 ms ago
    assert s.gpu_seconds_left() == pytest.approx(0.050, abs=2e-3)
    s.consumer_began()  # the fused pipeline took the scan over: the head start stops growing
    time.sleep(0.01)
    assert s.gpu_seconds_left() == pytest.approx(0.050, abs=2e-3)


def test_forced_on_waits_for_the_first_cpu_claim_unless_none_can_come():
    import time

    s = SharedScan(list(range(6)), [1] * 6, 1, _router(), "on")
    t = threading.Timer(0.05, lambda: s.steal_run(1))
    t.start()
    t0 = time.perf_counter()
    assert s.wait_for_cpu(5.0) and s.cpu_taken == [5]
    assert time.perf_counter() - t0 < 2.0
    held = SharedScan(list(range(6)), [1] * 6, 1, _router(), "on", resident=lambda rg: rg == 5)
    t0 = time.perf_counter()
    assert not held.wait_for_cpu(5.0)  # the GPU holds the back row group: no worker will claim
    assert time.perf_counter() - t0 < 1.0
    assert not SharedScan(list(range(6)), [1] * 6, 1, _router(), "on").wait_for_cpu(0.01)  # (timed out)


def test_the_reserved_back_is_the_cpus_until_the_gpu_takes_what_is_left_at_its_end():
    import time

    s = SharedScan(list(range(10, 20)), [1_000_000] * 10, 2, _router(), "auto", cpu_prior=0.001)
    s.reserve(4)  # the back 4 row groups: the CPU workers'
    assert s.reserved == 4
    # the GPU's streamer claims at the host's pace: a planned group reaching the reserve ends there
    assert s.take_front([0, 1, 2, 3, 4, 5, 6, 7]) == [0, 1, 2, 3, 4, 5]
    assert s.take_front([6]) == []
    assert s.steal_run(3) == [19, 18, 17]  # reserved: claimed whatever the GPU's time left says
    assert s.take_rest() == [16]  # the GPU's end: what no worker claimed is its now
    assert s.steal_run(1) == [] and not s.would_steal()
    assert sorted(s.gpu_taken + s.cpu_taken) == list(range(10, 20)) and not set(s.gpu_taken) & set(s.cpu_taken)
    # a worker claims a reserved row group only when it would be done by the GPU's expected end
    late = SharedScan(list(range(6)), [1] * 6, 1, _router(), "auto", cpu_prior=0.010)
    late.reserve(3, time.perf_counter() + 0.025)
    assert late.would_steal()
    assert late.steal_run(3) == [5, 4]  # two of 10 ms fit in the 25 ms left, not three
    late.gpu_end = time.perf_counter()
    assert not late.would_steal() and late.steal_run(1) == []
    assert late.take_front(list(range(6))) == [0, 1, 2] and late.take_rest() == [3]
