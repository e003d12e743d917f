"""bushy_joins: on the CPU a filtered dimension joins the relation it hangs off before the chain
reaches it (TPC-H q07: customer with its nation); star joins and GPU plans keep join_order's chain."""

from __future__ import annotations

import pytest
from plan_query_files import query_files

from hetdb.config import Options
from hetdb.plan.explain import format_plan
from hetdb.plan.logical import Join, Node, Scan
from hetdb.plan.optimizer import optimize
from hetdb.sql import bind


def _nodes(n: Node) -> list[Node]:
    out = [n]
    for k in n.inputs():
        out.extend(_nodes(k))
    return out


def _tables(n: Node) -> set[str]:
    return {x.table for x in _nodes(n) if isinstance(x, Scan)}


def _plan(db, suite: str, name: str, **options) -> Node:
    path = next(p for p in query_files(suite) if p.endswith(f"{name}.sql"))
    return optimize(bind(open(path).read(), db), db, Options(**options))


@pytest.fixture(autouse=True)
def bushy_on(monkeypatch):
    from hetdb.plan.passes import bushy_joins

    monkeypatch.setattr(bushy_joins, "ENABLED", True)  # (off by default: see the module)


def test_q07_customer_joins_its_nation_before_orders(tpch_db):
    plan = _plan(tpch_db, "tpch", "q07", device="cpu")
    subtrees = [_tables(j) for j in _nodes(plan) if isinstance(j, Join)]
    assert {"customer", "nation"} in subtrees, subtrees
    # both sides of some join are joins themselves: the tree is bushy
    assert any(any(isinstance(x, Join) for x in _nodes(j.left)) and any(isinstance(x, Join) for x in _nodes(j.right))
               for j in _nodes(plan) if isinstance(j, Join))
    chain = _plan(tpch_db, "tpch", "q07", device="cpu", disabled_passes=frozenset({"bushy_joins"}))
    assert {"customer", "nation"} not in [_tables(j) for j in _nodes(chain) if isinstance(j, Join)]


def test_gpu_plans_and_stars_keep_the_chain(tpch_db, ssb_db):
    off = frozenset({"bushy_joins"})
    gpu = _plan(tpch_db, "tpch", "q07", device="gpu")
    assert format_plan(gpu) == format_plan(_plan(tpch_db, "tpch", "q07", device="gpu", disabled_passes=off))
    compared = 0
    for path in query_files("ssb"):
        name = path.rsplit("/", 1)[-1][:-4]
        on = _plan(ssb_db, "ssb", name, device="cpu")
        assert format_plan(on) == format_plan(_plan(ssb_db, "ssb", name, device="cpu", disabled_passes=off)), name
        compared += 1
    assert compared == 13


def test_q09_part_joins_partsupp_through_the_equal_keys(tpch_db):
    """No condition of q09 names p_partkey = ps_partkey (both equal l_partkey): the class of equal
    columns lets the greedy order join part and partsupp before lineitem, and no join repeats a
    key that its inputs' joins imply."""
    from hetdb.plan.cardinality import Estimator
    from hetdb.plan.optimizer import PASSES, PassContext
    from hetdb.plan.passes import bushy_joins, join_order

    path = next(p for p in query_files("tpch") if p.endswith("q09.sql"))
    chain = bind(open(path).read(), tpch_db)
    ctx = PassContext(tpch_db, Options(device="cpu"))
    for name, fn in PASSES:  # the plan bushy_joins sees: join_order's chain
        chain = fn(chain, ctx)
        if name == "join_order":
            break
    region = next(j for j in _nodes(chain) if isinstance(j, Join))
    leaves, preds = [], []
    join_order._flatten(region, leaves, preds)
    assert not any({"p_partkey", "ps_partkey"} <= {c.split("#")[0] for c in p.columns()} for p in preds)
    tree = bushy_joins._greedy_operator_order(leaves, preds, Estimator(tpch_db))
    joins = [j for j in _nodes(tree) if isinstance(j, Join)]
    assert any({"part", "partsupp"} <= _tables(j) and "lineitem" not in _tables(j) for j in joins), format_plan(tree)
    for j in joins:
        pairs = [(str(a), str(b)) for a, b in zip(j.left_keys, j.right_keys)]
        assert len(pairs) == len(set(pairs)) and len(pairs) <= 2, pairs
