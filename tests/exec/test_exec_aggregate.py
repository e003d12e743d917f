"""Hash aggregation with NULL groups, every aggregate, DISTINCT, empty input; spilling and batch
sizes give identical results."""

from __future__ import annotations

import pytest
from exec_plan_helpers import check, col, output, run, scan

from hetdb import types as T
from hetdb.config import Options
from hetdb.exec.engine import QueryEngine
from hetdb.plan import logical as L
from hetdb.plan.expr import AggCall, Call, Field, Literal, SortKey

DEC = T.decimal(18, 2)


def _agg_plan(db, keys=("a", "b")):
    s = scan(db, "fact", ["k", "a", "b", "c", "d", "e"])
    key_fields = tuple((Field(f"g{k}", f"g{k}", s.schema[["k", "a", "b", "c", "d", "e"].index(k)].dtype),
                        col(s, k)) for k in keys)
    aggs = (
        (Field("sum_c", "sum_c", DEC), AggCall(DEC, "sum", col(s, "c"))),
        (Field("cnt", "cnt", T.INT64), AggCall(T.INT64, "count_star")),
        (Field("cnt_d", "cnt_d", T.INT64), AggCall(T.INT64, "count", col(s, "d"))),
        (Field("avg_d", "avg_d", T.FLOAT64), AggCall(T.FLOAT64, "avg", col(s, "d"))),
        (Field("avg_c", "avg_c", T.FLOAT64), AggCall(T.FLOAT64, "avg", col(s, "c"))),
        (Field("min_b", "min_b", T.STRING), AggCall(T.STRING, "min", col(s, "b"))),
        (Field("max_b", "max_b", T.STRING), AggCall(T.STRING, "max", col(s, "b"))),
        (Field("max_c", "max_c", DEC), AggCall(DEC, "max", col(s, "c"))),
        (Field("min_e", "min_e", T.DATE), AggCall(T.DATE, "min", col(s, "e"))),
        (Field("sum_k", "sum_k", T.INT64), AggCall(T.INT64, "sum", col(s, "k"))),
    )
    return L.Aggregate(s, key_fields, aggs)


SQL = ("select {keys}sum(c), count(*), count(d), avg(d), avg(c), min(b), max(b), max(c), min(e), sum(k) "
       "from fact {group}")


@pytest.mark.parametrize("opts", [{}, {"batch_rows": 7}, {"batch_rows": 1000, "host_memory_limit": 3000},
                                  {"threads": 1}], ids=["default", "batch7", "spill", "1thread"])
def test_group_by_with_null_groups(db, duck, backend, opts):
    if opts.get("batch_rows") == 7 and backend.__class__.__name__ == "ReferenceBackend":
        pytest.skip("slow with the pure-Python reference")
    out = run(output(_agg_plan(db)), db, backend, **{"threads": 2, **opts})
    check(out, duck, SQL.format(keys="a, b, ", group="group by a, b"), min_rows=100)


def test_no_keys_and_empty_input(db, duck, backend):
    out = run(output(_agg_plan(db, keys=())), db, backend, threads=2)
    check(out, duck, SQL.format(keys="", group=""), min_rows=1)
    s = scan(db, "fact", ["k", "a", "b", "c", "d", "e"])
    empty = L.Filter(s, Call(T.BOOL, "lt", (col(s, "k"), Literal(T.INT64, -1))))
    plan = _agg_plan(db, keys=())
    plan = L.Aggregate(empty, (), tuple((f, AggCall(a.dtype, a.op, None if a.arg is None else col(s, a.arg.cid),
                                                     a.distinct)) for f, a in plan.aggs))
    out = run(output(plan), db, backend)
    check(out, duck, SQL.format(keys="", group="where k < -1"), min_rows=1)
    grouped = L.Aggregate(empty, ((Field("ga", "ga", T.INT32), col(s, "a")),), plan.aggs)
    out = run(output(grouped), db, backend)
    assert out.num_rows == 0 and out.num_columns == 11


@pytest.mark.parametrize("spill", [False, True])
def test_count_distinct(db, duck, backend, spill):
    s = scan(db, "fact", ["a", "b", "c"])
    agg = L.Aggregate(s, ((Field("ga", "ga", T.INT32), col(s, "a")),),
                      ((Field("nb", "nb", T.INT64), AggCall(T.INT64, "count", col(s, "b"), True)),
                       (Field("sc", "sc", DEC), AggCall(DEC, "sum", col(s, "c"), True)),
                       (Field("n", "n", T.INT64), AggCall(T.INT64, "count_star"))))
    opts = {"host_memory_limit": 3000, "batch_rows": 500} if spill else {}
    out = run(output(agg), db, backend, threads=2, **opts)
    check(out, duck, "select a, count(distinct b), sum(distinct c), count(*) from fact group by a", min_rows=40)


def test_aggregate_then_sort_and_topn(db, duck, backend):
    plan = _agg_plan(db, keys=("b",))
    sort = L.Sort(plan, (SortKey(col(plan, "sum_c"), descending=True),))
    out = run(output(sort), db, backend, threads=2, batch_rows=3)
    check(out, duck, SQL.format(keys="b, ", group="group by b order by sum(c) desc"), ordered=True, min_rows=5)
    s = scan(db, "fact", ["k", "a", "d"])
    top = L.TopN(s, (SortKey(col(s, "a"), nulls_first=True), SortKey(col(s, "d"), descending=True)), 25, 3)
    out = run(output(top), db, backend, threads=2, batch_rows=100)
    check(out, duck, "select k, a, d from fact order by a nulls first, d desc limit 25 offset 3",
          ordered=True, min_rows=25)


def test_explain_analyze_shows_operator_stats(db, backend):
    engine = QueryEngine(db, backend, Options(threads=2))
    try:
        plan = _agg_plan(db)
        table, stats, physical = engine.run_plan(output(plan))
        text = physical.format(stats["operators"])
    finally:
        engine.close()
    assert "HashAggregate" in text and "TableScan fact" in text
    assert "rows in=3,000" in text and "pages read=" in text
    assert stats["rows"] == table.num_rows > 0


def test_tiny_memory_limit_spills_aggregation(db, backend):
    engine = QueryEngine(db, backend, Options(threads=2, batch_rows=1000, host_memory_limit=3000))
    try:
        table, stats, _ = engine.run_plan(output(_agg_plan(db)))
    finally:
        engine.close()
    assert stats["spilled_partitions"] > 0 and table.num_rows > 100
    assert engine.memory.used == 0
