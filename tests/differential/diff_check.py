"""Checking one hetdb answer against DuckDB's, and reporting a mismatch precisely.

A query's ordering contract decides how rows are compared:
  - ``TOTAL``: the ORDER BY determines every row's position -> compare row by row;
  - a tuple of ``OrderKey``: ORDER BY exists but leaves ties -> compare as multisets and check that
    hetdb's rows are sorted by those keys;
  - ``None``: no ORDER BY -> compare as multisets.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from hetdb.bench.compare import compare_tables
from hetdb.errors import HetdbError

TOTAL = "total"


@dataclass(frozen=True)
class OrderKey:
    column: int
    descending: bool = False
    nulls_first: bool = False


Ordering = str | tuple[OrderKey, ...] | None


def pylist(col: pa.ChunkedArray | pa.Array) -> list:
    """``col.to_pylist()``, dates and timestamps as their integers: DuckDB's range (DATE '9999-12-31' + 30)
    is wider than Python's datetime (OverflowError)."""
    t = col.type
    if pa.types.is_date32(t):
        col = col.cast(pa.int32())
    elif pa.types.is_date64(t) or pa.types.is_timestamp(t):
        col = col.cast(pa.int64())
    return col.to_pylist()


def order_violation(table: pa.Table, keys: Sequence[OrderKey]) -> str | None:
    """None when ``table``'s rows are sorted by ``keys``, else the first pair of rows out of order."""
    cols = [pylist(table.column(k.column)) for k in keys]
    for row in range(1, table.num_rows):
        for k, col in zip(keys, cols):
            a, b = col[row - 1], col[row]
            if a == b or (a is None and b is None):
                continue
            if a is None or b is None:
                ok = (a is None) == k.nulls_first
            else:
                ok = (a > b) if k.descending else (a < b)
            if not ok:
                return (f"rows {row - 1} and {row} are out of order on column {k.column} "
                        f"({'DESC' if k.descending else 'ASC'} NULLS {'FIRST' if k.nulls_first else 'LAST'}): "
                        f"{a!r} then {b!r}")
            break
    return None


def _preview(table: pa.Table, rows: int = 8) -> str:
    head = table.slice(0, rows)
    try:
        lines = [f"  {list(r.values())}" for r in head.to_pylist()]
    except (OverflowError, ValueError):  # a date past Python's range: Arrow's text of every value
        lines = [f"  {list(r)}" for r in zip(*[c.cast(pa.string()).to_pylist() for c in head.columns])]
    more = f"\n  ... {table.num_rows - rows} more rows" if table.num_rows > rows else ""
    return "\n".join(lines) + more if lines else "  (no rows)"


def mismatch(actual: pa.Table, expected: pa.Table, ordering: Ordering,
             float_rel_tol: float | Sequence[float] = 1e-9) -> str | None:
    """None when hetdb's ``actual`` answer agrees with DuckDB's ``expected`` under ``ordering``."""
    diff = compare_tables(actual, expected, ordered=ordering == TOTAL, float_rel_tol=float_rel_tol)
    if diff is None and isinstance(ordering, tuple) and ordering:
        diff = order_violation(actual, ordering)
    return diff


def describe(label: str, sql: str, diff: str, actual: pa.Table | None = None,
             expected: pa.Table | None = None) -> str:
    """A failure report: which query, the SQL text, what differs, and the first rows of each side."""
    parts = [f"--- {label}: {diff}", "SQL:", sql.strip()]
    if actual is not None:
        parts += [f"hetdb ({actual.num_rows} rows, {actual.schema.types}):", _preview(actual)]
    if expected is not None:
        parts += [f"DuckDB ({expected.num_rows} rows, {expected.schema.types}):", _preview(expected)]
    return "\n".join(parts)


@dataclass
class Outcome:
    """The result of one differential comparison."""

    compared: bool          # both engines answered and the answers were compared
    failure: str | None     # None = agreement
    rows: int = 0           # rows in DuckDB's answer


def run_differential(label: str, sql: str, run_hetdb: Callable[[str], pa.Table],
                     expected: pa.Table, ordering: Ordering,
                     float_rel_tol: float | Sequence[float] = 1e-9) -> Outcome:
    """Run ``sql`` on hetdb and compare with DuckDB's ``expected``; every hetdb error is a failure."""
    try:
        actual = run_hetdb(sql)
    except HetdbError as e:
        return Outcome(False, describe(label, sql, f"hetdb raised {type(e).__name__}: {e}"), expected.num_rows)
    except Exception as e:  # a crash: keep the traceback, it is what the engine engineers need
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
        return Outcome(False, describe(label, sql, f"hetdb crashed with {type(e).__name__}: {e}\n{tb}"),
                       expected.num_rows)
    diff = mismatch(actual, expected, ordering, float_rel_tol)
    if diff is not None:
        return Outcome(True, describe(label, sql, diff, actual, expected), expected.num_rows)
    return Outcome(True, None, expected.num_rows)
