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


def test_auto_steals_only_what_the_cpu_finishes_before_the_gpu():
    # a row group: 2 pages; CPU 2/90 s = 22.2 ms, GPU max(link 1 MB at 1 GB/s = 1 ms, 2 pages at
    # 1 ms) = 2 ms: the CPU is worth it only with at least 12 row groups left before it
    s = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=90.0), "auto")
    stolen = []
    while (rg := s.steal()) is not None:
        stolen.append(rg)
    assert stolen == list(range(29, 11, -1))
    assert s.take_front(list(range(30))) == list(range(12))
    # a CPU far slower than the GPU takes nothing; one far faster takes all but the first
    slow = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=1.0), "auto")
    assert slow.steal() is None
    fast = SharedScan(list(range(30)), [1_000_000] * 30, 2, _router(cpu_pages_per_s=1e6), "auto")
    assert [fast.steal() for _ in range(29)] == list(range(29, 0, -1)) and fast.steal() is None


def test_observed_cpu_time_moves_the_rate_and_bad_modes_are_refused():
    router = _router(cpu_pages_per_s=100.0)
    s = SharedScan([0, 1], [1, 1], 4, router, "auto")
    s.observe_cpu(4, 0.001)
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
