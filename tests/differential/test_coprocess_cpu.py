"""CPU+GPU co-processing (exec/coprocess.py) in a CPU-only form, against DuckDB: on a CPU connection the
fact-table aggregations of SSB and TPC-H are driven as a co-processed GPU scan is, with the GPU's part
played by a compiled CPU worker that claims row groups from the front of the shared scan
(``SharedScan.take_front``) while the co-processing CPU workers steal from the back (mode "on"). What
runs for real: the steals and claims, the join builds copied to host hash tables
(``host_build_side``), the CPU workers' pages decoded out of a host tier (loaded on a miss, pinned
while read), and the merge of their partial states into the aggregation next to the other side's.
The GPU half is checked in test_gpu_coprocess.py."""

from __future__ import annotations

import time
import types

import numpy as np
import pytest
from diff_queries import SSB_ORDERING, TPCH_ORDERING, TPCH_TOLERANCE, load_queries
from diff_suite import run_suite

from hetdb.cache import HostPageCache
from hetdb.exec import compiled_cpu
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.scan import TableScan
from hetdb.exec.pipeline import _Run

FACTS = {"lineorder", "lineitem", "orders", "partsupp"}
DESCRIBED: list[str] = []  # CoProcess.describe() of each co-processed pipeline run by ``coprocessed``
EARLY: list = []  # with an entry: "auto" pipelines start as a GPU query's early fact scan does (log of what started)


class _FrontRun(_Run):
    """The other side of the shared scan: claims row groups from the front, one at a time (taking
    ``delay`` seconds more for each: a slower GPU)."""

    delay = 0.0

    def __init__(self, ctx, pipe, shared) -> None:
        super().__init__(ctx, pipe)
        self.shared = shared
        self.rest: list[int] | None = None  # what the CPU workers left of the back reserved for them

    def next_morsel(self):
        if self.delay:
            time.sleep(self.delay)
        if self.rest is None:
            got = self.shared.take_front([self.shared._lo])
            if got:
                return got[0], self.shared.row_groups[got[0]]
            self.rest = self.shared.take_rest()  # (as scan_device.shared_device_scan at the GPU's end)
        if not self.rest:
            return None
        rg = self.rest.pop(0)
        return self.shared.row_groups.index(rg), rg


class _NoDeviceCache:
    def __contains__(self, key) -> bool:
        return False


def _tier() -> HostPageCache:
    def allocate(nbytes: int) -> np.ndarray:
        raw = np.empty(nbytes + 4096, np.uint8)
        start = (-raw.ctypes.data) % 4096
        return raw[start:start + nbytes]

    return HostPageCache(256 << 20, block_bytes=16 << 10, chunk_bytes=1 << 20, allocate=allocate)


@pytest.fixture()
def coprocessed(monkeypatch):
    """Fact-table aggregations of CPU connections run co-processed; yields the tier and a log of
    (row groups taken from the front, row groups stolen from the back) per pipeline."""
    from hetdb.exec.coprocess_plan import observe_gpu_scan, plan_coprocess

    tier, log = _tier(), []
    DESCRIBED.clear()
    original = compiled_cpu.run_compiled_cpu

    def run(ctx, pipe, run, pool, threads):
        src = pipe.source
        if not (isinstance(src, TableScan) and src.scan.table in FACTS and isinstance(pipe.sink, HashAggregate)):
            return original(ctx, pipe, run, pool, threads)
        reader = run.gsrc
        row_groups = [rg for rg in range(reader.num_row_groups) if src.verdict(ctx, reader, rg) != "skip"]
        front_plan = compiled_cpu._prepare(ctx, pipe)  # (the GPU's part: a compiled CPU worker)
        if isinstance(front_plan, str):
            return original(ctx, pipe, run, pool, threads)
        ctx.device = device = types.SimpleNamespace(host_tier=lambda options: tier, cache=_NoDeviceCache())
        try:
            if EARLY and getattr(ctx.options, "gpu_coprocess", "off") == "auto":
                # (as exec/early_scan.py at the query's start: the CPU workers of a plan whose CPU
                # side is set up start now, and plan_coprocess takes them over)
                from hetdb.exec.coprocess_plan import early_shared_scan, start_early_workers

                shared, _cap = early_shared_scan(ctx, pipe, row_groups)
                if shared is not None:
                    pre = ctx.co_early[src.op_id]
                    EARLY.append(pre[2])
                    start_early_workers(ctx, pipe)
            co, why = plan_coprocess(ctx, pipe, reader, run, row_groups)
            if EARLY and co is not None:
                assert EARLY[-1] is None or co is EARLY[-1]
            if co is None:
                log.append(why)
                ctx.device = None
                began = time.perf_counter()
                got = original(ctx, pipe, run, pool, threads)
                if getattr(ctx.options, "gpu_coprocess", "off") == "auto":  # (as exec/fusion_run.py does)
                    ctx.device = device  # (a run measuring the GPU alone may set the CPU side up)
                    try:
                        observe_gpu_scan(ctx, pipe, reader, len(row_groups), time.perf_counter() - began, None)
                    finally:
                        ctx.device = None
                return got
            co.start()  # (its workers set the CPU side up when the first of them takes a morsel)
            fctx = ExecContext(ctx.db, ctx.backend, ctx.options, ctx.host_memory, ctx.spill_dir)
            fctx.stats, fctx._lock, fctx.cleanup, fctx.results = ctx.stats, ctx._lock, ctx.cleanup, ctx.results
            front = _FrontRun(fctx, pipe, co.shared)
            compiled_cpu._Worker(fctx, pipe, front, front_plan).work()
            lsink = pipe.sink.init_local(ctx, run.gsink)
            for part in co.finish() + front.gsink.batches + [b for _, b in front.gsink.runs]:
                pipe.sink.add_partial(ctx, part, run.gsink, lsink)
            pipe.sink.combine(ctx, run.gsink, lsink)
            log.append((list(co.shared.gpu_taken), list(co.shared.cpu_taken)))
            DESCRIBED.append(co.describe())
        finally:
            ctx.device = None
        ctx.results[pipe.pid] = pipe.sink.finalize(ctx, run.gsink)
        return None

    monkeypatch.setattr(compiled_cpu, "run_compiled_cpu", run)
    yield tier, log
    assert tier.pinned_bytes() == 0


@pytest.mark.parametrize("suite", ["ssb", "tpch"])
def test_coprocessed_aggregations_match_duckdb(suite, coprocessed, ssb_small, tpch_small, expected_answers):
    import hetdb

    tier, log = coprocessed
    ds, ordering, tolerance = ((ssb_small, SSB_ORDERING, None) if suite == "ssb"
                               else (tpch_small, TPCH_ORDERING, TPCH_TOLERANCE))
    queries = load_queries(suite)
    with hetdb.connect(ds.path, device="cpu", threads=3, gpu_coprocess="on") as con:
        for attempt in range(2):  # pages loaded into the tier by the CPU workers, then read out of it
            report = run_suite(f"{suite} co-processed on the CPU ({attempt})", ds, queries, ordering,
                               lambda sql: con.sql(sql).arrow(), tolerance,
                               expected=expected_answers.setdefault(suite, {}))
            assert not report.failures, "\n\n".join(report.failures)
            assert report.compared == len(queries) > 0
        # the CPU workers' pages by route are on the scan's line of EXPLAIN ANALYZE (now out of the tier)
        plan = con.explain(queries["q1.1" if suite == "ssb" else "q01"], analyze=True)
        assert "host_cpu" in plan, plan
    done = [e for e in log if isinstance(e, tuple)]
    assert done, log
    for front, back in done:
        assert not set(front) & set(back)
    # both sides took row groups of some pipeline (each side's partial states merged)
    assert any(front and back for front, back in done)
    assert tier.used_bytes > 0  # the CPU workers' pages went through the host tier


def test_auto_probes_then_keeps_stealing_while_the_measured_cpu_wins(coprocessed, ssb_small, monkeypatch):
    """gpu_coprocess='auto' with a slow front side (50 ms a row group: a CPU row group under a loaded
    CI machine still takes less): one CPU worker probes a row
    group, its measured time (well under the front's) lets the workers go on stealing runs (the
    probe's worker included: it reports its time before it steals again), answers unchanged."""
    import hetdb
    from hetdb.cache import rates as rates_module
    from hetdb.cache import router
    from hetdb.cache.rates import Rates

    rates = Rates()  # nothing measured; a GPU prior as slow as the front side is
    monkeypatch.setattr(rates_module, "DEFAULT_GPU_PAGES_PER_S", 20.0)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    monkeypatch.setattr(_FrontRun, "delay", 0.05)
    _tier_, log = coprocessed
    sql = load_queries("ssb")["q1.1"]
    with hetdb.connect(ssb_small.path, device="cpu", threads=3) as con:
        want = con.sql(sql).fetchall()
        con.sql("SET gpu_coprocess = 'auto'")
        assert con.sql(sql).fetchall() == want  # (the front side alone first: its time is measured)
        assert log and "not measured yet" in log[-1], log
        got = con.sql(sql).fetchall()
    assert got == want and len(got) == 1
    done = [e for e in log if isinstance(e, tuple)]
    assert done, log
    front, back = done[-1]
    assert len(back) > 1 and front, (front, back)


def test_auto_starts_no_worker_when_the_gpu_would_finish_first(coprocessed, ssb_small, monkeypatch):
    """With a GPU page in 50 us (the default) and a CPU page of 1,000 rows in 2.5 ms (the default
    rate is a 1M-row page's: made 1000x slower) the whole small scan is done on the GPU before one
    CPU row group would be: auto co-processes nothing and says why."""
    import hetdb
    from hetdb.cache import rates as rates_module
    from hetdb.cache import router
    from hetdb.cache.rates import Rates

    rates = Rates()
    monkeypatch.setattr(rates_module, "DEFAULT_CPU_PAGES_PER_S", 0.4)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    _tier_, log = coprocessed
    sql = load_queries("ssb")["q1.1"]
    with hetdb.connect(ssb_small.path, device="cpu", threads=3, gpu_coprocess="auto") as con:
        assert len(con.sql(sql).fetchall()) == 1
    assert log and all(isinstance(e, str) and e.startswith("the GPU's estimated") for e in log), log
    assert all(r.observations == 0 for r in rates.cpu.values())  # no CPU worker ran


def test_auto_sets_nothing_up_unless_a_worker_takes_a_morsel_and_a_cached_plan_reuses_it(
        coprocessed, ssb_small, monkeypatch):
    """The CPU side (host copies of the builds, the loop's plan, the worker threads) is made only
    when the cost model expects a gain and a worker is about to take a morsel, and once per cached
    plan: the plan's next runs reuse it (EXPLAIN ANALYZE says so)."""
    import hetdb
    from hetdb.cache import rates as rates_module
    from hetdb.cache import router
    from hetdb.cache.rates import Rates
    from hetdb.exec import coprocess

    made, pools = [], []
    new_setup, worker_pool = coprocess.new_setup, coprocess.worker_pool
    monkeypatch.setattr(coprocess, "new_setup", lambda *a: made.append(a[2].pid) or new_setup(*a))
    monkeypatch.setattr(coprocess, "worker_pool", lambda n: pools.append(n) or worker_pool(n))
    rates = Rates()  # the GPU finishes the small scan before a CPU row group (2.5 ms a 1,000-row page)
    monkeypatch.setattr(rates_module, "DEFAULT_CPU_PAGES_PER_S", 0.4)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    _tier_, log = coprocessed
    sql = "  " + load_queries("ssb")["q1.1"]  # (text of its own: a plan no other test cached)
    with hetdb.connect(ssb_small.path, device="cpu", threads=3, gpu_coprocess="auto") as con:
        want = con.sql(sql).fetchall()
        assert log and all(isinstance(e, str) for e in log), log
        assert not made and not pools
        con.sql("SET gpu_coprocess = 'on'")
        for _ in range(3):  # (the same cached plan each time)
            assert con.sql(sql).fetchall() == want
    assert made and len(made) == len(set(made)), made  # one set-up per pipeline
    assert pools
    runs = [d for d in DESCRIBED if "set-up" in d]
    assert runs and "(reused)" not in runs[0] and all("(reused)" in d for d in runs[1:]), DESCRIBED


@pytest.mark.parametrize("kept_decoded", [False, True])
def test_runs_of_row_groups_with_nulls_and_dictionaries_match_duckdb(kept_decoded, coprocessed, tmp_path, monkeypatch):
    """A fact table of 2,048-row pages whose nullable columns have NULLs on some pages and none on
    others (a CPU worker's run mixes both), a dictionary-encoded string group key and compressed
    integers: the CPU workers' runs of row groups (decoded into run buffers) give DuckDB's answers;
    so do their row groups read from the pages they keep decoded (``kept_decoded``: the second time
    round out of that cache, coprocess_setup.decoded_cache)."""
    import duckdb
    import pyarrow as pa

    import hetdb
    from hetdb import types as T
    from hetdb.exec import coprocess, coprocess_setup
    from hetdb.storage import ColumnSpec, Database

    if not kept_decoded:
        monkeypatch.setattr(coprocess_setup, "DECODED_SHARE", 0.0)

    rng = np.random.default_rng(9)
    n = 61_440
    page = np.arange(n) // 2048
    nulls = (page % 3 == 0) & (rng.random(n) < 0.2)  # every third page has NULLs
    table = pa.table({"o_key": pa.array(np.arange(n), pa.int64()),
                      "o_qty": pa.array(rng.integers(1, 50, n), pa.int32(), mask=nulls),
                      "o_price": pa.array(rng.integers(-10_000, 10_000, n) * 7, pa.int64()),
                      "o_flag": pa.array(rng.choice(["A", "N", "R"], n))})
    database = Database.open(str(tmp_path / "db"), create=True)
    with database.create_table("orders", [ColumnSpec(f.name, T.from_arrow(f.type), True) for f in table.schema],
                               rows_per_page=2048) as w:
        w.append_arrow(table)
    runs = []
    original = coprocess._CoWorker._run_column

    def counted(self, reader, name, rgs, *args):
        runs.append(len(rgs))
        return original(self, reader, name, rgs, *args)

    monkeypatch.setattr(coprocess._CoWorker, "_run_column", counted)
    duck = duckdb.connect()
    duck.register("orders", table)
    queries = ["SELECT o_flag, count(*), count(o_qty), sum(o_qty), sum(o_price), min(o_qty), max(o_price) "
               "FROM orders WHERE o_price > -5000 GROUP BY o_flag",
               "SELECT o_qty, count(*), sum(o_price) FROM orders WHERE o_qty IS NULL OR o_qty < 10 GROUP BY o_qty"]
    with hetdb.connect(str(tmp_path / "db"), device="cpu", threads=3, gpu_coprocess="on") as con:
        for _ in range(2 if kept_decoded else 1):
            for sql in queries:
                got = sorted(con.sql(sql).fetchall(), key=repr)
                want = sorted(duck.sql(sql).fetchall(), key=repr)
                assert got == want and len(got) > 1, sql
    tier, log = coprocessed
    assert any(isinstance(e, tuple) and len(e[1]) > 1 for e in log), log
    if not kept_decoded:
        assert runs and max(runs) > 1  # row groups decoded into a run's buffers
        return
    assert not runs
    kept = coprocess_setup.decoded_cache(tier)
    assert kept.used > 0 and kept.hits > 0  # pages decoded once, read again out of the cache


def test_auto_workers_of_a_set_up_plan_start_with_the_early_scan(coprocessed, ssb_small, monkeypatch):
    """gpu_coprocess='auto' where the cached plan's CPU side is set up already: the CPU workers are
    made and started when the query starts (exec/coprocess_plan.early_shared_scan and
    start_early_workers, as exec/early_scan.py calls them) and the fused pipeline takes them over
    (plan_coprocess); the answers stay DuckDB's (the same as without co-processing). The set-up
    runs on a thread of its own after the run that measured the GPU alone (prepare_cpu_side)."""
    import hetdb
    from hetdb.cache import rates as rates_module
    from hetdb.cache import router
    from hetdb.cache.rates import Rates
    from hetdb.exec import coprocess_plan
    from hetdb.exec.coprocess import CoProcess
    from hetdb.exec.coprocess_plan import wait_prepared

    rates = Rates()
    monkeypatch.setattr(rates_module, "DEFAULT_GPU_PAGES_PER_S", 20.0)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    monkeypatch.setattr(_FrontRun, "delay", 0.05)
    kept_back = []
    keep = CoProcess.keep_decoded

    def keep_decoded(self, row_groups):  # (the set-up's pre-decoding of the back: what it asked, what it kept)
        kept_back.append((list(row_groups), keep(self, row_groups)))
        return kept_back[-1][1]

    monkeypatch.setattr(CoProcess, "keep_decoded", keep_decoded)
    EARLY.append("on")
    _tier_, log = coprocessed
    sql = "   " + load_queries("ssb")["q1.1"]  # (text of its own: a plan no other test cached)
    try:
        with hetdb.connect(ssb_small.path, device="cpu", threads=3) as con:
            want = con.sql(sql).fetchall()
            con.sql("SET gpu_coprocess = 'auto'")
            got = [con.sql(sql).fetchall()]  # (the GPU alone, measured; the CPU side set up at its end)
            assert wait_prepared()  # (on a thread of its own: the next run starts its workers early)
            got += [con.sql(sql).fetchall() for _ in range(3)]
    finally:
        started = EARLY[1:]
        EARLY.clear()
    assert all(g == want for g in got) and len(want) == 1
    assert any(co is not None for co in started), (started, log)  # workers started early
    early = [co for co in started if co is not None]
    assert all(co.finished for co in early)
    # the run that measured the GPU alone set the CPU side up and compiled its loop
    # (coprocess_plan.prepare_cpu_side): the next run's workers started early
    assert started[0] is not None and all(co.setup_reused for co in early)
    assert all(k.__dict__.get("_co_called") for k in early[0].plan.fast_kernels.values() if not isinstance(k, str))
    assert any(co.shared.cpu_taken for co in early), [co.describe() for co in early]
    # and decoded the pages of the scan's back (the workers' share) for them to keep
    rgs = early[0].shared.row_groups
    assert len(kept_back) == 1 and kept_back[0][0] == rgs[::-1][:int(len(rgs) * coprocess_plan.PREDECODE_SHARE)]
    assert kept_back[0][1] == len(kept_back[0][0]) > 0, kept_back


def test_a_split_reserved_at_the_start_gives_the_cpu_the_back_and_the_gpu_the_rest(coprocessed, ssb_small, monkeypatch):
    """gpu_coprocess='auto' with the split forced (coprocess_plan.FORCED_SPLIT: the back row groups
    reserved for the CPU workers when the query starts, SharedScan.reserve): the workers take the
    reserved back, the front side stops before it and takes what they left at its end; answers
    stay DuckDB's (the same as without co-processing)."""
    import hetdb
    from hetdb.cache import rates as rates_module
    from hetdb.cache import router
    from hetdb.cache.rates import Rates
    from hetdb.exec import coprocess_plan

    rates = Rates()
    monkeypatch.setattr(rates_module, "DEFAULT_GPU_PAGES_PER_S", 20.0)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    monkeypatch.setattr(_FrontRun, "delay", 0.02)
    EARLY.append("on")
    _tier_, log = coprocessed
    sql = "    " + load_queries("ssb")["q1.1"]  # (text of its own: a plan no other test cached)
    try:
        with hetdb.connect(ssb_small.path, device="cpu", threads=3) as con:
            want = con.sql(sql).fetchall()
            con.sql("SET gpu_coprocess = 'auto'")
            got = [con.sql(sql).fetchall()]  # (the GPU alone, measured; the CPU side set up at its end)
            assert coprocess_plan.wait_prepared()  # (on a thread of its own)
            monkeypatch.setattr(coprocess_plan, "FORCED_SPLIT", (2, 3))
            got += [con.sql(sql).fetchall() for _ in range(2)]
    finally:
        started = EARLY[1:]
        EARLY.clear()
    assert all(g == want for g in got) and len(want) == 1
    early = [co for co in started if co is not None]
    assert len(early) == 2, (started, log)
    for co in early:
        s = co.shared
        assert s.reserved == 3 and co.finished
        # (no deadline: all of the back; more while the slow front leaves time for it)
        assert set(s.row_groups[-3:]) <= set(s.cpu_taken), co.describe()
        assert sorted(s.gpu_taken + s.cpu_taken) == s.row_groups and s.gpu_taken == s.row_groups[:len(s.gpu_taken)]


@pytest.mark.parametrize("after", ["first", "fact"])
def test_workers_start_as_workers_after_says_and_the_race_counts_that_start_delay(
        after, coprocessed, ssb_small, monkeypatch):
    """coprocess_plan.WORKERS_AFTER: "first" (the default) starts the CPU workers of an "auto" scan
    whose CPU side is set up with the early fact scan (start_early_workers), "fact" when the fact
    pipeline begins; the start delay the race counts is measured per start (comodel.start_delay of
    ``key@after``); answers unchanged."""
    import hetdb
    from hetdb.cache import comodel, router
    from hetdb.cache import rates as rates_module
    from hetdb.cache.rates import Rates
    from hetdb.exec import coprocess_plan

    rates = Rates()
    monkeypatch.setattr(rates_module, "DEFAULT_GPU_PAGES_PER_S", 20.0)
    monkeypatch.setattr(router, "shared_rates", lambda: rates)
    monkeypatch.setattr(_FrontRun, "delay", 0.02)
    monkeypatch.setattr(coprocess_plan, "WORKERS_AFTER", after)
    started = []
    real_start = coprocess_plan.start_early_workers

    def start(ctx, pipe, primed=True):
        real_start(ctx, pipe, primed)
        pre = ctx.co_early[pipe.source.op_id]
        started.append((pre[0].start_after, pre[2].started))

    monkeypatch.setattr(coprocess_plan, "start_early_workers", start)
    EARLY.append("on")
    sql = ("     " if after == "first" else "      ") + load_queries("ssb")["q1.1"]  # (plans no other test cached)
    try:
        with hetdb.connect(ssb_small.path, device="cpu", threads=3) as con:
            want = con.sql(sql).fetchall()
            con.sql("SET gpu_coprocess = 'auto'")
            got = [con.sql(sql).fetchall()]  # (the GPU alone, measured; the CPU side set up at its end)
            assert coprocess_plan.wait_prepared()
            got += [con.sql(sql).fetchall() for _ in range(3)]
    finally:
        EARLY.clear()
    assert all(g == want for g in got) and len(want) == 1
    assert started and all(s == (after, after == "first") for s in started), (started, coprocessed[1])
    delays = rates.__dict__.get("_co_start_delay", {})
    assert delays and all(k.endswith("@" + after) and comodel.start_delay(rates, k) > 0 for k in delays), delays


def test_the_cpu_loop_probes_the_builds_that_keep_the_least_of_their_table_first_when_the_build_says_nothing(
        coprocessed, ssb_small, monkeypatch):
    """A GPU join build records no scanned rows (exec/pipeline.note_scanned_rows runs for CPU pipelines):
    the CPU side's host copies take their table's rows (coprocess_setup.build_scan_rows), so its loop
    probes the most selective builds first as the CPU engine does (on the H100, SSB q4.1 in the GPU
    plan's order, the unfiltered date first: 22 ms a row group against 8.9), not in the plan's order;
    answers as without co-processing. (Before, every share read 1: the plan's order.)"""
    import hetdb
    from hetdb.exec import coprocess, coprocess_setup, pipeline
    from hetdb.exec.compiled_cpu_kernels import pass_share

    monkeypatch.setattr(pipeline, "note_scanned_rows", lambda ctx, pipe: None)  # (as GPU builds: none)
    setups = []
    real = coprocess_setup.new_setup

    def new_setup(*args, **kwargs):
        setups.append(real(*args, **kwargs))
        return setups[-1]

    monkeypatch.setattr(coprocess, "new_setup", new_setup)
    # (lineorder probes both builds at this scale: the CPU planner builds on the smaller side)
    sql = ("select c_nation, count(*) as n, sum(lo_revenue) as revenue from lineorder, customer, supplier "
           "where lo_custkey = c_custkey and lo_suppkey = s_suppkey and c_region = 'AMERICA' group by c_nation")
    with hetdb.connect(ssb_small.path, device="cpu", threads=3, gpu_coprocess="on") as con:
        got = sorted(con.sql(sql).fetchall())
    with hetdb.connect(ssb_small.path, device="cpu", threads=3) as con:
        want = sorted(con.sql(" " + sql).fetchall())  # (a plan of its own: nothing of the run above reused)
    assert got == want and want
    plans = [s.plan for s in setups if s.plan is not None]
    assert plans, ([s.refused for s in setups], coprocessed[1])
    for p in plans:
        shares = [pass_share(op, side) for op, side, _ in p.probes]
        # customer: the build keeps one region of five; supplier: all of it
        assert len(shares) == 2 and shares[0] < 0.5 and shares[1] == 1.0, shares
