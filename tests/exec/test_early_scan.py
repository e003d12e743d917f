"""Which scan a query starts early (exec/early_scan.py ``pick_early_scan``), on the real plans of
SSB's 13 queries: the fact table's scan, never the first pipeline; no early scan where there is no
larger table to start or nothing runs before it. Runs without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_data import build_ssb, dataset  # noqa: E402
from diff_queries import load_queries  # noqa: E402

import hetdb  # noqa: E402
from hetdb.exec.early_scan import pick_early_scan  # noqa: E402


@pytest.fixture(scope="module")
def ssb_db(tmp_path_factory):
    return dataset(tmp_path_factory.mktemp("early-scan"), "ssb-0.01", lambda p: build_ssb(p, 0.01, 4096))


def test_the_fact_scan_starts_early_in_every_ssb_query(ssb_db):
    queries = load_queries("ssb")
    picked = 0
    with hetdb.connect(ssb_db.path, create=False) as con:
        engine = con._get_engine()
        for name, sql in queries.items():
            pipes = engine.planned(sql)[0].physical.pipelines
            i = pick_early_scan(pipes, lambda t: engine.db.table(t).num_rows)
            assert i is not None and i > 0, name
            assert pipes[i].source.scan.table == "lineorder", name
            picked += 1
    assert picked == 13


def test_no_early_scan_without_a_larger_table_or_a_pipeline_before_it(ssb_db):
    with hetdb.connect(ssb_db.path, create=False) as con:
        engine = con._get_engine()
        rows = lambda t: engine.db.table(t).num_rows  # noqa: E731
        for sql in ("SELECT sum(lo_revenue) FROM lineorder",
                    "SELECT count(*) FROM lineorder a, lineorder b WHERE a.lo_orderkey = b.lo_orderkey "
                    "AND a.lo_linenumber = b.lo_linenumber AND a.lo_quantity < 2",
                    "SELECT c_region, count(*) FROM customer GROUP BY c_region"):
            pipes = engine.planned(sql)[0].physical.pipelines
            assert pick_early_scan(pipes, rows) is None, sql


def test_a_scan_takes_an_early_streamer_made_with_its_arguments_only() -> None:
    """take_early's check (exec/early_scan._same): the same reader, columns, row groups, tiers and
    options; the early scan's 'copy' route serves a scan routed 'auto' (an operator-at-a-time
    pipeline's: it asks no first_scan), not the other way round."""
    from types import SimpleNamespace as NS

    from hetdb.exec.early_scan import EarlyScan, _same

    reader, budget, cache, host = object(), object(), object(), object()

    def kwargs(mode="copy", **kw):
        base = dict(budget=budget, cache=cache, host_cache=host, shared=None, compressed=False,
                    batch_bytes=64 << 20, overlap=True, zero_copy=frozenset(), neighbours=True,
                    router=NS(mode=mode, gpu=True))
        base.update(kw)
        return base

    args = (reader, ["a", "b"], [0, 1, 2])
    early = EarlyScan(7, None, None, args, kwargs(), 0)
    assert _same(early, (reader, ["a", "b"], [0, 1, 2]), kwargs())
    assert _same(early, args, kwargs("auto"))
    assert not _same(EarlyScan(7, None, None, args, kwargs("auto"), 0), args, kwargs("copy"))
    assert not _same(early, (object(), ["a", "b"], [0, 1, 2]), kwargs())
    assert not _same(early, (reader, ["a"], [0, 1, 2]), kwargs())
    assert not _same(early, (reader, ["a", "b"], [0, 2]), kwargs())
    assert not _same(early, args, kwargs(compressed=True))
    assert not _same(early, args, kwargs(shared=object()))
    assert not _same(early, args, kwargs(cache=object()))


def test_first_scan_passes_through_only_columns_new_and_absent_from_the_device_cache(ssb_db) -> None:
    """scan_device._first_scan (gpu_cache_admission='reuse'), as cache/replay.py replays it: the
    connection's first scan of a table's columns passes through, whether it fits in the device cache
    or not; a scan of the same columns again does not; nor does a first scan of columns the cache holds a
    page of (it fills, copying only what is missing, instead of copying every page again). Real
    reader, real DevicePageCache and budget; no GPU."""
    from types import SimpleNamespace as NS

    from hetdb.backend.gpu.memory import DeviceMemoryBudget
    from hetdb.cache import DevicePageCache, PageKey
    from hetdb.exec.operators.scan_device import _first_scan

    with hetdb.connect(ssb_db.path, create=False) as con:
        reader = con._get_engine().db.table("lineorder")
    rgs = list(range(reader.num_row_groups))
    cache = DevicePageCache(DeviceMemoryBudget(1 << 30), share=0.5)
    device = NS(cache=cache, scanned_columns={}, host_tier=lambda options: object())
    options = NS(gpu_cache_admission="reuse", route="auto", gpu_compressed_cache=False)
    ctx = NS(options=options, device=device)

    def first(names, remember=True):
        return _first_scan(ctx, reader, names, rgs, remember=remember)

    assert first(["lo_orderdate", "lo_revenue"], remember=False)  # (an early scan's question)
    assert first(["lo_orderdate", "lo_revenue"])
    assert not first(["lo_orderdate", "lo_revenue"])  # the second scan fills
    assert not first(["lo_revenue"])
    assert first(["lo_revenue", "lo_discount"])  # a new column, nothing cached: passes through
    assert cache.put(PageKey(reader.name, reader.version, "lo_quantity", rgs[-1]), object(), 1024)
    assert not first(["lo_quantity", "lo_tax"])  # a page of it is on the GPU already
    assert not _first_scan(NS(options=NS(gpu_cache_admission="first", route="auto", gpu_compressed_cache=False),
                              device=device), reader, ["lo_shipmode"], rgs, remember=True)
    # a scan larger than the cache passes through too (it used to stream into the cache by benefit)
    small = NS(cache=DevicePageCache(DeviceMemoryBudget(1 << 16), share=0.5), scanned_columns={},
               host_tier=lambda options: object())
    assert _first_scan(NS(options=options, device=small), reader, ["lo_orderdate"], rgs, remember=True)


def test_the_dimension_scans_start_before_the_fact_scan_in_every_ssb_query(ssb_db):
    """early_dimensions: every pipeline before SSB's fact pipeline scans a dimension table once and
    starts early (gpu_early_dims); none after it, and none whose table another pipeline scans too."""
    from hetdb.exec.early_scan import early_dimensions

    queries = load_queries("ssb")
    with hetdb.connect(ssb_db.path, create=False) as con:
        engine = con._get_engine()
        rows = lambda t: engine.db.table(t).num_rows  # noqa: E731
        for name, sql in queries.items():
            pipes = engine.planned(sql)[0].physical.pipelines
            i = pick_early_scan(pipes, rows)
            dims = early_dimensions(pipes, i)
            tables = [p.source.scan.table for p in dims]
            assert tables and "lineorder" not in tables and len(set(tables)) == len(tables), name
            assert len(dims) == sum(1 for p in pipes[:i] if hasattr(p.source, "scan")), name
            assert early_dimensions(pipes, i, {p.pid for p in dims}) == [], name  # (kept: not run)
        sql = ("SELECT d1.d_year, count(*) FROM lineorder, date d1, date d2 WHERE lo_orderdate = d1.d_datekey "
               "AND lo_commitdate = d2.d_datekey AND d1.d_year = 1993 AND d2.d_year = 1994 GROUP BY d1.d_year")
        pipes = engine.planned(sql)[0].physical.pipelines
        i = pick_early_scan(pipes, rows)
        assert i is not None and early_dimensions(pipes, i) == []


@pytest.mark.parametrize("fact_first,first", [(True, 1), (True, 2), (False, 1)])
def test_the_fact_scans_first_delivery_is_queued_before_the_dimension_scans(ssb_db, monkeypatch, fact_first, first):
    """start_early_scans on SSB q2.1's plan, with the streamers' start recorded instead of made: the fact
    scan's first delivery (``first_only``; FIRST_DELIVERIES 2: and one more, ``_prime_next``), then each
    dimension scan that starts early, then the rest of the fact's (``_prime_rest``); with FACT_FIRST off
    the dimension scans first, then the fact scan whole."""
    import sys as _sys
    from types import SimpleNamespace as NS

    from hetdb.exec import early_scan

    calls = []

    def start(ctx, op, row_groups, streams, shared=None, cap=None, first_only=False, stored=False, tail=False):
        calls.append((op.scan.table, "first" if first_only else "whole"))
        assert tail == (op.scan.table == "lineorder")  # (the fact scan ends on smaller deliveries)
        return NS(iterator=object(), taken=False)

    monkeypatch.setattr(early_scan, "FACT_FIRST", fact_first)
    monkeypatch.setattr(early_scan, "_start", start)
    monkeypatch.setattr(early_scan, "_streams_past", lambda ctx, op: [0])
    monkeypatch.setattr(early_scan, "_prime_rest", lambda ctx, early: calls.append(("lineorder", "rest")))
    monkeypatch.setattr(early_scan, "_prime_next", lambda ctx, early: calls.append(("lineorder", "next")))
    monkeypatch.setattr(early_scan, "FIRST_DELIVERIES", first)
    monkeypatch.setitem(_sys.modules, "cupy", NS(cuda=NS(Device=lambda: NS(id=0))))
    from hetdb.backend.gpu import stream_io

    monkeypatch.setattr(stream_io, "early_streams", lambda device: None)
    with hetdb.connect(ssb_db.path, create=False) as con:
        engine = con._get_engine()
        physical = engine.planned(load_queries("ssb")["q2.1"])[0].physical
        options = NS(gpu_early_scan=True, gpu_batch_bytes=1 << 26, gpu_coprocess="off", gpu_zero_copy="off",
                     gpu_stream_encoded=False, route="auto", gpu_early_dims=True)
        ctx = NS(device=object(), options=options, db=engine.db)
        early_scan.start_early_scans(ctx, physical)
        i = pick_early_scan(physical.pipelines, lambda t: engine.db.table(t).num_rows)
        want = [p.source.scan.table for p in early_scan.early_dimensions(physical.pipelines, i)]
    assert len(want) >= 2 and "lineorder" not in want
    if fact_first:
        assert calls == [("lineorder", "first"), *[("lineorder", "next")] * (first - 1), *[(t, "whole") for t in want],
                         ("lineorder", "rest")]
    else:
        assert calls == [*[(t, "whole") for t in want], ("lineorder", "whole")]


def test_with_stream_encoded_the_fact_scan_of_an_aggregation_starts_early_delivering_pages_as_stored(ssb_db, monkeypatch):
    """start_early_scans under gpu_stream_encoded, on SSB's 13 plans with the streamers' start recorded: the
    fact scan starts early, delivering pages as stored exactly where its pipeline is an aggregation (which
    fusion_stream.stream_form has read them so); the dimension scans as usual."""
    import sys as _sys
    from types import SimpleNamespace as NS

    from hetdb.exec import early_scan
    from hetdb.exec.operators.aggregate import HashAggregate

    got = {}

    def start(ctx, op, row_groups, streams, shared=None, cap=None, first_only=False, stored=False, tail=False):
        got[op.scan.table] = stored
        return NS(iterator=object(), taken=False)

    monkeypatch.setattr(early_scan, "_start", start)
    monkeypatch.setattr(early_scan, "_streams_past", lambda ctx, op: [0])
    monkeypatch.setattr(early_scan, "_prime_rest", lambda ctx, early: None)
    monkeypatch.setattr(early_scan, "_prime_next", lambda ctx, early: None)
    monkeypatch.setitem(_sys.modules, "cupy", NS(cuda=NS(Device=lambda: NS(id=0))))
    from hetdb.backend.gpu import stream_io

    monkeypatch.setattr(stream_io, "early_streams", lambda device: None)
    options = NS(gpu_early_scan=True, gpu_batch_bytes=1 << 26, gpu_coprocess="off", gpu_zero_copy="off",
                 gpu_stream_encoded=True, route="auto", gpu_early_dims=True)
    aggregations = 0
    with hetdb.connect(ssb_db.path, create=False) as con:
        engine = con._get_engine()
        for name, sql in load_queries("ssb").items():
            physical = engine.planned(sql)[0].physical
            got.clear()
            early_scan.start_early_scans(NS(device=object(), options=options, db=engine.db), physical)
            i = pick_early_scan(physical.pipelines, lambda t: engine.db.table(t).num_rows)
            aggregation = isinstance(physical.pipelines[i].sink, HashAggregate)
            aggregations += aggregation
            assert got.pop("lineorder") == aggregation, name
            assert not any(got.values()), name
    assert aggregations > 0
