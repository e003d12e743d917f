"""Semi/anti joins hashed on their left input (``Join.build_left``: the right input streams through
and marks left rows) give DuckDB's answers, with NULL and duplicate keys, residuals, several keys,
and when the build spills to partitions."""

from __future__ import annotations

import pytest
from exec_plan_helpers import check, col, output, run, scan

from hetdb import types as T
from hetdb.plan import logical as L
from hetdb.plan.expr import Call

CASES = [
    ("semi", False, False, "select k, a, b from fact f where exists (select 1 from dim d where d.a = f.a)"),
    ("anti", False, False, "select k, a, b from fact f where not exists (select 1 from dim d where d.a = f.a)"),
    ("semi", True, False,
     "select k, a, b from fact f where exists (select 1 from dim d where d.a = f.a and f.b <> d.b)"),
    ("anti", True, False,
     "select k, a, b from fact f where not exists (select 1 from dim d where d.a = f.a and f.b <> d.b)"),
    ("semi", False, True,
     "select k, a, b from fact f where exists (select 1 from dim d where d.a = f.a and d.b = f.b)"),
    ("anti", False, True,
     "select k, a, b from fact f where not exists (select 1 from dim d where d.a = f.a and d.b = f.b)"),
]


@pytest.mark.parametrize("spill", [False, True])
@pytest.mark.parametrize("kind,residual,multi,sql", CASES,
                         ids=[f"{c[0]}{'-residual' if c[1] else ''}{'-multi' if c[2] else ''}" for c in CASES])
def test_build_left_matches_duckdb(db, duck, backend, kind, residual, multi, sql, spill):
    # forced whatever the sizes: the fact rows are hashed and the dim rows stream through them
    f = scan(db, "fact", ["k", "a", "b"], alias="f")
    d = scan(db, "dim", ["a", "s", "b"], alias="d")
    lk, rk = (col(f, "a#f"),), (col(d, "a#d"),)
    if multi:
        lk, rk = lk + (col(f, "b#f"),), rk + (col(d, "b#d"),)
    res = Call(T.BOOL, "ne", (col(f, "b#f"), col(d, "b#d"))) if residual else None
    join = L.Join(f, d, kind, lk, rk, res, build_left=True)
    opts = {"host_memory_limit": 300} if spill else {}
    out = run(output(join), db, backend, batch_rows=500, threads=2, **opts)
    check(out, duck, sql, min_rows=10)
