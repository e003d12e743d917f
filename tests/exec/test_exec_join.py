"""Every join kind with NULL keys and duplicate keys, residuals, several keys, vs DuckDB; the same
plans with a tiny host_memory_limit (partitioned, spilled) give identical results."""

from __future__ import annotations

import pytest
from exec_plan_helpers import check, col, output, run, scan

from hetdb import types as T
from hetdb.errors import HetdbError
from hetdb.plan import logical as L
from hetdb.plan.expr import AggCall, Call, Field, Literal

BOOL = T.BOOL
SPILL = {"host_memory_limit": 300}


def _sides(db):
    f = scan(db, "fact", ["k", "a", "b"], alias="f")
    d = scan(db, "dim", ["a", "s", "b"], alias="d")
    return f, d


def _join(db, kind, residual=False, multi=False, mark=False):
    f, d = _sides(db)
    lk, rk = (col(f, "a#f"),), (col(d, "a#d"),)
    if multi:
        lk, rk = lk + (col(f, "b#f"),), rk + (col(d, "b#d"),)
    res = Call(BOOL, "ne", (col(f, "b#f"), col(d, "b#d"))) if residual else None
    m = Field("m#1", "m", BOOL) if mark else None
    return L.Join(f, d, kind, lk, rk, res, m)


CASES = [
    ("inner", {}, "select f.k, f.a, f.b, d.a, d.s, d.b from fact f join dim d on f.a = d.a"),
    ("left", {}, "select f.k, f.a, f.b, d.a, d.s, d.b from fact f left join dim d on f.a = d.a"),
    ("right", {}, "select f.k, f.a, f.b, d.a, d.s, d.b from fact f right join dim d on f.a = d.a"),
    ("full", {}, "select f.k, f.a, f.b, d.a, d.s, d.b from fact f full join dim d on f.a = d.a"),
    ("semi", {}, "select k, a, b from fact f where exists (select 1 from dim d where d.a = f.a)"),
    ("anti", {}, "select k, a, b from fact f where not exists (select 1 from dim d where d.a = f.a)"),
    ("mark", {"mark": True}, "select k, a, b, a in (select a from dim) from fact"),
    ("inner", {"residual": True},
     "select f.k, f.a, f.b, d.a, d.s, d.b from fact f join dim d on f.a = d.a and f.b <> d.b"),
    ("left", {"residual": True},
     "select f.k, f.a, f.b, d.a, d.s, d.b from fact f left join dim d on f.a = d.a and f.b <> d.b"),
    ("full", {"residual": True},
     "select f.k, f.a, f.b, d.a, d.s, d.b from fact f full join dim d on f.a = d.a and f.b <> d.b"),
    ("semi", {"residual": True},
     "select k, a, b from fact f where exists (select 1 from dim d where d.a = f.a and f.b <> d.b)"),
    ("anti", {"residual": True},
     "select k, a, b from fact f where not exists (select 1 from dim d where d.a = f.a and f.b <> d.b)"),
    ("inner", {"multi": True},
     "select f.k, f.a, f.b, d.a, d.s, d.b from fact f join dim d on f.a = d.a and f.b = d.b"),
    ("anti", {"multi": True},
     "select k, a, b from fact f where not exists (select 1 from dim d where d.a = f.a and d.b = f.b)"),
]


@pytest.mark.parametrize("spill", [False, True])
@pytest.mark.parametrize("kind,flags,sql", CASES, ids=[f"{c[0]}-{'-'.join(c[1]) or 'plain'}" for c in CASES])
def test_join_kinds(db, duck, backend, kind, flags, sql, spill):
    opts = dict(SPILL) if spill else {}
    out = run(output(_join(db, kind, **flags)), db, backend, batch_rows=500, threads=2, **opts)
    check(out, duck, sql, min_rows=10)


def test_mark_with_null_in_build_is_three_valued(db, duck, backend):
    f, d = _sides(db)
    # dim.a has NULLs: "a IN (...)" is NULL (not FALSE) for fact rows without a match
    j = L.Join(f, d, "mark", (col(f, "a#f"),), (col(d, "a#d"),), None, Field("m#1", "m", BOOL))
    out = run(output(j), db, backend)
    assert out.column("m").null_count > 0
    check(out, duck, "select k, a, b, a in (select a from dim) from fact", min_rows=100)


def test_cross_and_single(db, duck, backend):
    f, d = _sides(db)
    cross = L.Join(d, d.__class__(d.table, tuple(Field(x.cid + "x", x.name, x.dtype) for x in d.fields),
                                  d.column_names), "cross")
    out = run(output(cross), db, backend, threads=2)
    check(out, duck, "select * from dim d1, dim d2", min_rows=3600)
    # single join against a unique build side (a scalar subquery)
    agg = L.Aggregate(d, ((Field("ga#1", "ga", T.INT32), col(d, "a#d")),),
                      ((Field("cnt#1", "cnt", T.INT64), AggCall(T.INT64, "count_star")),))
    single = L.Join(f, agg, "single", (col(f, "a#f"),), (col(agg, "ga#1"),))
    out = run(output(single), db, backend, threads=2)
    check(out, duck, "select f.k, f.a, f.b, g.a, g.cnt from fact f left join "
                     "(select a, count(*) cnt from dim where a is not null group by a) g on f.a = g.a",
          min_rows=3000)
    with pytest.raises(HetdbError, match="more than one row"):
        run(output(L.Join(f, d, "single", (col(f, "a#f"),), (col(d, "a#d"),))), db, backend)


def test_non_equi_join_without_keys(db, duck, backend):
    f, d = _sides(db)
    res = Call(BOOL, "lt", (col(f, "a#f"), Call(T.INT32, "sub", (col(d, "a#d"), Literal(T.INT32, 40)))))
    j = L.Join(f, d, "left", (), (), res)
    out = run(output(j), db, backend, threads=2)
    check(out, duck, "select f.k, f.a, f.b, d.a, d.s, d.b from fact f left join dim d on f.a < d.a - 40",
          min_rows=3000)


def test_tiny_memory_limit_really_spills(db, backend):
    from hetdb.config import Options
    from hetdb.exec.engine import QueryEngine

    engine = QueryEngine(db, backend, Options(threads=2, batch_rows=500, **SPILL))
    try:
        table, stats, _ = engine.run_plan(output(_join(db, "full")))
    finally:
        engine.close()
    assert stats["spilled_partitions"] > 0
    assert table.num_rows > 0
    assert engine.memory.used == 0
