"""The GPU tier's trace replay (cache/replay.py, cache/trace.py): traces from the real planner over a
real SSB database, replayed through the real DevicePageCache as GPU scans call it, under the benefit
policy, LRU (the tier at 69951da) and clairvoyant policies. No GPU needed."""

from __future__ import annotations

import functools
import math
import random

import numpy as np
import pytest

import hetdb
from hetdb.backend.gpu.stream import device_page_bytes, page_codec, page_layout
from hetdb.bench.suites import load_queries
from hetdb.cache import DevicePageCache, PageKey
from hetdb.cache.policy import BenefitPolicy
from hetdb.cache.replay import CACHE_SHARE, PageRef, QueryRef, ScanRef
from hetdb.cache.replay import replay as _replay
from hetdb.cache.trace import data_bytes, query_trace, scale, ssb_factors, suite_trace, table_rows
from hetdb.errors import HetdbError

MIB = 1 << 20


def replay(*args, **kwargs):
    """``cache.replay.replay`` with the cache holding half of the budget: the synthetic traces here
    are sized for that (a budget of 2 x N MiB holds N one-MiB pages)."""
    kwargs.setdefault("share", 0.5)
    return _replay(*args, **kwargs)


def test_the_replayed_cache_share_is_the_gpu_connections():
    from hetdb.exec.device import CACHE_SHARE as GPU_SHARE

    assert CACHE_SHARE == GPU_SHARE


@pytest.fixture(scope="module")
def ssb_con(tmp_path_factory):
    from hetdb.datagen import ssb
    from hetdb.storage import Database

    path = str(tmp_path_factory.mktemp("replay-ssb") / "db")
    db = Database.open(path, create=True)
    ssb.generate(db, 0.001, workers=1)
    con = hetdb.connect(path, device="cpu")
    yield con
    con.close()


@pytest.fixture(scope="module")
def ssb_sf20(ssb_con):
    """The 13 SSB queries' GPU scans with SF 20 page sizes, and the data's bytes on disk at SF 20."""
    trace = suite_trace(ssb_con, [(q.name, q.sql) for q in load_queries("ssb")])
    factors = ssb_factors(0.001, 20)
    return scale(trace, table_rows(ssb_con), factors), data_bytes(ssb_con, factors=factors)


# ---- synthetic traces ---------------------------------------------------------------------------------
def _scan(table: str, columns: list[str], rgs: int, held: int = MIB, link: int = MIB // 2) -> ScanRef:
    return ScanRef(table, [[PageRef(PageKey(table, 1, c, rg), held, link) for c in columns]
                           for rg in range(rgs)])


def _hot_and_scans(rounds: int = 8) -> list[QueryRef]:
    """A hot query over 8 pages every round; every other round a one-off scan of 60 pages of
    another table (a scan far larger than the tier)."""
    out = []
    for r in range(rounds):
        out.append(QueryRef("hot", [_scan("dim", ["a", "b"], 4)]))
        if r % 2:
            out.append(QueryRef(f"scan{r}", [_scan(f"big{r}", ["x", "y", "z"], 20)]))
    return out


def test_a_scan_larger_than_the_tier_does_not_evict_the_hot_set():
    queries = _hot_and_scans()
    limit = 2 * 12 * MIB  # the cache holds 12 pages: the hot set (8) and a little more
    # (admission 'first': the policy judges the hot query's first read; 'reuse' is tested below)
    benefit = replay(queries, limit, "benefit", admission="first")
    lru = replay(queries, limit, "lru", admission="first")
    hot = {PageKey("dim", 1, c, rg) for c in "ab" for rg in range(4)}
    assert hot <= set(benefit.cache.keys())
    # after its first run the hot query moves nothing: every one of its pages is resident
    hot_runs = [i for i, q in enumerate(queries) if q.name == "hot"]
    assert [benefit.link_bytes[i] for i in hot_runs[1:]] == [0] * (len(hot_runs) - 1)
    assert benefit.hit_pages[hot_runs[-1]] == 8
    # LRU lets each scan flush the hot set, which is then copied again
    assert [lru.link_bytes[i] for i in hot_runs[2::2]] == [8 * MIB // 2] * len(hot_runs[2::2])
    assert benefit.total_link_bytes < lru.total_link_bytes


def test_working_memory_evicts_cached_pages_as_the_gpu_does():
    """64 MiB limit, cache 32 MiB; a fact scan of 36 one-MiB pages streams (pages the cache does not
    admit are held transiently). With its operators holding 30 MiB, the transient pages no longer
    fit beside the cache, so they evict cached pages and the next runs move more; working memory
    past the operators' 32 MiB share is not reserved (counted over the limit), as on the GPU."""
    q = QueryRef("q", [_scan("dim", ["a"], 4), _scan("fact", ["x", "y", "z"], 12)])
    plain = replay([q] * 3, 64 * MIB, admission="first")
    heavy = replay([QueryRef("q", q.scans, working=30 * MIB)] * 3, 64 * MIB, admission="first")
    assert heavy.link_bytes[0] == plain.link_bytes[0] == 20 * MIB
    assert heavy.link_bytes[1] > plain.link_bytes[1] > 0 and heavy.link_bytes[2] > plain.link_bytes[2]
    assert heavy.cache.budget.used_bytes == heavy.cache.used_bytes  # released at the query's end
    assert replay([QueryRef("q", q.scans, working=33 * MIB)] * 3, 64 * MIB,
                  admission="first").link_bytes == plain.link_bytes
    # a scan that fits beside the working memory is not affected by it
    small = QueryRef("q", [_scan("dim", ["a"], 4), _scan("fact", ["x", "y", "z"], 8)], working=30 * MIB)
    assert replay([small] * 3, 64 * MIB, admission="first").link_bytes == [14 * MIB, 0, 0]


def test_a_repeated_scan_larger_than_the_tier_keeps_the_part_that_fits():
    queries = [QueryRef("q", [_scan("t", ["c"], 40)])] * 4
    limit = 2 * 10 * MIB
    benefit = replay(queries, limit, "benefit")
    lru = replay(queries, limit, "lru")
    assert lru.link_bytes == [40 * MIB // 2] * 4  # LRU evicts each page just before it is read again
    assert benefit.link_bytes[0] == 40 * MIB // 2
    assert benefit.link_bytes[2:] == [30 * MIB // 2] * 2  # 10 of the 40 pages stay and hit
    assert replay(queries, limit, "oracle").total_link_bytes <= benefit.total_link_bytes


def test_kept_pages_are_never_evicted_by_a_replay():
    kept = [PageKey("pinned", 1, "p", rg) for rg in range(3)]

    def make(budget, share, policy):
        cache = DevicePageCache(budget, share=share, policy=policy)
        for key in kept:
            assert cache.put(key, np.zeros(1), MIB)
            cache.keep(key)
        return cache

    queries = _hot_and_scans(6) + [QueryRef("q", [_scan("t", ["c"], 40)])] * 3
    for policy in ("benefit", "lru", "belady", "oracle"):
        result = replay(queries, 2 * 12 * MIB, policy, make_cache=make)
        assert set(kept) <= set(result.cache.keys()), policy
        assert result.cache.kept_bytes() == 3 * MIB


def test_a_page_moving_more_bytes_is_kept_before_one_moving_fewer():
    """Two columns of equal device size, read equally often: the one whose pages move more bytes
    over the link (compressed less) is the one worth keeping."""
    rich = _scan("t", ["rich"], 10, link=MIB)
    poor = _scan("t", ["poor"], 10, link=MIB // 8)
    queries = [QueryRef("q", [rich, poor])] * 6
    result = replay(queries, 2 * 10 * MIB, "benefit")
    held = [k.column for k in result.cache.keys()]
    assert held.count("rich") == 10 and held.count("poor") == 0
    assert result.total_link_bytes <= replay(queries, 2 * 10 * MIB, "lru").total_link_bytes


def _not_in(pinned: frozenset, key: str) -> bool:
    return key not in pinned


def test_displace_decides_as_victims_then_admit():
    """The one-pass decision (stops at the victim that tips the balance) takes exactly the
    decisions that choosing the victims and then judging them took."""
    rng = random.Random(3)
    for trial in range(30):
        policy = BenefitPolicy(sample=rng.choice([1, 4, 8, 16]))
        keys = [f"k{i}" for i in range(40)]
        for _ in range(300):
            key = rng.choice(keys[: rng.randint(5, 40)])
            policy.record(key, fraction=rng.choice([None, 0.5, 1.0]))
            if key not in policy and rng.random() < 0.5:
                policy.insert(key, rng.choice([100, 400, 1000]), 1e-5, rng.random() * 1e-3)
            if rng.random() < 0.05 and len(policy.order()) > 3:
                policy.remove(policy.order()[-1])
        pinned = frozenset(rng.sample(keys, 5))
        evictable = functools.partial(_not_in, pinned)

        for key in rng.sample(keys, 10):
            nbytes, latency, transfer, lost = rng.choice([50, 500, 2000]), 1e-5, rng.random() * 1e-3, \
                rng.choice([0.0, 0.0, 1e-7])
            victims = policy.victims(nbytes, evictable)
            expect = victims is not None and (math.isfinite(policy.reuse_distance(key)) or not victims) \
                and policy.admit(key, latency, transfer, victims, lost)
            got, worth = policy.displace(key, latency, transfer, nbytes, evictable, lost)
            assert (got is not None) == bool(expect), (trial, key)
            if got is not None:
                assert got == victims
                assert worth == pytest.approx(policy.loss(victims))


# ---- traces of the real SSB queries ---------------------------------------------------------------------
@pytest.mark.parametrize("compressed", [False, True, None])
def test_trace_holds_the_pages_a_gpu_scan_streams(ssb_con, compressed):
    """Each page with the device bytes the GPU cache holds under ``gpu_compressed_cache`` (None:
    the connection's option, on by default) and the stored bytes it moves."""
    q = next(q for q in load_queries("ssb") if q.name == "q1.1")
    trace = query_trace(ssb_con, q.name, q.sql, compressed)
    kept = ssb_con.options.gpu_compressed_cache if compressed is None else compressed
    by_table = {s.table: s for s in trace.scans}
    assert set(by_table) == {"date", "lineorder"}
    lo = by_table["lineorder"]
    columns = [p.key.column for p in lo.row_groups[0]]
    assert set(columns) >= {"lo_orderdate", "lo_discount", "lo_quantity", "lo_extendedprice"}
    reader = ssb_con._get_engine().db.table("lineorder")
    for rg in lo.row_groups:
        for p in rg:
            loc = reader.page_location(p.key.column, p.key.row_group)
            _, sections = page_layout(reader, p.key.column, p.key.row_group)
            codec = page_codec(reader, p.key.column, p.key.row_group)
            n = reader.row_group_rows(p.key.row_group)
            assert p.link == loc.length
            assert p.held == device_page_bytes(reader, p.key.column, p.key.row_group, loc, sections, n, codec, kept)
    decoded = sum(p.held for p in query_trace(ssb_con, q.name, q.sql, False).pages())
    held = sum(p.held for p in trace.pages())
    # encoded pages kept as stored hold fewer bytes than decoded (a page on disk is at least as small)
    assert held < decoded if kept else held == decoded


def test_scaling_a_trace_to_another_scale_factor(ssb_con):
    q = next(q for q in load_queries("ssb") if q.name == "q2.1")
    trace = query_trace(ssb_con, q.name, q.sql)
    rows = table_rows(ssb_con)
    big = scale([trace], rows, ssb_factors(0.001, 20))[0]
    lo, lo20 = ([s for s in t.scans if s.table == "lineorder"][0] for t in (trace, big))
    n, per_page = rows["lineorder"]
    assert len(lo20.row_groups) == math.ceil(round(n * 20_000) / per_page)
    # bytes per row are the traced page's: the link bytes of a full page scale with its rows
    p, p20 = lo.row_groups[0][0], lo20.row_groups[0][0]
    assert p20.key.column == p.key.column
    assert p20.link == pytest.approx(p.link * per_page / n, rel=1e-3)
    assert len({p.key for p in lo20.pages()}) == len(lo20.pages())  # new row groups, new keys
    date, date20 = ([s for s in t.scans if s.table == "date"][0] for t in (trace, big))
    assert date20.row_groups == date.row_groups  # the date table does not grow


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5])
def test_ssb_at_sf20_moves_no_more_than_lru(ssb_sf20, fraction):
    """hetdb bench's hot mode (each query run twice in a row) at a share of the data's bytes."""
    trace, data = ssb_sf20
    runs = [q for q in trace for _ in range(2)]
    limit = int(data * fraction)
    benefit = replay(runs, limit, "benefit")
    lru = replay(runs, limit, "lru")
    assert benefit.total_link_bytes <= lru.total_link_bytes
    assert benefit.total_link_bytes > 0 and len(benefit.link_bytes) == 26


def test_ssb_repeated_keeps_its_hottest_column_resident(ssb_sf20):
    """The whole suite three times at 25% of the data: the lineorder column whose pages save the most
    link bytes per byte held over the workload stays resident, all of it."""
    trace, data = ssb_sf20
    runs = trace * 3
    saved: dict[str, float] = {}
    for q in trace:
        for p in q.pages():
            if p.key.table == "lineorder":
                saved[p.key.column] = saved.get(p.key.column, 0.0) + p.link / p.held
    hottest = max(saved, key=saved.get)
    result = replay(runs, int(data * 0.25), "benefit")
    held: dict[str, int] = {}
    for key in result.cache.keys():
        if key.table == "lineorder":
            held[key.column] = held.get(key.column, 0) + 1
    pages = len([s for s in trace[0].scans if s.table == "lineorder"][0].row_groups)
    assert held[hottest] == pages == max(held.values())
    assert result.total_link_bytes < replay(runs, int(data * 0.25), "lru").total_link_bytes


def test_a_new_query_that_fits_gets_in_at_its_first_run():
    """Query A three times, then query B three times; each fits in the tier, both together do not.
    A scan that fits judges a first read as if its query ran again, so B's pages displace A's in B's
    first run (as LRU does) instead of its second."""
    a = QueryRef("a", [_scan("ta", ["c"], 10)])
    b = QueryRef("b", [_scan("tb", ["c"], 10)])
    queries = [a] * 3 + [b] * 3
    limit = 2 * 12 * MIB
    benefit = replay(queries, limit, "benefit", admission="first")
    lru = replay(queries, limit, "lru", admission="first")
    assert lru.link_bytes == [10 * MIB // 2, 0, 0, 10 * MIB // 2, 0, 0]
    assert benefit.link_bytes == lru.link_bytes
    assert {k.table for k in benefit.cache.keys()} >= {"tb"}
    assert sum(k.table == "tb" for k in benefit.cache.keys()) == 10


# ---- gpu_cache_admission ------------------------------------------------------------------------------
def test_reuse_admission_passes_a_first_scan_through_and_fills_at_the_second():
    """'reuse' (the connection's default): the first scan of a table's columns that fits in the cache
    streams past it (route 'copy': nothing read from it, nothing admitted), the second fills it, the
    third is resident; 'first' admits at the first run."""
    q = QueryRef("q", [_scan("dim", ["a"], 4), _scan("fact", ["x", "y"], 6)])
    link = (4 + 12) * MIB // 2
    reuse = replay([q] * 3, 64 * MIB)
    assert reuse.link_bytes == [link, link, 0]
    assert reuse.decisions[0] == (0, 0, 0) and reuse.decisions[1][0] == 16
    assert reuse.hit_pages == [0, 16, 16]  # (a fill's kernel then reads every page resident)
    assert replay([q] * 3, 64 * MIB, admission="first").link_bytes == [link, 0, 0]
    with pytest.raises(HetdbError, match="gpu_cache_admission"):
        replay([q], 64 * MIB, admission="second")


def test_a_first_scan_of_columns_partly_cached_fills_instead_of_passing_through():
    """A query over columns another query's scan put in the cache (SSB q4.1 after q2.1: four of its
    six lineorder columns) copies only the pages missing at its first run: passing through would
    copy the cached ones again."""
    a = QueryRef("a", [_scan("fact", ["x", "y"], 6)])
    b = QueryRef("b", [_scan("fact", ["x", "y", "z"], 6)])
    result = replay([a, a, b, b], 64 * MIB)
    assert result.link_bytes == [6 * MIB, 6 * MIB, 3 * MIB, 0]
    assert result.decisions[2][0] == 6  # the fill admitted z's pages
    # columns seen before but never admitted (the scan passed through) do not count: c passes
    # through, fills at its second run, and is resident at its third
    c = QueryRef("c", [_scan("fact", ["y", "z"], 6)])
    assert replay([a, c, c, c], 64 * MIB).link_bytes == [6 * MIB, 6 * MIB, 6 * MIB, 0]


def test_a_first_scan_larger_than_the_cache_passes_through_under_reuse():
    """A scan that does not fit in the cache passes through at its first run too (nothing admitted
    for a connection that may not read it again), and streams into the cache by benefit from its
    second on: it keeps the part that fits one run later than under 'first'."""
    queries = [QueryRef("q", [_scan("t", ["c"], 40)])] * 5
    limit = 2 * 10 * MIB
    reuse, first = replay(queries, limit), replay(queries, limit, admission="first")
    assert reuse.decisions[0] == (0, 0, 0) and first.decisions[0][0] > 0
    assert reuse.link_bytes[0] == first.link_bytes[0] == 40 * MIB // 2
    assert reuse.link_bytes[1:] == first.link_bytes[:-1]
