"""The lowering of aggregates without a Ray cluster: avg as exact sum and count partials, DISTINCT
aggregates as a deduplication shuffled by (group key, argument) under a partial aggregation."""

from __future__ import annotations

import pyarrow as pa
import pytest

import hetdb
from hetdb.dist.lowering import lower
from hetdb.plan import logical as L


@pytest.fixture(scope="module")
def con():
    c = hetdb.connect(device="cpu")
    c.register("t", pa.table({"k": [1, 2, 2, 3] * 10, "v": list(range(40))}))
    c.sql("create table s as select * from t")
    yield c
    c.close()


def _nodes(node: L.Node) -> list[L.Node]:
    return [node] + [x for k in node.inputs() for x in _nodes(k)]


def _aggs(node: L.Node) -> list[L.Aggregate]:
    return [x for x in _nodes(node) if isinstance(x, L.Aggregate)]


def test_avg_has_sum_and_count_partials(con) -> None:
    d = lower(con._get_engine().logical_plan("select k, avg(v) a, min(v) m from s group by k"), 3)
    assert [s.exchange for s in d.stages] == ["hash", "gather", "result"]
    partial = _aggs(d.stages[0].plan)[0]
    assert sorted(c.op for _, c in partial.aggs) == ["count", "min", "sum"]
    assert d.stages[0].note == "partial aggregation"
    assert any(isinstance(x, L.Project) and "div(" in x.label() for x in _nodes(d.stages[1].plan))


def test_count_distinct_shuffles_by_key_and_argument(con) -> None:
    d = lower(con._get_engine().logical_plan("select k, count(distinct v) c, max(v) m from s group by k"), 2)
    assert [s.exchange for s in d.stages] == ["hash", "hash", "gather", "result"]
    assert len(d.stages[0].keys) == 2 and len(d.stages[1].keys) == 1  # (k, v) then k
    assert not any(c.distinct for s in d.stages for a in _aggs(s.plan) for _, c in a.aggs)


def test_mixed_distinct_shuffles_rows(con) -> None:
    d = lower(con._get_engine().logical_plan("select count(distinct v) c, count(*) n from s"), 2)
    assert d.stages[0].exchange == "gather" and "count distinct" in d.stages[0].note


@pytest.mark.parametrize("labels", [[0, 0, 1, 1], ["x", "y", "x", "y", "x"], [0, 0, 0, 1], [5, 5, 5]])
def test_two_level_routes_deliver_every_row_once(labels) -> None:
    from hetdb.dist.runtime import _route
    from hetdb.dist.topology import Topology

    topo = Topology.of(labels)
    n = len(labels)
    for w in range(n):
        route = _route("hash", w, n, topo)
        carried = sorted(d for _, dests in route for d in dests)
        assert carried == list(range(n))  # each destination's rows in exactly one message
        for p, dests in route:
            assert topo.same_host(p, w) or not topo.two_level
            # a relay forwards to each of its destinations; on its own host only to itself
            assert all(d in topo.relayed_by(p) for d in dests) or not topo.two_level
        broadcast = _route("broadcast", w, n, topo)
        assert sorted(d for _, dests in broadcast for d in dests) == list(range(n))
        # across hosts: one message per other host
        assert sum(1 for p, _ in broadcast if not topo.same_host(p, w)) == len(set(topo.hosts)) - 1
    if topo.two_level:
        for p in range(n):
            assert all(d == p or not topo.same_host(d, p) for d in topo.relayed_by(p))
        one_level_across = sum(1 for a in range(n) for b in range(n) if not topo.same_host(a, b))
        two_level_across = sum(1 for p in range(n) for d in topo.relayed_by(p) if d != p)
        assert two_level_across < one_level_across


def test_windows_and_holistic_aggregates_shuffle_by_partition(con) -> None:
    d = lower(con._get_engine().logical_plan("select k, stddev_samp(v) sd, median(v) md from s group by k"), 2)
    assert not d.fallback and d.stages[0].exchange == "hash" and d.stages[0].note == "window partition"
    d = lower(con._get_engine().logical_plan("select v, sum(v) over (order by v) s from s"), 2)
    assert not d.fallback and d.stages[0].exchange == "gather" and d.stages[1].single


def test_dense_integer_join_keys_are_cut_by_range(con) -> None:
    con.sql("create table big as select k, v from t")
    plan = con._get_engine().logical_plan("select count(*) from s join big on s.k = big.k")
    ranges = {("s", "k"): (1, 3), ("big", "k"): (2, 9)}
    counts = {"s": 40, "big": 40}
    d = lower(plan, 2, broadcast_rows=0, row_counts=counts, key_range=lambda table, col: ranges.get((table, col)))
    hashed = [st for st in d.stages if st.exchange == "hash"]
    assert len(hashed) == 2 and all(st.key_range == (1, 9) for st in hashed)
    assert "ranges of [1, 9]" in hashed[0].note
    # a sparse range (past 8x the rows), or a side without statistics: hash partitioning
    ranges[("big", "k")] = (2, 10**9)
    for fn in (lambda t, c: ranges.get((t, c)), lambda t, c: None):
        assert all(st.key_range is None for st in lower(plan, 2, 0, counts, key_range=fn).stages)


def test_top_n_gathers_once(con) -> None:
    d = lower(con._get_engine().logical_plan("select k, v from s order by v desc limit 3"), 3)
    assert [(st.exchange, st.single) for st in d.stages] == [("gather", False), ("result", True)]
    assert isinstance(d.stages[0].plan, L.TopN) and d.stages[0].plan.limit == 3
