"""Literals of compiled CPU loops are run-time parameters (backend/cpu/codegen/expr_py): queries that
differ only in constants share one generated source and one compiled function, and still give
DuckDB's answers; what shapes the code (NULL literals, the number of IN items) stays in the source."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "differential"))

from diff_check import mismatch  # noqa: E402

import hetdb  # noqa: E402
from hetdb import types as T  # noqa: E402
from hetdb.backend.cpu.codegen.pipeline_py import Aggregate, Input, Spec, compile_spec, compile_stats  # noqa: E402
from hetdb.exec.compiled_cpu import CPU_COMPILED  # noqa: E402
from hetdb.plan.expr import Call, ColumnRef, Literal  # noqa: E402

# (template, constants per run): every run of a template must reuse the loop of its first run
FAMILIES = {
    "numbers": ("SELECT a, count(*), sum(c), min(d) FROM fact WHERE k > {} AND d < {} AND c <= {} GROUP BY a",
                [(10, "12.5e0", "300.25"), (2500, "-40.0e0", "-1.50"), (-1, "1e300", "999.99")]),
    "dates": ("SELECT extract(year FROM e) AS y, count(*), max(k) FROM fact "
              "WHERE e BETWEEN DATE '{}' AND DATE '{}' GROUP BY 1",
              [("1992-03-01", "1994-12-31"), ("1995-06-15", "1999-01-01"), ("1993-01-01", "1993-01-31")]),
    "strings": ("SELECT a, count(*) FROM fact WHERE b = '{}' OR b LIKE '{}' GROUP BY a",
                [("fig", "%an%"), ("apple", "ch%"), ("kiwi", "%e")]),
    "in_list": ("SELECT count(*), sum(c) FROM fact WHERE a IN ({}, {}, {}) AND k - {} <> 17",
                [(1, 2, 3, 0), (40, 7, 19, 6), (5, 5, 5, 3)]),
    "case_arith": ("SELECT a AS g, sum(CASE WHEN d > {} THEN c * 2.5 ELSE c - {} END), count(*) FROM fact "
                   "WHERE k BETWEEN {} AND {} GROUP BY 1",
                   [(0, 10, 100, 2000), (-20, 7, 0, 2999), (45, -3, 1500, 1600)]),
}


def test_queries_differing_in_constants_share_one_compiled_loop(db, duck) -> None:
    checked = 0
    with hetdb.connect(db.path, device="cpu", zone_maps=False) as con, \
            hetdb.connect(db.path, device="cpu", cpu_compile=False) as ops:
        for name, (template, runs) in FAMILIES.items():
            after_first = None
            for constants in runs:
                sql = template.format(*constants)
                got = con.sql(sql).arrow()
                expected = duck.sql(sql).to_arrow_table()
                assert mismatch(got, expected, ()) is None, f"{name}: {sql}\n{con.explain(sql, analyze=True)}"
                assert mismatch(got, ops.sql(sql).arrow(), ()) is None, sql
                assert CPU_COMPILED in con.explain(sql, analyze=True), sql
                checked += 1
                if after_first is None:
                    after_first = compile_stats()
                else:
                    assert compile_stats() == after_first, f"{name}: {sql} compiled another loop"
    assert checked == sum(len(runs) for _, runs in FAMILIES.values())


def _spec(constants: tuple[object, ...]) -> Spec:
    k = ColumnRef(T.INT64, "k", nullable=False)
    d = ColumnRef(T.FLOAT64, "d")
    cond = Call(T.BOOL, "and", (
        Call(T.BOOL, "gt", (k, Literal(T.INT64, constants[0]))),
        Call(T.BOOL, "in_list", (d, *(Literal(T.FLOAT64, c) for c in constants[1:])))))
    agg = Aggregate((), (("sum", k), ("count_star", None)))
    return Spec((Input("k", T.INT64, False), Input("d", T.FLOAT64, True)), (("filter", cond),), agg)


def test_generated_source_names_no_literal_and_passes_the_values() -> None:
    one = compile_spec(_spec((987654321, 0.125, float("nan"))))
    two = compile_spec(_spec((-5, float("-inf"), -0.0)))
    assert one.source == two.source and one.fn is two.fn
    assert "987654321" not in one.source and "0.125" not in one.source and "nan" not in one.source
    assert one.params[0] == 987654321 and one.params[1] == 0.125 and np.isnan(one.params[2])
    assert [a for a in one.args if a[1] == "param"] == [("k0", "param", 0), ("k1", "param", 1), ("k2", "param", 2)]
    # what shapes the code is part of it: a NULL item (IN is then never FALSE) and the item count
    with_null = compile_spec(_spec((1, 0.5, None)))
    longer = compile_spec(_spec((1, 0.5, 1.5, 2.5)))
    assert len({one.source, with_null.source, longer.source}) == 3
    assert len(with_null.params) == 2 and len(longer.params) == 4


def test_parameters_reach_the_compiled_function() -> None:
    """Run the function of two specs of one source with each one's values: each gets its own answer."""
    from hetdb.backend.cpu.codegen import runtime

    k = np.arange(10, dtype=np.int64)
    d = np.array([0.125, np.nan, 1.0, -0.0, 0.0, np.inf, 0.125, np.nan, 2.0, -np.inf])
    valid = np.ones(10, bool)
    valid[6] = False
    answers = []
    for constants in ((2, 0.125, float("nan")), (-1, 0.0, float("-inf")), (8, 0.5, 1.0)):
        kernel = compile_spec(_spec(constants))
        state = runtime.new_state(0, kernel.num_int, kernel.num_float)
        args = [{"c0": k, "c1": d, "c1_m": valid}[a[0]] if a[1] == "input" else kernel.params[a[2]]
                for a in kernel.args]
        _, err, _ = kernel.fn(0, 10, 1, *args, *state)
        assert err == 0
        ia = state[3]
        lo = constants[0]
        items = constants[1:]
        # NaN = NaN and -0.0 = 0.0 (DuckDB's order); a NULL d never matches
        rows = [i for i in range(10) if i > lo and valid[i]
                and any((np.isnan(d[i]) and np.isnan(x)) or d[i] == x for x in items)]
        sums = [ia[s.isum, 0] for s in kernel.slots if s.isum >= 0]
        answers.append((sums[0], ia[kernel.slots[1].cnt, 0]))
        assert answers[-1] == (sum(rows), len(rows)), (constants, rows, answers[-1])
    assert len(set(answers)) == 3
