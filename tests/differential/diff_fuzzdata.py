"""The fuzz tables: tiny, NULL-heavy tables full of edge values, as hetdb tables and identical DuckDB ones.

Written through hetdb's table writer with small pages (several row groups, zone maps that prune, pages
entirely NULL in some columns), then read back and loaded into DuckDB (``diff_data.load_duckdb``), so
a difference between the engines can only come from query processing.

  fa  (240 rows)  every type: NaN/±inf/-0.0 doubles, BIGINT near ±2^63, DECIMAL(18,4) up to 18
                  digits, dates and timestamps far from 1970, dictionary strings, long plain strings
  fb  (90 rows)   a second join side with its own NULL pattern and duplicate keys
  fc  (14 rows)   a small subquery side: NULL keys and NULL values
  fe  (0 rows)    an empty table with fb's columns

Values are chosen so the generator can stay inside what DuckDB defines: sums of ``i`` and of ``dc``
fit in 18 digits, doubles are multiples of 1/4 (exact sums in any order) or non-finite; ``big`` is only
summed or multiplied where the generator expects the Out-of-Range error from both engines, and
``dw`` (DECIMAL(18,4) with up to 18 digits) only where a sum past 18 digits is expected.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa

FUZZ_ROWS_PER_PAGE = 64
LONG_STRING_PAGES_PLAIN = "sl"  # the column written with plain (not dictionary) pages

_SHORT = ["", " ", "a", "A", "ab", "b", "ba", "abc", "é", "straße", "%", "_", "a_b", "x%y", "'q'", "zz"]
_BIG = [9223372036854775807, -9223372036854775808, 9223372036854775806, -9223372036854775807,
        9 * 10**18, -9 * 10**18, 4611686018427387904, -4611686018427387904, 0, 1, -1, 2**31, -(2**31) - 1]
_SPECIAL_F = [float("inf"), float("-inf"), -0.0, 0.0, 0.25, -0.25]
_DATES = [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1969, 12, 31), dt.date(1970, 1, 1),
          dt.date(2000, 2, 29), dt.date(1900, 3, 1)]
_TIMESTAMPS = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(1970, 1, 1),
               dt.datetime(1900, 1, 1, 0, 0, 0, 1), dt.datetime(2262, 4, 11, 23, 47, 16),
               dt.datetime(2000, 2, 29, 12, 0, 0, 250000)]


def _mask(rng: np.random.Generator, n: int, null_share: float) -> np.ndarray:
    """NULL mask (True = NULL): random NULLs plus whole NULL pages every third page."""
    page = (np.arange(n) // FUZZ_ROWS_PER_PAGE) % 3 == 2
    return (rng.random(n) < null_share) | (page & (rng.random(n) < 0.9))


def _pick(rng: np.random.Generator, values: list, n: int) -> list:
    return [values[i] for i in rng.integers(0, len(values), n)]


def _doubles(rng: np.random.Generator, n: int, nan: bool) -> list[float]:
    out = (rng.integers(-400, 400, n) / 4.0).tolist()
    specials = _SPECIAL_F + ([float("nan")] * 3 if nan else [])
    for i in np.nonzero(rng.random(n) < 0.25)[0]:
        out[i] = specials[int(rng.integers(0, len(specials)))]
    return out


def _long_strings(rng: np.random.Generator, n: int) -> list[str]:
    out = []
    for i in range(n):
        length = int(rng.integers(0, 300))
        stem = "".join(chr(ord("a") + int(c)) for c in rng.integers(0, 4, 6))
        out.append((stem * (length // 6 + 1))[:length] + f"#{i % 37}")
    return out


def fuzz_tables(seed: int = 15) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)

    def col(values, typ: pa.DataType, null_share: float) -> pa.Array:
        return pa.array(values, type=typ, mask=_mask(rng, len(values), null_share))

    def timestamps(n: int) -> list[dt.datetime]:
        base = [dt.datetime(1995, 1, 1) + dt.timedelta(seconds=int(s), microseconds=int(u))
                for s, u in zip(rng.integers(-10**9, 10**9, n), rng.integers(0, 4, n) * 250000)]
        for i in np.nonzero(rng.random(n) < 0.1)[0]:
            base[i] = _TIMESTAMPS[int(rng.integers(0, len(_TIMESTAMPS)))]
        return base

    def dates(n: int) -> list[dt.date]:
        base = [dt.date(1992, 1, 1) + dt.timedelta(days=int(x)) for x in rng.integers(-4000, 4000, n)]
        for i in np.nonzero(rng.random(n) < 0.08)[0]:
            base[i] = _DATES[int(rng.integers(0, len(_DATES)))]
        return base

    def big(n: int) -> list[int]:
        out = rng.integers(-1000, 1000, n).tolist()
        for i in np.nonzero(rng.random(n) < 0.4)[0]:
            out[i] = _BIG[int(rng.integers(0, len(_BIG)))]
        return out

    def decimals(n: int, digits: int) -> list[Decimal]:
        # up to ``digits`` digits in the unscaled value, with every length equally likely
        lengths = rng.integers(0, digits + 1, n)
        return [Decimal(int(rng.integers(-(10**int(d)) + 1, 10**int(d)))).scaleb(-4) for d in lengths]

    n = 240
    fa = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "k": col(rng.integers(-2, 9, n).astype(np.int32), pa.int32(), 0.3),
        "i": col(rng.integers(-10**6, 10**6, n), pa.int64(), 0.3),
        "big": col(big(n), pa.int64(), 0.2),
        "f": col(_doubles(rng, n, nan=False), pa.float64(), 0.3),
        "fn": col(_doubles(rng, n, nan=True), pa.float64(), 0.3),
        "dc": col(decimals(n, 15), pa.decimal128(18, 4), 0.3),
        "dw": col(decimals(n, 18), pa.decimal128(18, 4), 0.3),
        "dn": col([Decimal(int(v)).scaleb(-2) for v in rng.integers(-99999, 100000, n)],
                  pa.decimal128(9, 2), 0.2),
        "d": col(dates(n), pa.date32(), 0.3),
        "ts": col(timestamps(n), pa.timestamp("us"), 0.3),
        "s": col(_pick(rng, _SHORT, n), pa.string(), 0.3),
        "sl": col(_long_strings(rng, n), pa.string(), 0.25),
        "b": col((rng.random(n) < 0.5).tolist(), pa.bool_(), 0.3),
    })
    m = 90
    fb = pa.table({
        "id": pa.array(np.arange(m, dtype=np.int64)),
        "k": col(rng.integers(-2, 12, m).astype(np.int32), pa.int32(), 0.25),
        "v": col(rng.integers(-1000, 1000, m), pa.int64(), 0.3),
        "f": col(_doubles(rng, m, nan=False), pa.float64(), 0.3),
        "dc": col(decimals(m, 15), pa.decimal128(18, 4), 0.3),
        "s": col(_pick(rng, _SHORT, m), pa.string(), 0.3),
        "d": col(dates(m), pa.date32(), 0.3),
    })
    fc = pa.table({
        "k": pa.array([1, 2, None, 2, 3, 5, None, 7, 1, 0, -1, 11, 4, 2], pa.int32()),
        "x": pa.array([10, 20, 30, None, 40, None, 50, 70, 10, 0, -10, None, 40, 20], pa.int64()),
        "s": pa.array(["a", None, "b", "ab", "", "é", "zz", None, "a", "A", "ba", "%", "b", "abc"]),
    })
    fe = fb.slice(0, 0)
    return {"fa": fa, "fb": fb, "fc": fc, "fe": fe}


@contextlib.contextmanager
def _dictionary_limit(values: int):
    """Make the writer give up dictionaries past ``values`` distinct strings (plain pages in tiny tables)."""
    from hetdb.storage import dictionary

    old = dictionary.MAX_DICT_VALUES
    dictionary.MAX_DICT_VALUES = values
    try:
        yield
    finally:
        dictionary.MAX_DICT_VALUES = old


def build_fuzz(path: str, compression: str = "auto") -> None:
    """Write the fuzz tables through hetdb's table writer (small pages; ``sl`` in plain pages; every
    column in plain pages with ``compression="none"``)."""
    from hetdb import types as T
    from hetdb.storage import ColumnSpec, Database

    db = Database.open(path, create=True)
    for name, table in fuzz_tables().items():
        schema = [ColumnSpec(f.name, T.from_arrow(f.type), nullable=f.name != "id")
                  for f in table.schema]
        limit = 20 if LONG_STRING_PAGES_PLAIN in table.column_names else None
        with contextlib.ExitStack() as stack:
            if limit:
                stack.enter_context(_dictionary_limit(limit))
            with db.create_table(name, schema, rows_per_page=FUZZ_ROWS_PER_PAGE, replace=True,
                                 compression=compression) as writer:
                for start in range(0, table.num_rows, 100):  # appends that cut across pages
                    writer.append_arrow(table.slice(start, 100))
