"""Helpers for storage tests (a uniquely named module, so it cannot clash with other test dirs):
an edge-value table and an exact table comparison."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa

from hetdb import types as T
from hetdb.storage import ColumnSpec

D = decimal.Decimal


def edge_table(n: int = 23, seed: int = 0) -> pa.Table:
    """Every hetdb type with NULLs and edge values, ``n`` rows (the edge values come first)."""
    rng = np.random.default_rng(seed)

    def fill(edges: list, make) -> list:
        return (edges + [make(i) for i in range(max(0, n - len(edges)))])[:n]

    i32 = fill([-2**31, 2**31 - 1, None, 0, -1], lambda i: int(rng.integers(-1000, 1000)))
    i64 = fill([-2**63, 2**63 - 1, None, 0], lambda i: int(rng.integers(-10**12, 10**12)))
    f64 = fill([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, None, 5e-324, 1.7976931348623157e308],
               lambda i: float(rng.normal()))
    dec = fill([D("99999999999999.9999"), D("-99999999999999.9999"), None, D("0.0001"), D("0")],
               lambda i: D(int(rng.integers(-10**8, 10**8))) / 10000)
    dates = fill([datetime.date(1, 1, 1), datetime.date(9999, 12, 31), None, datetime.date(1970, 1, 1)],
                 lambda i: datetime.date(2000, 1, 1) + datetime.timedelta(days=int(rng.integers(0, 9000))))
    ts = fill([datetime.datetime(1900, 1, 1, 0, 0, 0, 1), None, datetime.datetime(2262, 4, 11, 23, 47, 16)],
              lambda i: datetime.datetime(2020, 1, 1) + datetime.timedelta(microseconds=int(rng.integers(0, 10**13))))
    bools = fill([True, False, None], lambda i: bool(rng.integers(0, 2)))
    strs = fill(["", None, "héllo wörld", "日本語テキスト", "emoji 🎉", "x" * 100, "a,b \"quoted\""],
                lambda i: f"s{int(rng.integers(0, 50))}")
    lowcard = fill([None], lambda i: ["red", "green", "blue"][i % 3])
    return pa.table({
        "i32": pa.array(i32, pa.int32()),
        "i64": pa.array(i64, pa.int64()),
        "f64": pa.array(f64, pa.float64()),
        "dec": pa.array(dec, pa.decimal128(18, 4)),
        "date": pa.array(dates, pa.date32()),
        "ts": pa.array(ts, pa.timestamp("us")),
        "flag": pa.array(bools, pa.bool_()),
        "str": pa.array(strs, pa.string()),
        "color": pa.array(lowcard, pa.string()),
        "null_i": pa.array([None] * n, pa.int64()),
        "null_s": pa.array([None] * n, pa.string()),
    })


def schema_of(table: pa.Table) -> list[ColumnSpec]:
    return [ColumnSpec(f.name, T.from_arrow(f.type), f.nullable) for f in table.schema]


def assert_tables_equal(got: pa.Table, expected: pa.Table) -> int:
    """Exact comparison (NaN == NaN, -0.0 distinct from 0.0). Returns the number of values compared."""
    assert got.schema.names == expected.schema.names
    assert got.num_rows == expected.num_rows
    compared = 0
    for name in expected.schema.names:
        g = got.column(name).combine_chunks()
        e = expected.column(name).combine_chunks()
        assert g.type == e.type, name
        if pa.types.is_floating(e.type):
            gv, ev = g.is_valid().to_numpy(zero_copy_only=False), e.is_valid().to_numpy(zero_copy_only=False)
            assert np.array_equal(gv, ev), name
            ga = g.fill_null(0).to_numpy()[gv]
            ea = e.fill_null(0).to_numpy()[ev]
            assert np.array_equal(ga, ea, equal_nan=True), name
            assert np.array_equal(np.signbit(ga), np.signbit(ea)), name
        else:
            assert g.equals(e), f"column {name}: {g} != {e}"
        compared += len(e)
    return compared
