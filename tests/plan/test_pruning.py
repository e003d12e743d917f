"""Zone-map pruning is sound: "skip" only when no row of the page passes, "all" only when every row
passes — checked against brute-force three-valued evaluation on random pages (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from hetdb import types as T
from hetdb.plan.expr import Call, ColumnRef, Expr, Literal
from hetdb.plan.pruning import prune
from hetdb.storage.format import ZoneMap

COLS = {"a#1": T.INT64, "f#2": T.FLOAT64}


def zone_map(values: list) -> ZoneMap:
    regular = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    nans = sum(1 for v in values if isinstance(v, float) and math.isnan(v))
    return ZoneMap(min(regular) if regular else None, max(regular) if regular else None,
                   sum(v is None for v in values), nans, len(values))


def _key(v):
    """DuckDB's order: NaN equals NaN and is above every number."""
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _cmp(op: str, x, c):
    if x is None or c is None:
        return None
    x, c = _key(x), _key(c)
    return {"eq": x == c, "ne": x != c, "lt": x < c, "le": x <= c, "gt": x > c, "ge": x >= c}[op]


def evaluate(e: Expr, row: dict):
    if isinstance(e, Literal):
        return e.value
    if isinstance(e, ColumnRef):
        return row[e.cid]
    a = [evaluate(x, row) for x in e.args]
    if e.op == "and":
        return False if False in a else (None if None in a else True)
    if e.op == "or":
        return True if True in a else (None if None in a else False)
    if e.op == "not":
        return None if a[0] is None else not a[0]
    if e.op == "is_null":
        return a[0] is None
    if e.op == "is_not_null":
        return a[0] is not None
    if e.op == "in_list":
        res = [_cmp("eq", a[0], v) for v in a[1:]]
        return True if True in res else (None if None in res or a[0] is None else False)
    return _cmp(e.op, a[0], a[1])


small_int = st.integers(-5, 5)
ints = st.one_of(st.none(), small_int)
floats = st.one_of(st.none(), st.sampled_from([-1.5, 0.0, 2.0, 3.5, math.nan]))


def predicates(depth: int = 2):
    col = st.sampled_from(["a#1", "f#2"])

    def cmp(c, op, lit, flip):
        t = COLS[c]
        ref = ColumnRef(t, c)
        v = Literal(t, lit if lit is None or t == T.INT64 else float(lit))
        return Call(T.BOOL, op, (v, ref) if flip else (ref, v))

    leaf = st.one_of(
        st.builds(cmp, col, st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]),
                  st.one_of(st.none(), small_int), st.booleans()),
        st.builds(lambda c, op: Call(T.BOOL, op, (ColumnRef(COLS[c], c),)), col,
                  st.sampled_from(["is_null", "is_not_null"])),
        st.builds(lambda vs, n: Call(T.BOOL, "in_list", (ColumnRef(T.INT64, "a#1"),
                                                          *[Literal(T.INT64, v) for v in vs])
                                     + ((Literal(T.INT64, None),) if n else ())),
                  st.lists(small_int, min_size=1, max_size=3), st.booleans()),
        st.sampled_from([Literal(T.BOOL, True), Literal(T.BOOL, False), Literal(T.BOOL, None)]),
    )
    if depth == 0:
        return leaf
    sub = predicates(depth - 1)
    return st.one_of(leaf,
                     st.builds(lambda a, b: Call(T.BOOL, "and", (a, b)), sub, sub),
                     st.builds(lambda a, b: Call(T.BOOL, "or", (a, b)), sub, sub),
                     st.builds(lambda a: Call(T.BOOL, "not", (a,)), sub))


checked = {"skip": 0, "all": 0, "unknown": 0}


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(ints, floats), min_size=1, max_size=8), st.lists(predicates(), max_size=3))
def test_prune_is_sound(rows, filters):
    zms = {"a#1": zone_map([r[0] for r in rows]), "f#2": zone_map([r[1] for r in rows])}
    verdict = prune(tuple(filters), zms)
    truths = [all(evaluate(f, {"a#1": a, "f#2": b}) is True for f in filters) for a, b in rows]
    if verdict == "skip":
        assert not any(truths)
    elif verdict == "all":
        assert all(truths)
    checked[verdict] += 1


def test_prune_decides_often():
    test_prune_is_sound()
    assert checked["skip"] > 0 and checked["all"] > 0 and checked["unknown"] > 0


def test_prune_examples():
    zm = {"a#1": ZoneMap(10, 20, 0, 0, 100)}
    a = ColumnRef(T.INT64, "a#1", False)

    def c(op, v):
        return Call(T.BOOL, op, (a, Literal(T.INT64, v)))

    assert prune((c("gt", 20),), zm) == "skip"
    assert prune((c("ge", 10),), zm) == "all"
    assert prune((c("lt", 15),), zm) == "unknown"
    assert prune((Call(T.BOOL, "in_list", (a, Literal(T.INT64, 1), Literal(T.INT64, 2))),), zm) == "skip"
    assert prune((c("ge", 10),), {"a#1": ZoneMap(10, 20, 3, 0, 100)}) == "unknown"  # NULLs fail it
    assert prune((c("gt", 5),), {}) == "unknown"
