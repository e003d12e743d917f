"""compare_tables: the answer check shared by the benchmark and the SQL differential tests."""

from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetdb.bench.compare import compare_tables


def t(**cols) -> pa.Table:
    return pa.table(cols)


def test_equal_tables_and_empty_tables():
    a = t(x=pa.array([1, 2, 3]), s=pa.array(["a", "b", None]))
    assert compare_tables(a, a, ordered=True) is None
    assert compare_tables(a, a, ordered=False) is None
    empty = a.slice(0, 0)
    assert compare_tables(empty, empty, ordered=True) is None


def test_column_and_row_counts():
    a = t(x=pa.array([1, 2]))
    b = t(x=pa.array([1, 2]), y=pa.array([3, 4]))
    assert "column count" in compare_tables(a, b, ordered=False)
    assert "row count differs: 1 vs 2" in compare_tables(a.slice(0, 1), a, ordered=False)


def test_names_may_differ_columns_compare_by_position():
    a = t(revenue=pa.array([10, 20]))
    b = t(sum_revenue=pa.array([10, 20]))
    assert compare_tables(a, b, ordered=True) is None
    msg = compare_tables(t(revenue=pa.array([10, 21])), b, ordered=True)
    assert msg is not None and "revenue / sum_revenue" in msg and "row 1" in msg


def test_integers_exact_across_widths():
    a = t(x=pa.array([1, 2**40], pa.int64()))
    b = t(x=pa.array([1, 2**40 + 1], pa.int64()))
    assert compare_tables(a, b, ordered=True) is not None
    assert compare_tables(t(x=pa.array([5], pa.int32())), t(x=pa.array([5], pa.int64())), ordered=True) is None


def test_decimals_by_value_across_precision_and_scale():
    d = decimal.Decimal
    a = t(x=pa.array([d("1.50"), d("-2.25")], pa.decimal128(18, 2)))
    b = t(x=pa.array([d("1.5000"), d("-2.2500")], pa.decimal128(38, 4)))
    assert compare_tables(a, b, ordered=True) is None
    c = t(x=pa.array([d("1.50"), d("-2.26")], pa.decimal128(38, 2)))
    msg = compare_tables(a, c, ordered=True)
    assert msg is not None and "row 1" in msg
    # An integer equals a decimal of the same value, exactly.
    assert compare_tables(t(x=pa.array([3])), t(x=pa.array([d("3.00")], pa.decimal128(10, 2))), True) is None
    assert compare_tables(t(x=pa.array([3])), t(x=pa.array([d("3.01")], pa.decimal128(10, 2))), True)


def test_decimal_vs_float_by_value():
    d = decimal.Decimal
    a = t(x=pa.array([d("0.10"), d("123456.78")], pa.decimal128(15, 2)))
    b = t(x=pa.array([0.1, 123456.78]))
    assert compare_tables(a, b, ordered=True) is None
    assert compare_tables(a, t(x=pa.array([0.1, 123456.79])), ordered=True) is not None


def test_float_tolerances():
    a = t(x=pa.array([1.0, 1e10]))
    near = t(x=pa.array([1.0 + 1e-12, 1e10 * (1 + 1e-10)]))
    far = t(x=pa.array([1.0, 1e10 * (1 + 1e-7)]))
    assert compare_tables(a, near, ordered=True) is None
    assert compare_tables(a, far, ordered=True) is not None
    assert compare_tables(a, far, ordered=True, float_rel_tol=1e-6) is None
    # Per-column tolerances.
    two = t(x=pa.array([1.0]), y=pa.array([1.0]))
    off = t(x=pa.array([1.0 + 1e-8]), y=pa.array([1.0 + 1e-8]))
    assert compare_tables(two, off, ordered=True, float_rel_tol=[1e-6, 1e-6]) is None
    msg = compare_tables(two, off, ordered=True, float_rel_tol=[1e-6, 1e-9])
    assert msg is not None and "column 1" in msg
    with pytest.raises(ValueError):
        compare_tables(two, off, ordered=True, float_rel_tol=[1e-6])
    # Exactly zero only equals (nearly) zero when an absolute tolerance is given.
    assert compare_tables(t(x=pa.array([0.0])), t(x=pa.array([1e-15])), True) is not None
    assert compare_tables(t(x=pa.array([0.0])), t(x=pa.array([1e-15])), True, float_abs_tol=1e-12) is None


def test_nan_inf_and_nulls():
    nan, inf = float("nan"), float("inf")
    a = t(x=pa.array([nan, inf, -inf, None]))
    assert compare_tables(a, a, ordered=True) is None
    assert compare_tables(a, t(x=pa.array([nan, inf, inf, None])), ordered=True) is not None
    assert "NULL" in compare_tables(t(x=pa.array([1, None])), t(x=pa.array([1, 2])), ordered=True)
    assert compare_tables(t(s=pa.array(["a", None])), t(s=pa.array(["a", ""])), ordered=True) is not None


def test_all_null_column_of_null_type_matches_typed_nulls():
    a = t(x=pa.nulls(2))
    assert compare_tables(a, t(x=pa.array([None, None], pa.int64())), ordered=True) is None
    assert compare_tables(a, t(x=pa.array([None, 1], pa.int64())), ordered=True) is not None


def test_strings_exact_and_dictionary_and_large():
    a = t(s=pa.array(["x", "y", "x"]).dictionary_encode())
    b = t(s=pa.array(["x", "y", "x"], pa.large_string()))
    assert compare_tables(a, b, ordered=True) is None
    assert compare_tables(a, t(s=pa.array(["x", "y", "x "])), ordered=True) is not None


def test_dates_and_timestamps():
    a = t(d=pa.array([dt.date(1995, 3, 15)]))
    b = t(d=pa.array([dt.datetime(1995, 3, 15)], pa.timestamp("us")))
    assert compare_tables(a, b, ordered=True) is None
    assert compare_tables(a, t(d=pa.array([dt.date(1995, 3, 16)])), ordered=True) is not None


def test_incomparable_types_are_reported():
    msg = compare_tables(t(x=pa.array(["1"])), t(x=pa.array([1])), ordered=True)
    assert msg is not None and "not comparable" in msg


def test_multiset_ignores_row_order_but_counts_duplicates():
    a = t(k=pa.array([1, 2, 2, None]), v=pa.array(["a", "b", "c", "d"]))
    shuffled = t(k=pa.array([2, None, 1, 2]), v=pa.array(["c", "d", "a", "b"]))
    assert compare_tables(a, shuffled, ordered=False) is None
    assert compare_tables(a, shuffled, ordered=True) is not None
    dup = t(k=pa.array([1, 2, 2, None]), v=pa.array(["a", "b", "b", "d"]))
    msg = compare_tables(a, dup, ordered=False)
    assert msg is not None and "after sorting" in msg


def test_multiset_float_noise_does_not_reorder_exact_keys():
    # The float column sorts differently on the two sides; exact columns are sorted on first.
    a = t(v=pa.array([1.0 + 1e-12, 1.0]), k=pa.array(["b", "a"]))
    b = t(v=pa.array([1.0, 1.0 + 1e-12]), k=pa.array(["b", "a"]))
    assert compare_tables(a, b, ordered=False) is None


def test_ordered_with_order_by_keys_allows_ties_in_any_order():
    # ORDER BY k desc: the rows tied on k may come in any order.
    expected = t(k=pa.array([3, 2, 2, 1]), v=pa.array(["c", "x", "y", "a"]))
    tied_other_way = t(k=pa.array([3, 2, 2, 1]), v=pa.array(["c", "y", "x", "a"]))
    assert compare_tables(tied_other_way, expected, ordered=True, order_by=[(0, True)]) is None
    assert compare_tables(tied_other_way, expected, ordered=True) is not None  # row by row
    unsorted = t(k=pa.array([2, 3, 2, 1]), v=pa.array(["x", "c", "y", "a"]))
    msg = compare_tables(unsorted, expected, ordered=True, order_by=[(0, True)])
    assert msg is not None and "out of order" in msg
    wrong_values = t(k=pa.array([3, 2, 2, 1]), v=pa.array(["c", "y", "z", "a"]))
    assert compare_tables(wrong_values, expected, ordered=True, order_by=[(0, True)]) is not None


def test_against_duckdb_answers_in_different_types():
    """The same aggregate computed by DuckDB over DECIMAL and over DOUBLE inputs compares equal."""
    con = duckdb.connect()
    con.execute("create table x as select (i % 7)::int as g, (i * 0.01)::decimal(15,2) as p "
                "from range(1000) r(i)")
    exact = con.sql("select g, sum(p) as s, count(*) from x group by g").to_arrow_table()
    floats = con.sql("select g, sum(p::double), count(*)::int from x group by g order by g desc").to_arrow_table()
    assert exact.num_rows == 7
    assert compare_tables(exact, floats, ordered=False, float_rel_tol=1e-6) is None
    off = con.sql("select g, sum(p::double) + (g = 3)::int, count(*) from x group by g").to_arrow_table()
    msg = compare_tables(off, exact, ordered=False, float_rel_tol=1e-6)
    assert msg is not None and "column 1" in msg


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(-5, 5)), st.sampled_from(["a", "b", None]),
                          st.one_of(st.floats(-1e6, 1e6), st.just(float("nan")))), max_size=30), st.randoms())
def test_multiset_equal_to_any_permutation(rows, rnd):
    table = pa.table({"i": pa.array([r[0] for r in rows], pa.int64()),
                      "s": pa.array([r[1] for r in rows], pa.string()),
                      "f": pa.array([r[2] for r in rows], pa.float64())})
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    shuffled = table.take(pa.array(perm, pa.int64()))
    assert compare_tables(shuffled, table, ordered=False) is None
    if rows:
        changed = table.set_column(0, "i", pa.array([(r[0] or 0) + 100 if k == 0 else r[0]
                                                     for k, r in enumerate(rows)], pa.int64()))
        assert compare_tables(changed, table, ordered=False) is not None
