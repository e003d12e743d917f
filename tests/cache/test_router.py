"""The page router's decisions (cache/router.py), with probe functions standing in for the tiers."""

from __future__ import annotations

import pytest

from hetdb.cache.rates import Rates
from hetdb.cache.router import PageRouter, Route, RouteCounts, check_mode
from hetdb.errors import HetdbError, UnsupportedError

MB = 1 << 20


class Probes:
    """Where a page's copies live; records which probes the router asked, in order."""

    def __init__(self, on_gpu: bool = False, in_host: bool = False, admitted: bool = True) -> None:
        self.where = {"on_gpu": on_gpu, "in_host": in_host, "load_host": admitted}
        self.asked: list[str] = []

    def probe(self, name: str):
        def ask() -> bool:
            self.asked.append(name)
            return self.where[name]
        return ask

    def route(self, router: PageRouter, nbytes: int = 4 * MB, **kw) -> Route:
        return router.route(nbytes, self.probe("on_gpu"), self.probe("in_host"), self.probe("load_host"), **kw)


def test_auto_routes_by_where_copies_live_asking_lazily():
    router = PageRouter("auto", rates=Rates())
    p = Probes(on_gpu=True, in_host=True)
    assert p.route(router) is Route.GPU_RESIDENT and p.asked == ["on_gpu"]
    p = Probes(in_host=True)
    assert p.route(router) is Route.HOST_TO_GPU and p.asked == ["on_gpu", "in_host"]
    p = Probes(admitted=True)
    assert p.route(router) is Route.DISK_TO_HOST and p.asked == ["on_gpu", "in_host", "load_host"]
    p = Probes(admitted=False)  # the host tier refused it: straight into the copy ring
    assert p.route(router) is Route.DISK_DIRECT


def test_forced_routes():
    rates = Rates()
    copy = PageRouter("copy", rates=rates)
    p = Probes(on_gpu=True, in_host=True)
    assert p.route(copy) is Route.HOST_TO_GPU and "on_gpu" not in p.asked
    assert not copy.use_device_tier and copy.use_host_tier
    p = Probes(on_gpu=True, in_host=False, admitted=True)
    assert p.route(copy) is Route.DISK_TO_HOST  # loaded into the host tier, then copied
    disk = PageRouter("disk", rates=rates)
    p = Probes(on_gpu=True, in_host=True)
    assert p.route(disk) is Route.DISK_DIRECT and p.asked == []
    cpu = PageRouter("cpu", gpu=True, cpu_workers=True, rates=rates)
    assert Probes(in_host=True).route(cpu) is Route.HOST_CPU


def test_cpu_connection_routes():
    router = PageRouter("auto", gpu=False, rates=Rates())
    p = Probes(on_gpu=True, in_host=True)
    assert p.route(router) is Route.HOST_CPU and p.asked == ["in_host"]  # no device tier on the CPU
    assert Probes(admitted=False).route(router) is Route.DISK_DIRECT
    assert PageRouter("cpu", gpu=False).use_host_tier
    assert not PageRouter("disk", gpu=False).use_host_tier


def test_modes_a_connection_cannot_follow_are_refused():
    with pytest.raises(HetdbError, match="unknown route"):
        check_mode("fast", gpu=True)
    with pytest.raises(HetdbError, match="runs on the CPU"):
        PageRouter("copy", gpu=False)
    with pytest.raises(UnsupportedError, match="co-processing"):
        PageRouter("cpu", gpu=True)


def test_cost_model_sends_a_host_page_where_it_finishes_first():
    rates = Rates()
    rates.h2d.bytes_per_s = 10e9            # 4 MB: 0.4 ms over the link
    rates.gpu_rate("q").pages_per_s = 1e4   # + 0.1 ms on the GPU
    rates.cpu_rate("q").pages_per_s = 1e3   # 1 ms on a CPU worker
    router = PageRouter("auto", cpu_workers=True, pipeline="q", rates=rates)
    assert router.host_path(4 * MB) is Route.HOST_TO_GPU  # both idle: the GPU is done first
    assert router.host_path(4 * MB, gpu_backlog_s=0.002) is Route.HOST_CPU  # the GPU has 2 ms queued
    # measured rates move the decision: a slow link (1 GB/s: 4 ms per page) favours the CPU
    for _ in range(20):
        rates.observe_h2d(4 * MB, 4 * MB / 1e9)
    assert rates.h2d.bytes_per_s == pytest.approx(1e9, rel=0.01)
    assert router.host_path(4 * MB) is Route.HOST_CPU
    # without CPU workers the host page always goes to the GPU
    assert PageRouter("auto", pipeline="q", rates=rates).host_path(4 * MB) is Route.HOST_TO_GPU


def test_rates_ignore_tiny_samples_and_follow_observations():
    rates = Rates()
    before = rates.disk.bytes_per_s
    rates.observe_disk(4096, 1.0)  # too small to say anything about bandwidth
    assert rates.disk.bytes_per_s == before
    rates.observe_disk(100 * MB, 0.1)
    assert rates.disk.bytes_per_s == pytest.approx(100 * MB / 0.1)
    rates.observe_disk(100 * MB, 0.2)  # a slower scan moves the estimate a step, not all the way
    assert 100 * MB / 0.2 < rates.disk.bytes_per_s < 100 * MB / 0.1


def test_route_counts_add_merge_and_format():
    a = RouteCounts()
    a.add(Route.GPU_RESIDENT, 100, pages=2)
    a.add(Route.DISK_DIRECT, 50)
    b = RouteCounts(admitted=1, bypassed=2)
    b.add(Route.DISK_DIRECT, 25)
    a.merge(b)
    assert a.pages == {"gpu_resident": 2, "disk_direct": 2} and a.bytes["disk_direct"] == 75
    assert a.as_dict()["bypassed"] == 2
    assert a.format() == ("gpu_resident 2 pages/100 B, disk_direct 2 pages/75 B; "
                          "cache admitted=1 evicted=0 bypassed=2")
    assert not RouteCounts()
    c = RouteCounts(deliveries=3)
    c.add(Route.HOST_TO_GPU, 10, pages=8)
    a.merge(c)
    assert a.deliveries == 3 and a.as_dict()["deliveries"] == 3
    assert a.format().startswith("gpu_resident 2 pages/100 B, host_to_gpu 8 pages/10 B, disk_direct 2 pages/75 B "
                                 "in 3 deliveries; cache admitted=1")


def test_zero_copy_columns_follow_the_option_and_the_measured_passing_share():
    from hetdb.cache.router import ZERO_COPY_MAX_PASSING, check_zero_copy, zero_copy_columns

    late = ["lo_revenue", "lo_supplycost"]
    assert zero_copy_columns("off", late, 0.0) == frozenset()
    assert zero_copy_columns("on", late, None) == frozenset(late)
    # auto: only once a run measured that few enough rows reach the late columns
    assert zero_copy_columns("auto", late, None) == frozenset()
    assert zero_copy_columns("auto", late, ZERO_COPY_MAX_PASSING) == frozenset(late)
    assert zero_copy_columns("auto", late, 10 * ZERO_COPY_MAX_PASSING) == frozenset()
    assert zero_copy_columns("on", [], None) == frozenset()
    assert check_zero_copy("auto") == "auto"
    with pytest.raises(HetdbError, match="unknown gpu_zero_copy 'always'"):
        check_zero_copy("always")


def test_rates_remember_the_last_passing_share_per_pipeline():
    r = Rates()
    assert r.passing_share("p") is None
    r.observe_passing("p", 1000, 3)
    r.observe_passing("q", 0, 0)  # nothing scanned: nothing learnt
    assert r.passing_share("p") == 0.003 and r.passing_share("q") is None
    r.observe_passing("p", 1000, 500)
    assert r.passing_share("p") == 0.5


def test_a_connection_refuses_an_unknown_zero_copy_setting(tmp_path):
    import hetdb

    with pytest.raises(HetdbError, match="unknown gpu_zero_copy"):
        hetdb.connect(str(tmp_path / "db"), device="cpu", gpu_zero_copy="sometimes")
    with hetdb.connect(str(tmp_path / "db2"), device="cpu") as con:
        con.sql("SET gpu_zero_copy = 'auto'")
        assert con.options.gpu_zero_copy == "auto"
        with pytest.raises(HetdbError, match="unknown gpu_zero_copy"):
            con.sql("SET gpu_zero_copy = 'x'")
