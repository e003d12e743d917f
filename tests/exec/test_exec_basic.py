"""Scan, filter, project, limit on hand-built plans vs DuckDB; batch sizes and zone maps."""

from __future__ import annotations

import pytest
from exec_plan_helpers import check, col, output, run, scan

from hetdb import types as T
from hetdb.plan import logical as L
from hetdb.plan.expr import Call, Field, Literal, SortKey

BOOL = T.BOOL


@pytest.mark.parametrize("batch_rows", [None, 1, 7, 1000])
@pytest.mark.parametrize("zone_maps", [True, False])
def test_scan_filter_project(db, duck, backend, batch_rows, zone_maps):
    if batch_rows == 1 and backend.__class__.__name__ == "ReferenceBackend":
        pytest.skip("slow with the pure-Python reference")
    s = scan(db, "fact", ["k", "a", "c", "d"],
             filters=(Call(BOOL, "gt", (col_of(db, "fact", "a"), Literal(T.INT32, 20))),))
    dec = T.decimal(18, 2)
    p = L.Project(s, ((Field("k2", "k", T.INT64), col(s, "k")),
                      (Field("x", "x", dec), Call(dec, "add", (col(s, "c"), Literal(dec, 150)))),
                      (Field("y", "y", T.FLOAT64), Call(T.FLOAT64, "div", (col(s, "d"), Literal(T.FLOAT64, 3.0)))),
                      (Field("z", "z", T.INT32), Call(T.INT32, "mul", (col(s, "a"), Literal(T.INT32, 3))))))
    out = run(output(p), db, backend, batch_rows=batch_rows, zone_maps=zone_maps, threads=2)
    check(out, duck, "select k, c + 1.50, d / 3.0, a * 3 from fact where a > 20", min_rows=100)


def col_of(db, table, name):
    return col(scan(db, table, [name]), name)


def test_limit_offset_and_values(db, duck, backend):
    s = scan(db, "fact", ["k"])
    srt = L.Sort(s, (SortKey(col(s, "k")),))
    lim = L.Limit(srt, 5, 10)
    out = run(output(lim), db, backend, batch_rows=7, threads=2)
    check(out, duck, "select k from fact order by k limit 5 offset 10", ordered=True, min_rows=5)
    v = L.Values((Field("v#1", "v", T.INT32), Field("w#1", "w", T.STRING)), ((1, "x"), (None, None), (3, "z")))
    out = run(output(v), db, backend)
    assert out.to_pylist() == [{"v": 1, "w": "x"}, {"v": None, "w": None}, {"v": 3, "w": "z"}]


def test_zone_map_pruning_skips_pages(db, backend):
    from hetdb.config import Options
    from hetdb.exec.engine import QueryEngine

    s = scan(db, "fact", ["k", "a"], filters=(Call(BOOL, "lt", (col_of(db, "fact", "k"), Literal(T.INT64, 300))),))
    engine = QueryEngine(db, backend, Options(threads=1))
    table, stats, _ = engine.run_plan(output(s))
    engine.close()
    assert table.num_rows == 300
    try:
        import hetdb.plan.pruning  # noqa: F401
    except ImportError:
        pytest.skip("hetdb.plan.pruning is not there yet")
    assert stats["pages_skipped"] > 0
