"""Answer checking: does a query result equal the reference (DuckDB) result?

``compare_tables`` is shared by the benchmark harness and the SQL differential tests. Columns are
matched by position (names may differ). Values compare by value across representations:
integers, decimals and strings exactly (a DECIMAL(38,2) equals a DECIMAL(18,2) or an integer of the
same value); a float on either side makes the pair compare as floats within a relative tolerance;
dates and timestamps compare as instants. NULL equals only NULL; NaN equals NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_FLOAT_REL_TOL = 1e-9
# Float SUM/AVG results legitimately differ in the last digits with summation order.
AGGREGATE_FLOAT_REL_TOL = 1e-6

_EXACT, _FLOAT, _STRING, _TEMPORAL, _BOOL, _NULL, _OTHER = (
    "exact", "float", "string", "temporal", "bool", "null", "other")


def compare_tables(actual: pa.Table, expected: pa.Table, ordered: bool,
                   float_rel_tol: float | Sequence[float] = DEFAULT_FLOAT_REL_TOL,
                   float_abs_tol: float = 0.0,
                   order_by: Sequence[tuple[int, bool]] | None = None) -> str | None:
    """Return None when ``actual`` equals ``expected``, else a short description of the first difference.

    ordered: compare row by row; otherwise compare as multisets (both sides sorted by every column,
    exactly-compared columns first, NULLs last).
    float_rel_tol: relative tolerance for float columns, one value or one per column.
    float_abs_tol: absolute tolerance added to the relative one (for values that should be ~0).
    order_by: with ordered=True, the ORDER BY keys as (column position, descending). Rows that tie on
    those keys may then come in any order: the answer must equal ``expected`` as a multiset and be
    sorted by the keys. Without it, ordered means row by row.
    """
    if actual.num_columns != expected.num_columns:
        return (f"column count differs: {actual.num_columns} vs {expected.num_columns} expected "
                f"(actual {actual.column_names}, expected {expected.column_names})")
    if actual.num_rows != expected.num_rows:
        return f"row count differs: {actual.num_rows} vs {expected.num_rows} expected"
    ncols = actual.num_columns
    tols = _per_column(float_rel_tol, ncols)
    names = [_label(i, actual.column_names[i], expected.column_names[i]) for i in range(ncols)]

    pairs: list[tuple[str, pa.Array, pa.Array]] = []
    for i in range(ncols):
        kind, a, e = _normalize_pair(_flat(actual.column(i)), _flat(expected.column(i)))
        if kind is None:
            return (f"column {names[i]}: types are not comparable: {actual.column(i).type} vs "
                    f"{expected.column(i).type} expected")
        pairs.append((kind, a, e))
    if actual.num_rows == 0:
        return None
    if ordered and order_by:
        unsorted = _first_unsorted_row(actual, order_by)
        if unsorted is not None:
            keys = ", ".join(f"{names[c]}{' desc' if d else ''}" for c, d in order_by)
            return f"row {unsorted} is out of order (ORDER BY {keys})"
        ordered = False

    if not ordered:
        # Exact columns first so that float noise cannot reorder rows that differ in an exact key.
        order = [i for i, p in enumerate(pairs) if p[0] != _FLOAT] + \
                [i for i, p in enumerate(pairs) if p[0] == _FLOAT]
        a_idx = _sort_indices([pairs[i][1] for i in order])
        e_idx = _sort_indices([pairs[i][2] for i in order])
        pairs = [(k, a.take(a_idx), e.take(e_idx)) for k, a, e in pairs]

    first: tuple[int, int] | None = None  # (row, column) of the earliest difference
    for i, (kind, a, e) in enumerate(pairs):
        row = _first_difference(kind, a, e, tols[i], float_abs_tol)
        if row is not None and (first is None or row < first[0]):
            first = (row, i)
    if first is None:
        return None
    row, col = first
    where = f"row {row}" + ("" if ordered else " (after sorting both sides)")
    got = _show(pairs[col][1][row])
    want = _show(pairs[col][2][row])
    return f"{where}, column {names[col]}: {got} vs {want} expected"


def _per_column(tol: float | Sequence[float], ncols: int) -> list[float]:
    if isinstance(tol, int | float):
        return [float(tol)] * ncols
    tols = [float(t) for t in tol]
    if len(tols) != ncols:
        raise ValueError(f"float_rel_tol has {len(tols)} values for {ncols} columns")
    return tols


def _label(i: int, a: str, e: str) -> str:
    return f"{i} ({e})" if a == e else f"{i} ({a} / {e})"


def _flat(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.string())
    return arr


def _kind(t: pa.DataType) -> str:
    if pa.types.is_null(t):
        return _NULL
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return _EXACT
    if pa.types.is_floating(t):
        return _FLOAT
    if pa.types.is_string(t):
        return _STRING
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return _TEMPORAL
    if pa.types.is_boolean(t):
        return _BOOL
    return _OTHER


def _normalize_pair(a: pa.Array, e: pa.Array) -> tuple[str | None, pa.Array, pa.Array]:
    """Cast both sides to one comparable type; kind None when they cannot be compared."""
    a, e = _interval_as_text(a), _interval_as_text(e)
    ka, ke = _kind(a.type), _kind(e.type)
    if ka == _NULL and ke == _NULL:
        return _BOOL, a.cast(pa.bool_()), e.cast(pa.bool_())
    if ka == _NULL:  # an all-NULL column of unknown type equals an all-NULL typed column
        ka, a = ke, pa.nulls(len(a), e.type)
    if ke == _NULL:
        ke, e = ka, pa.nulls(len(e), a.type)
    numeric = (_EXACT, _FLOAT)
    if ka in numeric and ke in numeric:
        if _FLOAT in (ka, ke):
            return _FLOAT, _to_float(a), _to_float(e)
        target = _exact_target(a.type, e.type)
        return _EXACT, a.cast(target), e.cast(target)
    if ka != ke or ka == _OTHER:
        if ka == ke and a.type == e.type:
            return _OTHER, a, e
        return None, a, e
    if ka == _TEMPORAL:
        return _TEMPORAL, _to_timestamp(a), _to_timestamp(e)
    return ka, a, e


def _interval_as_text(arr: pa.Array) -> pa.Array:
    """INTERVAL values as 'months days nanoseconds' text: equal exactly when the intervals are equal
    field by field (Arrow cannot sort or compare month_day_nano_interval)."""
    if arr.type != pa.month_day_nano_interval():
        return arr
    return pa.array([None if v is None else f"{v.months} {v.days} {v.nanoseconds}" for v in arr.to_pylist()],
                    pa.string())


def _to_float(arr: pa.Array) -> pa.Array:
    return arr.cast(pa.float64())


def _exact_target(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    if not pa.types.is_decimal(a) and not pa.types.is_decimal(b):
        unsigned64 = pa.types.is_uint64(a) or pa.types.is_uint64(b)
        return pa.decimal128(38, 0) if unsigned64 else pa.int64()
    scale = max(t.scale for t in (a, b) if pa.types.is_decimal(t))
    return pa.decimal128(38, scale)


def _to_timestamp(arr: pa.Array) -> pa.Array:
    """Timestamps as naive UTC microseconds. A nanosecond reference (DuckDB 2.0.1's avg(DATE) is a
    TIMESTAMP_NS) is rounded to the nearest microsecond, hetdb's resolution."""
    if pa.types.is_timestamp(arr.type):
        if arr.type.tz is not None:
            arr = arr.cast(pa.timestamp(arr.type.unit, tz="UTC")).cast(pa.timestamp(arr.type.unit))
        if arr.type.unit == "ns":
            ns = np.asarray(arr.cast(pa.int64()).fill_null(0), dtype=np.int64)
            us = (ns + 500) // 1000  # floor division: half rounds up, negatives too
            return pa.array(us, pa.int64(), mask=np.asarray(arr.is_null())).cast(pa.timestamp("us"))
        return arr.cast(pa.timestamp("us"))
    return arr.cast(pa.timestamp("us"))


def _sort_indices(columns: list[pa.Array]) -> pa.Array:
    names = [f"c{i}" for i in range(len(columns))]
    table = pa.table(dict(zip(names, columns)))
    return pc.sort_indices(table, sort_keys=[(n, "ascending", "at_end") for n in names])


def _first_unsorted_row(table: pa.Table, order_by: Sequence[tuple[int, bool]]) -> int | None:
    """First row that a stable sort by ``order_by`` would move, i.e. that breaks the order; else None."""
    cols = {f"k{i}": _flat(table.column(c)) for i, (c, _) in enumerate(order_by)}
    keys = [(f"k{i}", "descending" if desc else "ascending", "at_end") for i, (_, desc) in enumerate(order_by)]
    idx = np.asarray(pc.sort_indices(pa.table(cols), sort_keys=keys).to_numpy(zero_copy_only=False))
    moved = np.flatnonzero(idx != np.arange(len(idx)))
    return int(moved[0]) if moved.size else None


def _first_difference(kind: str, a: pa.Array, e: pa.Array, rel_tol: float, abs_tol: float) -> int | None:
    """Index of the first row where the two (already aligned) arrays differ, else None."""
    a_null = np.asarray(a.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    e_null = np.asarray(e.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    bad = a_null != e_null
    both = ~a_null & ~e_null
    if kind == _FLOAT:
        av = np.asarray(a.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        ev = np.asarray(e.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(av - ev) <= rel_tol * np.maximum(np.abs(av), np.abs(ev)) + abs_tol
        # inf - (-inf) is within an infinite tolerance, so infinities must match exactly.
        close &= np.isfinite(av) & np.isfinite(ev)
        same_special = (np.isnan(av) & np.isnan(ev)) | (np.isinf(av) & (av == ev))
        bad |= both & ~(close | same_special)
    else:
        eq = pc.equal(a, e).fill_null(True)
        bad |= both & ~np.asarray(eq.to_numpy(zero_copy_only=False), dtype=bool)
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def _show(scalar: pa.Scalar) -> str:
    value = scalar.as_py()
    return "NULL" if value is None else repr(value)
