"""Bind + optimize every SSB and TPC-H query: plans are valid after binding and after every pass
(each pass also switched off in turn), and the optimized plans have the expected shapes."""

from __future__ import annotations

import os

import pytest
from plan_query_files import query_files

from hetdb.config import Options
from hetdb.plan.explain import format_plan
from hetdb.plan.logical import Join, Node, Scan, TopN
from hetdb.plan.optimizer import PASS_NAMES, optimize
from hetdb.plan.validate import validate
from hetdb.sql import bind

SSB = query_files("ssb")
TPCH = query_files("tpch")


def nodes(n: Node) -> list[Node]:
    out = [n]
    for k in n.inputs():
        out.extend(nodes(k))
    return out


def joins(n: Node) -> list[Join]:
    return [x for x in nodes(n) if isinstance(x, Join)]


def test_query_files_present():
    assert len(SSB) == 13 and len(TPCH) == 22


@pytest.mark.parametrize("bench", ["ssb", "tpch"])
def test_every_query_binds_and_optimizes_under_every_pass_set(bench, ssb_db, tpch_db):
    db = ssb_db if bench == "ssb" else tpch_db
    files = SSB if bench == "ssb" else TPCH
    compared = 0
    for f in files:
        plan = bind(open(f).read(), db)
        validate(plan, "bind")
        for off in (None, *PASS_NAMES):
            opts = Options(disabled_passes=frozenset([off]) if off else frozenset())
            out = optimize(plan, db, opts)
            assert out.schema == plan.schema
            compared += 1
        # Deterministic: binding twice gives the same plan text and ids.
        again = optimize(bind(open(f).read(), db), db, Options())
        assert format_plan(again) == format_plan(optimize(plan, db, Options()))
        assert again.node_id == optimize(plan, db, Options()).node_id
    assert compared == len(files) * (1 + len(PASS_NAMES))


def _opt(db, path):
    return optimize(bind(open(path).read(), db), db, Options())


def test_ssb_shapes(ssb_db):
    for f in SSB:
        plan = _opt(ssb_db, f)
        scans = [n for n in nodes(plan) if isinstance(n, Scan)]
        assert all(j.kind == "inner" and j.left_keys for j in joins(plan)), os.path.basename(f)
        lo = next(s for s in scans if s.table == "lineorder")
        assert len(lo.column_names) <= 6  # projection pruning: lineorder has 17 columns
        # Every dimension filter reached its scan.
        assert all(s.filters for s in scans if s.table != "lineorder" and s.table != "date") \
            or "q1." in f
        # lineorder (the fact table) is probed, never the build side of a join.
        assert all(not (isinstance(j.right, Scan) and j.right.table == "lineorder") for j in joins(plan))


def test_tpch_subquery_shapes(tpch_db):
    q = {os.path.basename(f)[:3]: _opt(tpch_db, f) for f in TPCH}
    kinds = {k: sorted(j.kind for j in joins(p)) for k, p in q.items()}
    assert "semi" in kinds["q04"]                                      # EXISTS
    assert "semi" in kinds["q21"] and "anti" in kinds["q21"]            # EXISTS + NOT EXISTS
    assert any(j.residual is not None for j in joins(q["q21"]) if j.kind in ("semi", "anti"))
    assert "anti" in kinds["q16"] or "mark" in kinds["q16"]             # NOT IN
    assert "semi" in kinds["q18"] and "semi" in kinds["q20"]            # IN
    # correlated scalar: a left join with the grouped subquery; outer_join_simplification leaves it
    # (an aggregation on the NULL-extended side: made inner, q02 was reordered into a build over
    # partsupp), so the plan is the same with the pass on and off
    assert "left" in kinds["q02"] and "left" in kinds["q17"]
    for name in ("q02", "q17"):
        off = Options(disabled_passes=frozenset({"outer_join_simplification"}))
        plan = optimize(bind(open(next(f for f in TPCH if f.endswith(f"{name}.sql"))).read(), tpch_db),
                        tpch_db, off)
        assert [j.kind for j in joins(plan)] == [j.kind for j in joins(q[name])], name
    assert "single" in kinds["q11"] and "single" in kinds["q15"]        # uncorrelated scalar
    assert "anti" in kinds["q22"] and "single" in kinds["q22"]
    assert "left" in kinds["q13"]                                      # LEFT OUTER JOIN
    for name in ("q02", "q03", "q10", "q18", "q21"):
        assert any(isinstance(n, TopN) for n in nodes(q[name])), name   # ORDER BY + LIMIT
    assert all(j.kind != "cross" for p in q.values() for j in joins(p) if j.kind != "single")
    # an OR of conjunctions over a join implies, per side, the OR of each branch's conditions on
    # that side: q19's three branches (nested or(or(a, b), c)) filter part and lineitem before the
    # join, q07's two filter both nation scans
    for name, tables in (("q19", {"part", "lineitem"}), ("q07", {"nation"})):
        filtered = {n.table for n in nodes(q[name])
                    if isinstance(n, Scan) and any(getattr(f, "op", None) == "or" for f in n.filters)}
        assert filtered == tables, (name, filtered)


def test_pass_can_be_switched_off(tpch_db):
    f = next(p for p in TPCH if p.endswith("q03.sql"))
    plan = bind(open(f).read(), tpch_db)
    on = optimize(plan, tpch_db, Options())
    off = optimize(plan, tpch_db, Options(disabled_passes=frozenset({"limit_pushdown"})))
    assert any(isinstance(n, TopN) for n in nodes(on))
    assert not any(isinstance(n, TopN) for n in nodes(off))


def test_unknown_pass_name_is_refused(tpch_db):
    from hetdb.errors import HetdbError

    plan = bind("select 1", tpch_db)
    with pytest.raises(HetdbError, match="predicate_pushdown"):
        optimize(plan, tpch_db, Options(disabled_passes=frozenset({"nope"})))
